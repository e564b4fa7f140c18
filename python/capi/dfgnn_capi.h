/** \file dfgnn_capi.h
 * The dfgnn C ABI: what the Python package (python/dfgnn/_lib.py) loads with ctypes.
 *
 * Every function returns 0 on success; on failure, 1 for a user error (a malformed graph, a
 * plan of another model, ...: dfgnn::Error, raised in Python as ValueError) or 2 for anything
 * else (CUDA errors, allocation failures: RuntimeError), and dfgnn_last_error() then holds the
 * message (thread-local, valid until the next failing call of that thread). No C++ exception
 * crosses this boundary. A null pointer argument is a user error (1), except where null is
 * documented to mean something (no batch, no dropout ids, the default allocator) and for an
 * array of no entries; the *_free functions take null as free() does.
 *
 * Tensors are raw pointers to contiguous row-major memory of the plan's element type (float32,
 * or for a CUDA plan bf16 or f16: DFGNN_F32, ...; the logsumexp is float32 always) whose shapes
 * come from the plan: node features [N,H,D], node scalars and logsumexp [N,H], GATv2's a [H,D], AGNN's beta
 * [beta_count] (1 or H); optional edge values [E, edge_heads] (edge_heads 1 or H; null: none)
 * in the order the graph's edges were given. A host plan (dfgnn_where) runs the Kokkos kernels
 * on the host (stream is ignored); a CUDA plan runs the CUDA-native kernels on `stream` (a
 * cudaStream_t; 0 is the legacy default stream) on the plan's device, asynchronously. Forward calls write out and logsumexp (null: inference);
 * backward calls take the forward's out and logsumexp and overwrite the gradients. Dropout
 * (rate > 0) uses the same (rate, seed) in the forward and its backward. A CUDA plan's calls
 * neither synchronise nor allocate once its first forward and backward (or
 * dfgnn_plan_prepare_backward) ran, so they can be captured in a CUDA graph; a call that would
 * build something while its stream captures fails (2) instead.
 */
#ifndef DFGNN_CAPI_H
#define DFGNN_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFGNN_CAPI __attribute__((visibility("default")))

typedef struct dfgnn_graph dfgnn_graph;
typedef struct dfgnn_plan dfgnn_plan;

/** Score kinds (the models), as dfgnn::ScoreKind. */
enum { DFGNN_GT = 0, DFGNN_AGNN = 1, DFGNN_GAT = 2, DFGNN_GATV2 = 3 };
/** The name of the model of code `kind` ("gt", "agnn", ...: the CLI's and Python's), NULL past
 * the last model: the codes are 0, 1, ... in dfgnn::ScoreKind's order. */
DFGNN_CAPI const char* dfgnn_model_name(int kind);
/** Element types of a plan's tensors, as dfgnn::DType. */
enum { DFGNN_F32 = 0, DFGNN_BF16 = 1, DFGNN_F16 = 2 };

/** The message of this thread's last failing call (valid until its next failing call). */
DFGNN_CAPI const char* dfgnn_last_error(void);
/** The device memory of graphs and plans built on CUDA devices from now on: `allocate` (bytes on
 * the current device) and `deallocate`, e.g. PyTorch's caching allocator; both NULL: cudaMalloc
 * and cudaFree. A no-op without CUDA. */
DFGNN_CAPI int dfgnn_set_device_allocator(void* (*allocate)(size_t bytes), void (*deallocate)(void* p));
/** 1 when built with the CUDA-native kernels (DFGNN_ENABLE_CUDA), else 0. */
DFGNN_CAPI int dfgnn_has_cuda(void);
/** The host threads the Kokkos host kernels start with (an OpenMP or Threads build; 0: Kokkos'
 * default, its environment's): takes effect where Kokkos is not yet initialised, i.e. before the
 * first graph of a process that did not initialise Kokkos itself. The host preprocessing passes
 * (dfgnn::set_preprocessing_threads) take it at once (0: their default). */
DFGNN_CAPI int dfgnn_set_host_threads(int threads);
/** The threads the Kokkos host kernels run on (initialising Kokkos if nothing did), and the name
 * of their execution space ("Serial", "OpenMP", ...). */
