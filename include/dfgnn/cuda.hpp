#pragma once
/// \file cuda.hpp
/// CUDA-native fused attention forward and backward: a plain C++ entry on device pointers and a stream, so
/// applications and the PyTorch binding can use the tuned kernels without a CUDA-enabled Kokkos.
/// Available when dfgnn is built with DFGNN_ENABLE_CUDA (target dfgnn::dfgnn_cuda).
///
/// Layouts as everywhere in dfgnn: node features [N,H,D], node scalars [N,H], a [H,D], all
/// row-major; edge values [E, 1 or H] in the caller's edge order. On a bipartite graph
/// (HostGraph) the source-side tensors (K, V; el, V; XL) and their gradients have NS rows.
/// Tensors are of the plan's element type (float32 by default; bf16 or f16 of half.hpp, for
/// the Online strategy's forward so far), the logsumexp float32 always. The typed entries take
/// float32; the generic ones (attention(stream, plan, GT{}, {Q, K, V}, out)) any element type.

#include <dfgnn/csr.hpp>
#include <dfgnn/detail/factory.hpp>
#include <dfgnn/dropout.hpp>
#include <dfgnn/half.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>

typedef struct CUstream_st* cudaStream_t;

namespace dfgnn::cuda {

/// The destination-major CSR on the device (see HostGraph for the meaning of each array; the
/// source count of a bipartite graph is the host graph's).
struct DeviceGraph {
  node_t num_nodes = 0;  ///< N: destinations (rows)
  edge_t num_edges = 0;
  const edge_t* row_ptr = nullptr;  ///< [N+1]
  const node_t* src = nullptr;      ///< [E]
  const node_t* dst = nullptr;      ///< [E]; an Online, Staged or Dense plan's own copy fills it for weights
  const edge_t* edge_id = nullptr;  ///< [E]; a plan's own copy holds none where it is the identity
};

/// A graph built on the device from the caller's device edge arrays (docs/cuda.md,
/// "Preprocessing on the device"): what graph_from_edges builds on the host, the
/// destination-major CSR (a stable sort by destination, so rows keep the caller's order; none
/// when the edges come sorted), checked and with its degree statistics, and a batch's offsets.
/// The host sees sizes, statistics and the first fault only. Plans made from it use its arrays,
/// so it must outlive them.
class Graph {
 public:
  /// Edges src[i] -> dst[i] (device int64 arrays of num_edges entries, PyTorch's index type):
  /// sources in [0, num_src_nodes), destinations in [0, num_nodes). `batch`, when not null, is a
  /// batch of square graphs' node offsets on the device [num_graphs + 1] (PyG's Batch.ptr): from 0
  /// to num_nodes, non-decreasing, no edge between two graphs; Staged and Dense then read it
  /// instead of searching the graph's independent blocks. Works on `stream` and waits for it to
  /// read the checks. Throws Error naming the first edge id or offset out of range, or the first
  /// edge between two graphs.
  Graph(cudaStream_t stream, node_t num_src_nodes, node_t num_nodes, edge_t num_edges, const std::int64_t* src,
        const std::int64_t* dst, const std::int64_t* batch = nullptr, std::int64_t num_graphs = 0);
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  /// The CSR: no destinations (plans fill them where a pass reads them), no edge ids when the
  /// edges came sorted by destination.
  const DeviceGraph& device() const;
  node_t num_src_nodes() const;
  node_t num_nodes() const;
  edge_t num_edges() const;
  const DegreeStats& stats() const;
  const node_t* batch() const;  ///< device node offsets [num_graphs + 1], or null
  int num_graphs() const;
  std::size_t device_bytes() const;
  /// The same graph on the host, as graph_from_edges (and batch offsets) would have built it.
  HostGraph host(cudaStream_t stream = nullptr) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Optional per-edge score multipliers on the device: [E, heads], heads in {1, H}.
struct DeviceEdgeValues {
  const void* data = nullptr;  ///< of the plan's element type
  int heads = 0;
};

/// The backward's order (op.hpp).
using BackwardOrder = dfgnn::BackwardOrder;

/// Optional inputs and outputs of an attention call (a plain DeviceEdgeValues converts).
struct Options {
  Options(DeviceEdgeValues w = {}) : edge_values(w) {}  // NOLINT: plain edge values convert
  DeviceEdgeValues edge_values;
  /// Training mode: receives logsumexp_u(score) of every row and head [N,H], the statistic the
  /// backward needs (0 for a row without in-edges); null: inference.
  float* logsumexp = nullptr;
  /// Attention dropout: each probability times dropout.factor(edge index as given, head);
  /// rate 0: none. The logsumexp is of the scores, before dropout.
  Dropout dropout;
  /// The backward's order (attention_backward only).
  BackwardOrder backward_order = BackwardOrder::Auto;
  /// Forward: when set, receives the attention weights [E,H] in the caller's edge order (each
  /// edge's probability times its dropout factor, Call::weights); needs logsumexp. The first
  /// such call through an Online, Staged or Dense plan that owns its graph copy allocates and
  /// fills the destination of each edge (4 bytes per edge), which their other passes do not read.
  void* attention_weights = nullptr;  ///< of the plan's element type
  /// The model's edge argument in the caller's edge order (GT and GATv2 E [E,H,D], GAT ee
  /// [E,H]; types.hpp), null: none. The Online strategy takes it (Auto's pick, and Dense's
  /// fallback); an explicit other strategy throws Error.
  const void* edge_features = nullptr;  ///< of the plan's element type
  /// GT's edge features as edge columns (types.hpp): [E, heads, width], heads 1 or H, width <= D,
  /// on each head's last `width` columns; {0, 0}: [E,H,D].
  EdgeShape edge_shape;
  /// Backward: receives the edge argument's gradient (dE, dee), of edge_features' shape; needed
  /// with edge_features.
  void* edge_grad = nullptr;
};

/// Where graphs and plans get their device memory: cudaMalloc and cudaFree (which waits for
/// the whole device) unless the application installs its own, as the Python package installs
/// PyTorch's caching allocator (allocations then follow its stream rules: memory freed is
/// reused in the order of the stream current at allocation). Set it before building graphs or
/// plans; each allocation is freed by the allocator that made it.
struct DeviceAllocator {
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*deallocate)(void* p) = nullptr;
};
void set_device_allocator(const DeviceAllocator& allocator);  ///< {} restores cudaMalloc

/// True when a CUDA device is visible to this process.
bool device_available();

/// Per-graph, per-shape preprocessing (strategy, block partition, split rows, workspace).
/// Staged and Dense are CUDA-native only (Online has a portable counterpart too). Both need a batch
/// of square graphs (HostGraph::graph_ptr, a cuda::Graph's batch, or the graph's independent blocks) with no edges
/// between them, so neither runs a bipartite graph; Staged needs each graph's rows to fit in shared memory, Dense the GT, AGNN (D <= 256) or
/// GAT score, D % 32 == 0 and graphs of at most 192 nodes (docs/cuda.md). An explicit strategy the
/// graph cannot run throws Error naming the reason; Auto only picks what can run (and where it
/// picked Dense, runs calls with edge values or dropout through Online, the faster kernel for
/// them). Dense runs an AGNN call with an X_dst of its own through Online as well (its cosine
/// divides by the staged rows' norms).
/// D up to 256, or up to 512 when a multiple of 4 (a call with D > 256 needs 16-byte aligned
/// tensors, and throws Error otherwise).
/// `dtype`: the element type of its calls' tensors (op.hpp). bf16 and f16 run the Online
/// strategy's forward (Auto picks it for them; an explicit other strategy throws Error) and the
/// backward's walks, with float32 sums and workspaces.
/// Build once, reuse for every call with the same graph, score kind, H and D: a call through
/// a plan does no host work beyond the kernel launches. It is the CUDA-native executor of the
/// dispatch (dispatch.hpp): the typed entries below, the Kokkos API on Kokkos::Cuda and the C
/// ABI hand it their checked calls.
class Plan final : public dfgnn::detail::Executor {
 public:
  /// Uploads `g` to the current device and owns that copy: only the arrays its passes read
  /// (docs/cuda.md, "Device memory").
  Plan(const HostGraph& g, ScoreKind kind, int heads, int dim, Strategy strategy = Strategy::Auto,
       DType dtype = DType::F32);
  /// Uses the caller's device copy of `g` (it must outlive the plan); `g` gives the degrees.
  Plan(const HostGraph& g, const DeviceGraph& device_graph, ScoreKind kind, int heads, int dim,
       Strategy strategy = Strategy::Auto, DType dtype = DType::F32);
  /// Over a graph built on the device (it must outlive the plan), preprocessed on `stream` with
  /// no host copy of the graph (an explicit SMMF copies the row offsets back to pack its blocks).
  Plan(const Graph& g, ScoreKind kind, int heads, int dim, Strategy strategy = Strategy::Auto,
       cudaStream_t stream = nullptr, DType dtype = DType::F32);
  ~Plan() override;
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  const Op& op() const override;
  Strategy strategy() const override;  ///< the resolved strategy (never Auto)
  Backend backend() const override { return Backend::Native; }
  /// Run a call the dispatch checked (Call::stream: the cudaStream_t).
  void forward(const Call& call) const override;
  void backward(const Call& call) const override;
  /// The backward's data (the transposed graph, its pieces, the workspaces), built on `stream`
  /// (a cudaStream_t) and waited for, unless a backward or an earlier call built it.
  void prepare_backward(void* stream) const override;
  /// Bytes of device memory the plan holds: its graph copy (unless the caller's), partitions,
  /// the CSC, the workspaces (the backward's once a backward ran).
  std::size_t device_bytes() const;
  ScoreKind kind() const;
  int heads() const;
  int dim() const;
  const DeviceGraph& graph() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }
  /// What a plan is built from (its graph's arrays and statistics), and the plan under
  /// construction (detail/factory.hpp's Builder): backends/cuda's own.
  struct Source;
  class Builder;

