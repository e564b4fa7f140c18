/* dfgnn C ABI: what the Python package (python/dfgnn/_lib.py) loads with ctypes.
 *
 * Every function returns 0 on success; on failure, 1 for a user error (a malformed graph, a
 * plan of another model, ...: dfgnn::Error, raised in Python as ValueError) or 2 for anything
 * else (CUDA errors, allocation failures: RuntimeError), and dfgnn_last_error() then holds the
 * message (thread-local, valid until the next failing call of that thread). No C++ exception
 * crosses this boundary.
 *
 * Tensors are raw pointers to contiguous row-major float32 memory whose shapes come from the
 * plan: node features [N,H,D], node scalars and logsumexp [N,H], GATv2's a [H,D], AGNN's beta
 * [beta_count] (1 or H); optional edge values [E, edge_heads] (edge_heads 1 or H; null: none)
 * in the order the graph's edges were given. A plan made by dfgnn_plan_create runs the Kokkos
 * kernels on the host (stream is ignored); one made by dfgnn_plan_create_cuda runs the
 * CUDA-native kernels on `stream` (a cudaStream_t; 0 is the legacy default stream) on the
 * plan's device, asynchronously. Forward calls write out and logsumexp (null: inference);
 * backward calls take the forward's out and logsumexp and overwrite the gradients. Dropout
 * (rate > 0) uses the same (rate, seed) in the forward and its backward.
 */
#ifndef DFGNN_CAPI_H
#define DFGNN_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFGNN_CAPI __attribute__((visibility("default")))

typedef struct dfgnn_graph dfgnn_graph;
typedef struct dfgnn_plan dfgnn_plan;

/* Score kinds, as dfgnn::ScoreKind. */
enum { DFGNN_GT = 0, DFGNN_AGNN = 1, DFGNN_GAT = 2, DFGNN_GATV2 = 3 };

DFGNN_CAPI const char* dfgnn_last_error(void);
/* 1 when built with the CUDA-native kernels (DFGNN_ENABLE_CUDA), else 0. */
DFGNN_CAPI int dfgnn_has_cuda(void);

/* Edges src[i] -> dst[i], i < num_edges (PyG's edge_index rows 0 and 1). */
DFGNN_CAPI int dfgnn_graph_from_coo(int64_t num_nodes, int64_t num_edges, const int64_t* src,
                                    const int64_t* dst, dfgnn_graph** graph);
/* Destination-major CSR: the in-edges of node v come from col[row_ptr[v] .. row_ptr[v+1]). */
DFGNN_CAPI int dfgnn_graph_from_csr(int64_t num_nodes, const int64_t* row_ptr, const int64_t* col,
                                    dfgnn_graph** graph);
DFGNN_CAPI void dfgnn_graph_free(dfgnn_graph* graph);
DFGNN_CAPI int dfgnn_graph_info(const dfgnn_graph* graph, int64_t* num_nodes, int64_t* num_edges,
                                int64_t* max_in_degree);
/* Copies the CSR the kernels read: row_ptr [N+1], src and dst [E] (source and destination per
 * CSR edge), edge_id [E] (CSR position -> index of the edge as given). */
DFGNN_CAPI int dfgnn_graph_csr(const dfgnn_graph* graph, int64_t* row_ptr, int32_t* src,
                               int32_t* dst, int64_t* edge_id);
/* The graph with its nodes renumbered for locality (include/dfgnn/reorder.hpp) by `ordering`:
 * "none", "rcm" (reverse Cuthill-McKee) or "degree". Writes order [N] (order[i]: the node that
 * becomes node i); the renumbered graph keeps the edges in the order they were given. */
DFGNN_CAPI int dfgnn_graph_reorder(const dfgnn_graph* graph, const char* ordering, int64_t* order,
                                   dfgnn_graph** renumbered);

/* A host plan (Kokkos, DefaultHostExecutionSpace). */
DFGNN_CAPI int dfgnn_plan_create(const dfgnn_graph* graph, int kind, int heads, int dim,
                                 dfgnn_plan** plan);