DFGNN_CAPI int dfgnn_host_concurrency(void);
DFGNN_CAPI const char* dfgnn_host_space(void);

/* Graphs have num_src_nodes sources and num_dst_nodes destinations (rows); equal counts make a
 * square graph, different ones a bipartite graph (include/dfgnn/csr.hpp, HostGraph). */
/** A graph of edges src[i] -> dst[i], i < num_edges (PyG's edge_index rows 0 and 1), on the
 * host (device -1) or on CUDA device `device`, where the graph is built and stays
 * (include/dfgnn/cuda.hpp, cuda::Graph; its work runs on `stream`). `batch`, when not NULL,
 * holds a batch of square graphs' node offsets [num_graphs + 1] (PyG's Batch.ptr) where the
 * edges are. */
DFGNN_CAPI int dfgnn_graph_from_coo(int device, intptr_t stream, int64_t num_src_nodes, int64_t num_dst_nodes,
                                    int64_t num_edges, const int64_t* src, const int64_t* dst,
                                    const int64_t* batch, int64_t num_graphs, dfgnn_graph** graph);
/** Destination-major CSR: the in-edges of node v come from col[row_ptr[v] .. row_ptr[v+1]). */
DFGNN_CAPI int dfgnn_graph_from_csr(int64_t num_src_nodes, int64_t num_dst_nodes, const int64_t* row_ptr,
                                    const int64_t* col, dfgnn_graph** graph);
DFGNN_CAPI void dfgnn_graph_free(dfgnn_graph* graph);
DFGNN_CAPI int dfgnn_graph_info(const dfgnn_graph* graph, int64_t* num_src_nodes, int64_t* num_dst_nodes,
                                int64_t* num_edges, int64_t* max_in_degree);
/** Copies the CSR the kernels read: row_ptr [num_dst_nodes+1], src and dst [E] (source and destination per
 * CSR edge), edge_id [E] (CSR position -> index of the edge as given). */
DFGNN_CAPI int dfgnn_graph_csr(const dfgnn_graph* graph, int64_t* row_ptr, int32_t* src,
                               int32_t* dst, int64_t* edge_id);
/** The graph with its nodes renumbered for locality (include/dfgnn/reorder.hpp) by `ordering`:
 * "none", "rcm" (reverse Cuthill-McKee) or "degree". Writes order [N] (order[i]: the node that
 * becomes node i); the renumbered graph keeps the edges in the order they were given. Square
 * graphs only. */
DFGNN_CAPI int dfgnn_graph_reorder(const dfgnn_graph* graph, const char* ordering, int64_t* order,
                                   dfgnn_graph** renumbered);
/** The nodes of a square graph split over `ranks` (include/dfgnn/partition.hpp,
 * partition_by_edges): writes owner [N], each node's rank, contiguous ranges of about
 * (E + N) / ranks in-edges plus nodes. */
DFGNN_CAPI int dfgnn_graph_partition(const dfgnn_graph* graph, int ranks, int32_t* owner);

/** Where a plan's tensors live and its calls run: the host (device < 0: the Kokkos host
 * kernels; stream is ignored) or CUDA device `device` (the CUDA-native kernels, on `stream`, a
 * cudaStream_t; 0 is the legacy default stream). On a CUDA device the plan reads the graph's own
 * arrays when the graph was built on that device (the plan is then built on `stream` and waited
 * for), else the caller's device copy of dfgnn_graph_csr's arrays (row_ptr, src, dst, edge_id),
 * which must outlive the plan; they are ignored otherwise and may be NULL. */
typedef struct dfgnn_where {
  int device;
  intptr_t stream;
  const int64_t* row_ptr;
  const int32_t* src;
  const int32_t* dst;
  const int64_t* edge_id;
} dfgnn_where;

/** A plan of model `kind` for tensors of H x D features of element type `dtype` (DFGNN_F32,
 * DFGNN_BF16, DFGNN_F16; the two-byte ones run Online, or on a CUDA device Online or Dense, and
 * the backward) where `where` says. CUDA devices need a build with DFGNN_ENABLE_CUDA. */
DFGNN_CAPI int dfgnn_plan_create(const dfgnn_graph* graph, const dfgnn_where* where, int kind, int heads, int dim,
                                 int dtype, dfgnn_plan** plan);