 private:
  friend class Builder;
  explicit Plan(std::unique_ptr<Impl> impl);
  // The plan of `strategy` on `g`: the strategy module's decision on the Builder's facts.
  void build(const Source& g, const Op& op, Strategy strategy, cudaStream_t stream);

  std::unique_ptr<Impl> impl_;
};

/// Throws Error unless the caller's tensors (H heads of width D) match what the plan was
/// built for; the attention calls take H and D from the plan, so bindings that know the
/// tensor shapes call this first.
void check_shape(const Plan& plan, int heads, int dim);

namespace detail {
/// The CUDA-native backend's builder of a plan over a graph built on the device
/// (detail/factory.hpp's Builder), which must outlive the plan; built on `stream`.
std::unique_ptr<dfgnn::detail::Builder> builder(const Graph& g, const Op& op, cudaStream_t stream);

/// The generic entries' calls: `kind`'s model with scale or slope `param` on its inputs in
/// order (`count`: entries of a HeadVector input), all of element type `dtype`.
void attention(cudaStream_t stream, const Plan& plan, ScoreKind kind, float param, DType dtype,
               const void* const* inputs, std::size_t count, void* out, const Options& options);
void attention_backward(cudaStream_t stream, const Plan& plan, ScoreKind kind, float param, DType dtype,
                        const void* const* inputs, std::size_t count, const void* out, const float* logsumexp,
                        const void* dOut, void* const* grads, const Options& options);

/// A list's pointers as void pointers (at most 4: a model's inputs and its edge argument).
template <class P, class Q>
std::array<P, 4> untyped(std::initializer_list<Q> list) {
  std::array<P, 4> a{};
  std::copy_n(list.begin(), std::min<std::size_t>(list.size(), 4), a.begin());
  return a;
}
}  // namespace detail