/* A CUDA-native plan on `device` over the caller's device copy of dfgnn_graph_csr's arrays,
 * which must outlive the plan. Fails unless built with DFGNN_ENABLE_CUDA. */
DFGNN_CAPI int dfgnn_plan_create_cuda(const dfgnn_graph* graph, int device, const int64_t* row_ptr,
                                      const int32_t* src, const int32_t* dst, const int64_t* edge_id,
                                      int kind, int heads, int dim, dfgnn_plan** plan);
DFGNN_CAPI void dfgnn_plan_free(dfgnn_plan* plan);
/* The strategy the plan's forward runs ("smmf", "online", ...); NULL for a null plan (then
 * dfgnn_last_error() says so). */
DFGNN_CAPI const char* dfgnn_plan_strategy(const dfgnn_plan* plan);

/* Graph Transformer: score = scale <Q_v, K_u>. */
DFGNN_CAPI int dfgnn_gt_forward(const dfgnn_plan* plan, intptr_t stream, float scale, const float* Q,
                                const float* K, const float* V, const float* edge_values,
                                int edge_heads, float dropout, uint64_t seed, float* out,
                                float* logsumexp);
DFGNN_CAPI int dfgnn_gt_backward(const dfgnn_plan* plan, intptr_t stream, float scale, const float* Q,
                                 const float* K, const float* V, const float* edge_values,
                                 int edge_heads, float dropout, uint64_t seed, const float* out,
                                 const float* logsumexp, const float* dOut, float* dQ, float* dK,
                                 float* dV);
/* AGNN: score = beta_h cos(X_v, X_u); values X. */
DFGNN_CAPI int dfgnn_agnn_forward(const dfgnn_plan* plan, intptr_t stream, const float* X,
                                  const float* beta, int beta_count, const float* edge_values,
                                  int edge_heads, float dropout, uint64_t seed, float* out,
                                  float* logsumexp);
DFGNN_CAPI int dfgnn_agnn_backward(const dfgnn_plan* plan, intptr_t stream, const float* X,
                                   const float* beta, int beta_count, const float* edge_values,
                                   int edge_heads, float dropout, uint64_t seed, const float* out,
                                   const float* logsumexp, const float* dOut, float* dX,
                                   float* dbeta);
/* GAT: score = LeakyReLU(el_u + er_v, slope). */
DFGNN_CAPI int dfgnn_gat_forward(const dfgnn_plan* plan, intptr_t stream, float slope, const float* el,
                                 const float* er, const float* V, const float* edge_values,
                                 int edge_heads, float dropout, uint64_t seed, float* out,
                                 float* logsumexp);
DFGNN_CAPI int dfgnn_gat_backward(const dfgnn_plan* plan, intptr_t stream, float slope, const float* el,
                                  const float* er, const float* V, const float* edge_values,
                                  int edge_heads, float dropout, uint64_t seed, const float* out,
                                  const float* logsumexp, const float* dOut, float* del, float* der,
                                  float* dV);
/* GATv2: score = sum_d a_hd LeakyReLU(XL_u,d + XR_v,d, slope); values XL. */
DFGNN_CAPI int dfgnn_gatv2_forward(const dfgnn_plan* plan, intptr_t stream, float slope,
                                   const float* XL, const float* XR, const float* a,
                                   const float* edge_values, int edge_heads, float dropout,
                                   uint64_t seed, float* out, float* logsumexp);
DFGNN_CAPI int dfgnn_gatv2_backward(const dfgnn_plan* plan, intptr_t stream, float slope,
                                    const float* XL, const float* XR, const float* a,
                                    const float* edge_values, int edge_heads, float dropout,
                                    uint64_t seed, const float* out, const float* logsumexp,
                                    const float* dOut, float* dXL, float* dXR, float* da);

#ifdef __cplusplus
}
#endif

#endif /* DFGNN_CAPI_H */