/** Builds now, on `stream`, what the plan's first backward call would build (a CUDA plan: the
 * transposed graph and the backward's workspaces; a host plan: nothing), so that a training
 * step can be prepared ahead of it. */
DFGNN_CAPI int dfgnn_plan_prepare_backward(const dfgnn_plan* plan, intptr_t stream);
/** Gives the plan's calls each edge's id in the dropout mask: ids [E] (in the caller's edge
 * order) where the plan runs (host memory for a host plan, its device's for a CUDA plan), which
 * must outlive the calls; NULL: each edge's index itself. A rank's share of a graph gives its
 * edges their ids in the whole graph, so that the ranks draw one process's mask. */
DFGNN_CAPI int dfgnn_plan_set_dropout_ids(dfgnn_plan* plan, const int64_t* ids);
DFGNN_CAPI void dfgnn_plan_free(dfgnn_plan* plan);
/** The strategy the plan's forward runs ("smmf", "online", ...); NULL for a null plan (then
 * dfgnn_last_error() says so). */
DFGNN_CAPI const char* dfgnn_plan_strategy(const dfgnn_plan* plan);

/** One forward or backward call of the plan's model (the kind it was made for):
 *   GT     inputs Q, K, V [N,H,D]          param: scale (0: 1/sqrt(D))   score scale <Q_v, K_u>
 *   AGNN   inputs X [N,H,D], beta [count], X_dst [N,H,D]                 score beta_h cos(X_dst_v, X_u)
 *   GAT    inputs el, er [N,H], V [N,H,D]  param: negative slope         score LeakyReLU(el_u + er_v)
 *   GATv2  inputs XL, XR [N,H,D], a [H,D]  param: negative slope  score sum_d a_hd LeakyReLU(XL_u,d + XR_v,d)
 * with values V (GT, GAT), X (AGNN) or XL (GATv2); inputs past the model's count are ignored. On a
 * bipartite graph the source-side inputs (K, V; X; el, V; XL) have NS rows. AGNN's X_dst is
 * optional: null, X stands in for it (a square graph only; a bipartite one needs it), and dX
 * (grads[0]) gets both ends' gradient terms, grads[2] null; given, grads[2] gets dX_dst. */
typedef struct dfgnn_call {
  float param;
  const void* inputs[3];
  int64_t count;             /**< entries of a per-head input (AGNN's beta): 1 or H */
  const void* edge_values;  /**< [E, edge_heads], edge_heads 1 or H; null: none */
  int edge_heads;
  float dropout;             /**< rate in [0, 1); the forward's and its backward's (rate, seed) agree */
  uint64_t seed;
  void* out;                 /**< forward: written; backward: the forward's */
  float* logsumexp;          /**< forward: written, or null (inference); backward: the forward's */
  const void* dout;          /**< backward: dLoss/dout */
  void* grads[3];            /**< backward: written, the gradient of each input given */
  void* attention_weights;   /**< forward: written when set, [E, H] in the caller's edge order (probability
                                times dropout factor); needs logsumexp */
  const void* edge_features; /**< the model's edge argument in the caller's edge order (GT, GATv2: E [E, H, D];
                                 GAT: ee [E, H]); null: none */
  void* edge_grad;           /**< backward: written, its gradient, of edge_features' shape (needed with them) */
  int edge_features_heads;   /**< GT's edge columns: edge_features [E, heads, width] with heads 1 (one row for
                                  every head) or H; 0 (and width 0): [E, H, D] */
  int edge_features_width;   /**< GT's edge columns: width <= D, on each head's last `width`
                                  columns; 0: [E, H, D] */
  const uint64_t* seed_at;   /**< the dropout seed in memory where the plan runs, read by the kernels in place
                                  of seed; null: seed. A captured CUDA graph reads it at each replay */
} dfgnn_call;

DFGNN_CAPI int dfgnn_forward(const dfgnn_plan* plan, intptr_t stream, const dfgnn_call* call);
DFGNN_CAPI int dfgnn_backward(const dfgnn_plan* plan, intptr_t stream, const dfgnn_call* call);

#ifdef __cplusplus
}
#endif

#endif /* DFGNN_CAPI_H */