/// Any model (a traits type of types.hpp) on its inputs in order, e.g. attention(stream, plan,
/// GT{}, {Q, K, V}, out); a HeadVector input (AGNN's beta) has `count` entries. Tensors of
/// element type E: float, bf16 or f16, the plan's (Error otherwise). What the typed entries
/// below call, and all a new model needs.
template <class Model, class E>
void attention(cudaStream_t stream, const Plan& plan, const Model& model, std::initializer_list<const E*> inputs,
               E* out, const Options& options = {}, std::size_t count = 0) {
  const auto in = detail::untyped<const void*>(inputs);
  detail::attention(stream, plan, Model::kind, model.param(), dfgnn::dtype_of<E>(), in.data(), count, out, options);
}

/// The backward of any model: its inputs and gradients in order (see attention_backward below).
template <class Model, class E>
void attention_backward(cudaStream_t stream, const Plan& plan, const Model& model,
                        std::initializer_list<const E*> inputs, const E* out, const float* logsumexp, const E* dOut,
                        std::initializer_list<E*> grads, const Options& options = {}, std::size_t count = 0) {
  const auto in = detail::untyped<const void*>(inputs);
  const auto gr = detail::untyped<void*>(grads);
  detail::attention_backward(stream, plan, Model::kind, model.param(), dfgnn::dtype_of<E>(), in.data(), count, out,
                             logsumexp, dOut, gr.data(), options);
}

/// Launches the forward on `stream`: out[v,h,:] = sum over u -> v of softmax_u(score) V[u,h,:].
/// No host synchronisation, allocation or preprocessing. Throws Error (dispatch.hpp's one
/// check) for a plan of another score kind, a null tensor that is not empty, edge values with
/// a head count other than 1 or H, a dropout rate outside [0, 1), or out or logsumexp
/// overlapping an input or each other; std::runtime_error for CUDA errors.
/// Results are bitwise reproducible: no atomics, every reduction in a fixed order.
void attention(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q,
               const float* K, const float* V, float* out, const Options& options = {});
/// beta has `beta_count` entries on the device, 1 (shared) or H.
void attention(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X,
               const float* beta, int beta_count, float* out, const Options& options = {});
/// With the destinations' own X_dst [N,H,D] (a bipartite graph's, or other features of a square
/// graph's rows): score beta[h] * cos(X_dst[v,h], X[u,h]), values X [NS,H,D].
void attention(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X,
               const float* beta, int beta_count, const float* X_dst, float* out, const Options& options = {});
void attention(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el,
               const float* er, const float* V, float* out, const Options& options = {});
void attention(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL,
               const float* XR, const float* a, float* out, const Options& options = {});

/// Training backward (docs/backward.md): the gradients of every input of the forward from
/// dOut = dLoss/dout, recomputing probabilities from the forward's `logsumexp` [N,H] (the
/// training-mode statistic of Options::logsumexp). Pass the plan, model, inputs and Options of
/// the forward (edge values and dropout are used again; options.logsumexp is ignored) and the
/// forward's `out`. Gradients are overwritten. The first call through a plan uploads the
/// transposed graph and allocates an O(E*H) workspace that later calls reuse, so calls through
/// one plan must not overlap on different streams. No atomics: bitwise reproducible. Throws
/// Error like attention() (null, overlapping or mismatched arguments).
void attention_backward(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q,
                        const float* K, const float* V, const float* out, const float* logsumexp,
                        const float* dOut, float* dQ, float* dK, float* dV, const Options& options = {});
/// dbeta has beta_count entries (a shared beta gets the sum over heads).
void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X,
                        const float* beta, int beta_count, const float* out, const float* logsumexp,
                        const float* dOut, float* dX, float* dbeta, const Options& options = {});
/// With X_dst: dX [NS,H,D] gets the values' and the source-side cosine terms, dX_dst [N,H,D] the
/// destination-side ones.
void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X,
                        const float* beta, int beta_count, const float* X_dst, const float* out,
                        const float* logsumexp, const float* dOut, float* dX, float* dbeta, float* dX_dst,
                        const Options& options = {});
void attention_backward(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el,
                        const float* er, const float* V, const float* out, const float* logsumexp,
                        const float* dOut, float* del, float* der, float* dV, const Options& options = {});
/// da is [H,D].
void attention_backward(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL,
                        const float* XR, const float* a, const float* out, const float* logsumexp,
                        const float* dOut, float* dXL, float* dXR, float* da, const Options& options = {});

}  // namespace dfgnn::cuda
