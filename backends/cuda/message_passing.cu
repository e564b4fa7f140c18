// CUDA-native message passing (include/dfgnn/cuda_message_passing.hpp): the plan (pieces of
// heavy CSR rows and CSC columns, degree factors, workspace), the entries' checks, launches.

#include "device_memory.cuh"
#include "message_passing.cuh"

#include <dfgnn/cuda_message_passing.hpp>
#include <dfgnn/detail/strategy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace dfgnn::cuda {

namespace {

/// A device allocation that grows to the largest size asked for; freed with its owner.
class GrowingBuffer {
 public:
  GrowingBuffer() = default;
  GrowingBuffer(const GrowingBuffer&) = delete;
  GrowingBuffer& operator=(const GrowingBuffer&) = delete;
  ~GrowingBuffer() { cudaFree(p_); }
  template <class T>
  T* get(std::size_t count) {
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
    if (bytes > bytes_) {
      DFGNN_CUDA(cudaFree(p_));  // synchronises: no kernel still uses the old buffer
      p_ = nullptr, bytes_ = 0;
      DFGNN_CUDA(cudaMalloc(&p_, bytes));
      bytes_ = bytes;
    }
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

/// One side of the graph cut into segments (CSR rows or CSC columns), with the pieces of the
/// segments above the split and, per split segment, its consecutive partial slots.
struct SegmentSet {
  detail::Segments seg;
  const detail::SplitRow* split_rows = nullptr;
  int num_split_rows = 0;
  int slots = 0;
};

struct MessagePlan::Impl {
  HostGraph host;  // the transposed graph is built from it on first use
  DeviceGraph graph;
  edge_t split = 0;
  int spmm_threads = detail::kSpmmThreads;  // g-SpMM's block
  bool half_warp_rows = false;              // g-SpMM's tile at 64 < D <= 128
  mutable detail::DeviceArrays mem;  // the application's allocator where it set one
  const float* inv_degree = nullptr;  // [N] 1 / d_in(v), 0 for an empty row: mean's factor
  const float* gcn_in = nullptr;      // [N] 1 / sqrt(max(1, d_in))
  const float* gcn_out = nullptr;     // [N] 1 / sqrt(max(1, d_out))
  SegmentSet csr;
  mutable std::unique_ptr<SegmentSet> csc;
  mutable GrowingBuffer part, part_arg, full;

  template <class T>
  const T* upload(const std::vector<T>& host_data) const {
    return mem.upload(host_data.data(), host_data.size());
  }

  /// Segments over offsets `ptr` (host) and the device arrays of their edges.
  SegmentSet segments(const std::vector<edge_t>& ptr, const edge_t* ptr_dev, const node_t* other, const edge_t* ids,
                      bool by_source) const {
    const RowPieces rp = row_pieces(ptr, split);
    SegmentSet s;
    s.seg = {ptr_dev, other, ids, node_t(ptr.size() - 1), by_source, split, upload(rp.pieces), int(rp.pieces.size())};
    s.split_rows = upload(rp.rows);
    s.num_split_rows = int(rp.rows.size());
    s.slots = int(rp.pieces.size());
    return s;
  }

  const SegmentSet& transposed() const {
    if (!csc) {
      const HostCsc t = dfgnn::detail::transpose_of_valid(host);
      std::vector<edge_t> ids(t.csr_edge.size());
      for (std::size_t c = 0; c < ids.size(); ++c) ids[c] = host.edge_id[std::size_t(t.csr_edge[c])];
      csc = std::make_unique<SegmentSet>(segments(t.col_ptr, upload(t.col_ptr), upload(t.dst), upload(ids), true));
    }
    return *csc;
  }

  void build(const HostGraph& g, const DeviceGraph& device_graph);
};

void MessagePlan::Impl::build(const HostGraph& g, const DeviceGraph& device_graph) {
  validate(g);
  if (g.bipartite()) throw Error("cuda::MessagePlan: message passing needs a square graph, not a bipartite one");
  dfgnn::detail::check_edge_rows("cuda::MessagePlan", g.num_edges());
  if (device_graph.num_nodes != g.num_nodes || device_graph.num_edges != g.num_edges())
    throw Error("cuda::MessagePlan: the device graph has " + std::to_string(device_graph.num_nodes) + " nodes and " +
                std::to_string(device_graph.num_edges) + " edges, the host graph " + std::to_string(g.num_nodes) +
                " and " + std::to_string(g.num_edges()));
  host = g;
  graph = device_graph;
  int device = 0, sms = 0;
  DFGNN_CUDA(cudaGetDevice(&device));
  DFGNN_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // A piece is at most a resident warp's fair share of the edges (64 warps of 32 lanes per SM;
  // strategy.hpp's piece_edges, the attention plans' rule), so no warp's walk outlasts the others
  // by much; at least 32 edges (one chunk of ids).
  split = dfgnn::detail::piece_edges(g.num_edges(), {detail::kWarp, std::int64_t(std::max(sms, 1)) * 64 * detail::kWarp,
                                                     32, edge_t(1) << 20});
  // g-SpMM's launch shape from the rows walked whole: blocks of 4 warps where their degrees
  // are uneven (a block holds its SM slots until its slowest row ends: 1-6% faster on
  // web-NotreDame, R-MAT, pubmed, tolokers; even PATTERN-like 12% slower at D = 256), half
  // warps for many short rows (message_passing.cuh).
  const WholeDegrees whole = whole_degrees(g.row_ptr, split);
  spmm_threads = whole.uneven() ? detail::kSpmmThreads / 2 : detail::kSpmmThreads;
  half_warp_rows = whole.mean <= detail::kShortRow &&
                   g.num_nodes >= std::int64_t(detail::kShortRowWaves) * 2 * 32 * std::max(sms, 1);
  const std::size_t N = std::size_t(g.num_nodes);
  std::vector<float> inv(N), in(N), out(N);
  std::vector<edge_t> sent(N, 0);
  for (node_t u : g.src) ++sent[std::size_t(u)];
  for (std::size_t v = 0; v < N; ++v) {
    const edge_t d = g.row_ptr[v + 1] - g.row_ptr[v];
    inv[v] = d > 0 ? 1.0f / float(d) : 0.0f;
    in[v] = 1.0f / std::sqrt(float(std::max<edge_t>(d, 1)));
    out[v] = 1.0f / std::sqrt(float(std::max<edge_t>(sent[v], 1)));
  }
  inv_degree = upload(inv), gcn_in = upload(in), gcn_out = upload(out);
  // Edges given in CSR order (as cuSPARSE requires its values) need no id lookups: an edge
  // operand's row is then the edge's position, one dependent load fewer per edge.
  const bool in_order = dfgnn::detail::edges_in_csr_order(g);
  csr = segments(g.row_ptr, device_graph.row_ptr, device_graph.src, in_order ? nullptr : device_graph.edge_id, false);
}

namespace {

using dfgnn::detail::Extents;
using detail::Fold;
using detail::SegmentOut;
using detail::SumParams;
using detail::Tile;

Extents operand(const char* name, const Operand& t, std::size_t rows) {
  return {name, t.data, rows, std::size_t(t.heads), std::size_t(t.dim)};
}
/// A tensor the caller must give (checked even when null).
Extents required(const char* name, const void* p, std::size_t rows, int heads, int dim) {
  return {name, p, rows, std::size_t(heads), std::size_t(dim)};
}
/// A tensor the caller may leave null (then absent).
Extents optional(const char* name, const void* p, std::size_t rows, int heads, int dim,
                 std::size_t element = sizeof(float)) {
  return p ? Extents{name, p, rows, std::size_t(heads), std::size_t(dim), element} : Extents{name, nullptr, 0, 0, 0};
}

detail::Access access(const Operand& t) { return {t.data, t.heads, t.dim}; }

std::size_t rows_of(Target t, const MessagePlan::Impl& p) {
  return t == Target::E ? std::size_t(p.graph.num_edges) : std::size_t(p.graph.num_nodes);
}

/// float4 lanes need whole, 16-byte aligned slices: W and D multiples of 4 (so a slice never
/// crosses a head) and every tensor aligned.
bool vectorizable(int W, int D, std::initializer_list<const void*> tensors) {
  return W % 4 == 0 && D % 4 == 0 && detail::aligned16(tensors);
}

template <class P>
void launch_tile(cudaStream_t stream, const typename P::Params& q, const detail::Segments& s, int W, int D,
                 const SegmentOut& o) {
  using T = typename P::Tile;
  const std::int64_t units = std::int64_t(s.num_pieces) + s.count;
  if (units == 0) return;
  const std::int64_t threads = (units + T::GROUPS - 1) / T::GROUPS * detail::kWarp;
  const dim3 grid(unsigned((threads + detail::kMpThreads - 1) / detail::kMpThreads), unsigned((W + T::MAX_D - 1) / T::MAX_D));
  detail::segment_kernel<P><<<grid, detail::kMpThreads, 0, stream>>>(q, s, W, D, o);
  DFGNN_CUDA(cudaGetLastError());
}

/// Merges the partial slots of the split segments of `set` into o.out (rows of W entries), four
/// entries per thread where W and out allow 16-byte accesses (the slots always do).
void merge_split(cudaStream_t stream, const SegmentSet& set, int W, Fold fold, const float* row_scale,
                 const SegmentOut& o) {
  if (!set.num_split_rows) return;
  const bool vec = vectorizable(W, 4, {o.out});
  const std::size_t threads = std::size_t(set.num_split_rows) * unsigned(W) / (vec ? 4 : 1);
  detail::launch_dependent(vec ? detail::merge_segments<4> : detail::merge_segments<1>, threads, stream,
                           set.split_rows, set.num_split_rows, W, fold, row_scale, o);
}

/// Sums term P over the segments of `set` into out, pieces into the plan's partials,
/// then merges the split segments. The lane tile follows the row width W = H * D: sub-warp
/// groups of 8 or 16 lanes up to 64 floats, a warp of float4 lanes up to 128 or 256 (wider
/// rows in slices of 256 on blockIdx.y); scalar lanes when float4 does not fit.
template <template <class> class P>
void run_segments(cudaStream_t stream, const MessagePlan::Impl& plan, const SegmentSet& set,
                  const typename P<Tile<1, 32, 4>>::Params& q, int W, int D, float* out, bool vec) {
  SegmentOut o{out, nullptr, nullptr, nullptr};
  if (set.slots) o.part = plan.part.get<float>(std::size_t(set.slots) * unsigned(W));
  if (!vec)
    launch_tile<P<Tile<1, 32, 4>>>(stream, q, set.seg, W, D, o);
  else if (W <= 32)
    launch_tile<P<Tile<4, 8, 1>>>(stream, q, set.seg, W, D, o);
  else if (W <= 64)
    launch_tile<P<Tile<4, 16, 1>>>(stream, q, set.seg, W, D, o);
  else if (W <= 128)
    launch_tile<P<Tile<4, 32, 1>>>(stream, q, set.seg, W, D, o);
  else
    launch_tile<P<Tile<4, 32, 2>>>(stream, q, set.seg, W, D, o);
  merge_split(stream, set, W, Fold::Sum, nullptr, o);
}

/// The forward g-SpMM over the CSR rows: the tile follows D and the tensors' alignment
/// (with_tile, as the attention kernels), the kernel the operands' shapes; then the merge of
/// the split rows.
void run_gspmm(cudaStream_t stream, const MessagePlan::Impl& plan, const detail::MessageParams& q, Fold fold, int H,
               int D, float* out, edge_t* arg, bool vec) {
  using detail::Shape;
  const SegmentSet& set = plan.csr;
  const int W = H * D;
  SegmentOut o{out, arg, nullptr, nullptr};
  if (set.slots) {
    o.part = plan.part.get<float>(std::size_t(set.slots) * unsigned(W));
    if (fold != Fold::Sum) o.part_arg = plan.part_arg.get<edge_t>(std::size_t(set.slots) * unsigned(W));
  }
  const std::int64_t units = std::int64_t(set.seg.num_pieces) + set.seg.count;
  if (units == 0) return;
  const bool lhs_full = q.lhs.dim != 1 || D == 1, rhs_full = q.rhs.dim != 1 || D == 1;
  const int block = plan.spmm_threads;
  const auto dispatch = [&](auto tile) {
    using T = decltype(tile);
    const int per_warp = T::GROUPS / std::min(H, T::GROUPS);
    const std::int64_t threads = (units + per_warp - 1) / per_warp * detail::kWarp;
    const dim3 grid(unsigned((threads + block - 1) / block), unsigned((D + T::MAX_D - 1) / T::MAX_D));
    const auto launch = [&](auto fold_c, auto lhs_c, auto rhs_c, auto div_c) {
      constexpr Fold F = decltype(fold_c)::value;
      constexpr Shape L = decltype(lhs_c)::value, R = decltype(rhs_c)::value;
      constexpr bool kDiv = decltype(div_c)::value;
      // Exact kernels for the sums of tiles with two or more 16-byte chunks per lane (D > 128,
      // and D = 128 on half warps), where the zero fill they drop is largest: 2-7% faster on
      // the H100. With one chunk they were as often slower (copy_u at D = 32 up to 11%,
      // CLUSTER-like u_mul_e at D = 128 3%; docs/message_passing.md, "CUDA-native kernels").
      if constexpr (F == Fold::Sum && T::VEC == 4 && T::CHUNKS >= 2 && !kDiv)
        if (D % T::MAX_D == 0)
          return detail::gspmm_kernel<T, F, L, R, kDiv, true><<<grid, block, 0, stream>>>(q, set.seg, H, D, o);
      detail::gspmm_kernel<T, F, L, R, kDiv, false><<<grid, block, 0, stream>>>(q, set.seg, H, D, o);
    };
    const auto go = [&](auto fold_c, auto lhs_c, auto rhs_c) {
      if (q.rhs_on != Target::None && q.op == BinaryOp::Div) return launch(fold_c, lhs_c, rhs_c, std::true_type{});
      launch(fold_c, lhs_c, rhs_c, std::false_type{});
    };
    const auto shapes = [&](auto fold_c) {
      using S = std::integral_constant<Shape, Shape::Full>;
      using Sc = std::integral_constant<Shape, Shape::Scalar>;
      using A = std::integral_constant<Shape, Shape::Any>;
      using No = std::integral_constant<Shape, Shape::None>;
      if (q.rhs_on == Target::None) return lhs_full ? launch(fold_c, S{}, No{}, std::false_type{}) : launch(fold_c, A{}, No{}, std::false_type{});
      if (lhs_full && rhs_full) return go(fold_c, S{}, S{});
      if (lhs_full) return go(fold_c, S{}, Sc{});
      go(fold_c, A{}, A{});
    };
    switch (fold) {
      case Fold::Sum: return shapes(std::integral_constant<Fold, Fold::Sum>{});
      case Fold::Max: return shapes(std::integral_constant<Fold, Fold::Max>{});
      case Fold::Min: return shapes(std::integral_constant<Fold, Fold::Min>{});
    }
  };
  if (plan.half_warp_rows && vec && D > 64 && D <= detail::HalfWarpTile::MAX_D)
    dispatch(detail::HalfWarpTile{});
  else
    detail::with_tile(D, vec, dispatch);
  DFGNN_CUDA(cudaGetLastError());
  merge_split(stream, set, W, fold, q.inv_degree, o);
}

/// A node gradient [N, heads, dim]: the sum of q's term over each segment of `set`, gathered at
/// full width [N, H, D] (into the plan's workspace when the operand broadcasts) and summed over
/// the broadcast axes.
void node_gradient(cudaStream_t stream, const MessagePlan::Impl& plan, const SegmentSet& set, const SumParams& q,
                   int H, int D, float* grad, int heads, int dim) {
  const int W = H * D;
  const std::size_t N = std::size_t(plan.graph.num_nodes);
  const bool full = heads == H && dim == D;
  float* target = full ? grad : plan.full.get<float>(N * unsigned(W));
  const bool vec = vectorizable(W, D, {q.g.data, q.a.data, q.b.data, q.arg, target});
  run_segments<detail::SumTerm>(stream, plan, set, q, W, D, target, vec);
  if (full) return;
  const std::size_t threads = N * unsigned(heads) * unsigned(dim);
  if (threads == 0) return;
  detail::reduce_broadcast<<<unsigned((threads + 255) / 256), 256, 0, stream>>>(target, N, H, D, heads, dim, grad);
  DFGNN_CUDA(cudaGetLastError());
}

/// f's values of every edge into out [E, heads, dim] (summed over the axes it broadcasts).
template <class F>
void edge_values(cudaStream_t stream, const MessagePlan::Impl& plan, const F& f, int H, int D, float* out, int heads,
                 int dim) {
  const DeviceGraph& g = plan.graph;
  if (g.num_edges == 0) return;
  const std::size_t threads = std::size_t((g.num_edges + detail::kEdgesPerWarp - 1) / detail::kEdgesPerWarp) * detail::kWarp;
  detail::edge_kernel<F><<<unsigned((threads + detail::kMpThreads - 1) / detail::kMpThreads), detail::kMpThreads, 0,
                           stream>>>(f, {g.src, g.dst, g.edge_id, g.num_edges, out, heads, dim}, H, D);
  DFGNN_CUDA(cudaGetLastError());
}

}  // namespace

MessagePlan::MessagePlan(const HostGraph& g) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.build(g, {g.num_nodes, g.num_edges(), p.upload(g.row_ptr), p.upload(g.src), p.upload(g.dst), p.upload(g.edge_id)});
}

MessagePlan::MessagePlan(const HostGraph& g, const DeviceGraph& device_graph) : impl_(std::make_unique<Impl>()) {
  impl_->build(g, device_graph);
}

MessagePlan::~MessagePlan() = default;
MessagePlan::MessagePlan(MessagePlan&&) noexcept = default;
MessagePlan& MessagePlan::operator=(MessagePlan&&) noexcept = default;
const DeviceGraph& MessagePlan::graph() const { return impl_->graph; }
edge_t MessagePlan::split() const { return impl_->split; }
bool MessagePlan::half_warp_rows() const { return impl_->half_warp_rows; }

namespace {

// The checked calls' runs.

Operand operand_of(const Extents& t) { return {static_cast<const float*>(t.data), int(t.heads), int(t.dim)}; }
float* output_of(const Extents& t) { return static_cast<float*>(const_cast<void*>(t.data)); }

void run_gspmm(cudaStream_t stream, const MessagePlan::Impl& p, const dfgnn::detail::MessageCall& c) {
  const Message& m = c.message;
  const Operand lhs = operand_of(c.lhs), rhs = operand_of(c.rhs);
  float* out = output_of(c.out);
  edge_t* arg = static_cast<edge_t*>(const_cast<void*>(c.arg.data));
  const detail::MessageParams q{access(lhs), access(rhs), m.lhs, m.rhs, m.op,
                                c.reduce == Reduce::Mean ? p.inv_degree : nullptr,
                                m.lhs == Target::E || m.rhs == Target::E};
  // 16-byte lanes when D % 4 == 0 and every tensor is aligned (a row of a full operand then is).
  const bool vec = vectorizable(4, c.dim, {lhs.data, rhs.data, out, arg});
  const Fold fold = c.reduce == Reduce::Max ? Fold::Max : c.reduce == Reduce::Min ? Fold::Min : Fold::Sum;
  run_gspmm(stream, p, q, fold, c.heads, c.dim, out, arg, vec);
}

void run_gspmm_backward(cudaStream_t stream, const MessagePlan::Impl& p, const dfgnn::detail::MessageCall& c) {
  const Message& m = c.message;
  const int H = c.heads, D = c.dim;
  const Operand lhs = operand_of(c.lhs), rhs = operand_of(c.rhs);
  const bool extreme = c.reduce == Reduce::Max || c.reduce == Reduce::Min;
  SumParams q;
  q.g = {static_cast<const float*>(c.dout.data), H, D}, q.g_on = Target::V;
  q.arg = extreme ? static_cast<const edge_t*>(c.arg.data) : nullptr;
  q.scale_v = c.reduce == Reduce::Mean ? p.inv_degree : nullptr;
  q.op = m.op, q.a = access(lhs), q.a_on = m.lhs, q.b = access(rhs), q.b_on = m.rhs;
  q.ids = extreme || m.lhs == Target::E || m.rhs == Target::E;
  if (float* dlhs = output_of(c.dlhs)) {
    q.deriv = m.is_copy() ? 0 : 1;
    if (m.lhs == Target::U)
      node_gradient(stream, p, p.transposed(), q, H, D, dlhs, lhs.heads, lhs.dim);
    else
      edge_values(stream, p, detail::EdgeTerm{q, H * D}, H, D, dlhs, lhs.heads, lhs.dim);
  }
  if (float* drhs = output_of(c.drhs)) {
    q.deriv = 2;
    if (m.rhs == Target::V)
      node_gradient(stream, p, p.csr, q, H, D, drhs, rhs.heads, rhs.dim);
    else
      edge_values(stream, p, detail::EdgeTerm{q, H * D}, H, D, drhs, rhs.heads, rhs.dim);
  }
}

void run_gsddmm(cudaStream_t stream, const MessagePlan::Impl& p, const dfgnn::detail::MessageCall& c) {
  const int width = c.op == BinaryOp::Dot ? 1 : c.dim;
  edge_values(stream, p, detail::SddmmValue{c.op, access(operand_of(c.lhs)), access(operand_of(c.rhs))}, c.heads,
              c.dim, output_of(c.out), c.heads, width);
}

void run_gsddmm_backward(cudaStream_t stream, const MessagePlan::Impl& p, const dfgnn::detail::MessageCall& c) {
  const int H = c.heads, D = c.dim;
  const Operand x = operand_of(c.lhs), y = operand_of(c.rhs);
  SumParams q;
  q.g = {static_cast<const float*>(c.dout.data), H, c.op == BinaryOp::Dot ? 1 : D}, q.g_on = Target::E;
  q.op = c.op, q.a = access(x), q.a_on = Target::U, q.b = access(y), q.b_on = Target::V;
  q.ids = true;
  if (float* dx = output_of(c.dlhs)) {
    q.deriv = 1;
    node_gradient(stream, p, p.transposed(), q, H, D, dx, x.heads, x.dim);
  }
  if (float* dy = output_of(c.drhs)) {
    q.deriv = 2;
    node_gradient(stream, p, p.csr, q, H, D, dy, y.heads, y.dim);
  }
}

void run_gcn(cudaStream_t stream, const MessagePlan::Impl& p, const dfgnn::detail::MessageCall& c, bool backward) {
  const int H = c.heads, D = c.dim;
  SumParams q;
  q.g = {static_cast<const float*>((backward ? c.dout : c.lhs).data), H, D};
  q.g_on = backward ? Target::V : Target::U, q.scale_v = p.gcn_in, q.scale_u = p.gcn_out;
  node_gradient(stream, p, backward ? p.transposed() : p.csr, q, H, D, output_of(backward ? c.dlhs : c.out), H, D);
}

// The entries' own checks of their H and D: at least 1, and a dot's D the width of x and y
// (the dispatch checks the tensors against each other).
void check_width(const char* who, int H, int D) {
  if (H < 1 || D < 1)
    throw Error(std::string(who) + ": H and D must be >= 1, got H = " + std::to_string(H) + ", D = " + std::to_string(D));
}
void check_sddmm_width(const char* who, BinaryOp op, int D, const Operand& x, const Operand& y) {
  const int checked = std::max(x.dim, y.dim);
  if (op == BinaryOp::Dot && checked != D)
    throw Error(std::string(who) + ": x and y have dim " + std::to_string(checked) + ", expected D = " + std::to_string(D));
}

/// A call of the CUDA-native entries.
dfgnn::detail::MessageCall call(dfgnn::detail::MessagePass pass, cudaStream_t stream, int H, int D) {
  dfgnn::detail::MessageCall c;
  c.pass = pass, c.stream = stream, c.heads = H, c.dim = D;
  return c;
}

}  // namespace

node_t MessagePlan::num_nodes() const { return impl_->graph.num_nodes; }
edge_t MessagePlan::num_edges() const { return impl_->graph.num_edges; }

void MessagePlan::run(const dfgnn::detail::MessageCall& c) const {
  const auto stream = static_cast<cudaStream_t>(c.stream);
  using dfgnn::detail::MessagePass;
  switch (c.pass) {
    case MessagePass::Spmm: return run_gspmm(stream, *impl_, c);
    case MessagePass::SpmmBackward: return run_gspmm_backward(stream, *impl_, c);
    case MessagePass::Sddmm: return run_gsddmm(stream, *impl_, c);
    case MessagePass::SddmmBackward: return run_gsddmm_backward(stream, *impl_, c);
    case MessagePass::Gcn: return run_gcn(stream, *impl_, c, false);
    case MessagePass::GcnBackward: return run_gcn(stream, *impl_, c, true);
  }
}

void gspmm(cudaStream_t stream, const MessagePlan& plan, const Message& m, Reduce r, int H, int D, const Operand& lhs,
           const Operand& rhs, float* out, edge_t* arg) {
  constexpr const char* who = "cuda::gspmm";
  check_width(who, H, D);
  const auto& p = plan.impl();
  const std::size_t N = std::size_t(p.graph.num_nodes);
  auto c = call(dfgnn::detail::MessagePass::Spmm, stream, H, D);
  c.message = m, c.reduce = r;
  c.lhs = operand("lhs", lhs, rows_of(m.lhs, p)), c.rhs = operand("rhs", rhs, rows_of(m.rhs, p));
  c.out = required("out", out, N, H, D), c.arg = optional("arg", arg, N, H, D, sizeof(edge_t));
  dfgnn::detail::run(who, plan, c);
}

void gspmm_backward(cudaStream_t stream, const MessagePlan& plan, const Message& m, Reduce r, int H, int D,
                    const Operand& lhs, const Operand& rhs, const edge_t* arg, const float* dout, float* dlhs,
                    float* drhs) {
  constexpr const char* who = "cuda::gspmm_backward";
  check_width(who, H, D);
  const auto& p = plan.impl();
  const std::size_t N = std::size_t(p.graph.num_nodes);
  const std::size_t lrows = rows_of(m.lhs, p), rrows = rows_of(m.rhs, p);
  auto c = call(dfgnn::detail::MessagePass::SpmmBackward, stream, H, D);
  c.message = m, c.reduce = r;
  c.lhs = operand("lhs", lhs, lrows), c.rhs = operand("rhs", rhs, rrows);
  // An extreme reduce needs arg: a null one is checked (and named) as given without data.
  c.arg = r == Reduce::Max || r == Reduce::Min ? Extents{"arg", arg, N, std::size_t(H), std::size_t(D), sizeof(edge_t)}
                                               : optional("arg", arg, N, H, D, sizeof(edge_t));
  c.dout = required("dout", dout, N, H, D);
  c.dlhs = optional("dlhs", dlhs, lrows, lhs.heads, lhs.dim), c.drhs = optional("drhs", drhs, rrows, rhs.heads, rhs.dim);
  dfgnn::detail::run(who, plan, c);
}

void gsddmm(cudaStream_t stream, const MessagePlan& plan, BinaryOp op, int H, int D, const Operand& x, const Operand& y,
            float* out) {
  constexpr const char* who = "cuda::gsddmm";
  check_width(who, H, D);
  const auto& p = plan.impl();
  const std::size_t N = std::size_t(p.graph.num_nodes), E = std::size_t(p.graph.num_edges);
  auto c = call(dfgnn::detail::MessagePass::Sddmm, stream, H, D);
  c.op = op;
  c.lhs = operand("x", x, N), c.rhs = operand("y", y, N);
  c.out = required("out", out, E, H, op == BinaryOp::Dot ? 1 : D);
  check_sddmm_width(who, op, D, x, y);
  dfgnn::detail::run(who, plan, c);
}

void gsddmm_backward(cudaStream_t stream, const MessagePlan& plan, BinaryOp op, int H, int D, const Operand& x,
                     const Operand& y, const float* dout, float* dx, float* dy) {
  constexpr const char* who = "cuda::gsddmm_backward";
  check_width(who, H, D);
  const auto& p = plan.impl();
  const std::size_t N = std::size_t(p.graph.num_nodes), E = std::size_t(p.graph.num_edges);
  auto c = call(dfgnn::detail::MessagePass::SddmmBackward, stream, H, D);
  c.op = op;
  c.lhs = operand("x", x, N), c.rhs = operand("y", y, N);
  c.dout = required("dout", dout, E, H, op == BinaryOp::Dot ? 1 : D);
  c.dlhs = optional("dx", dx, N, x.heads, x.dim), c.drhs = optional("dy", dy, N, y.heads, y.dim);
  check_sddmm_width(who, op, D, x, y);
  dfgnn::detail::run(who, plan, c);
}

void gcn_aggregate(cudaStream_t stream, const MessagePlan& plan, int H, int D, const float* x, float* out) {
  constexpr const char* who = "cuda::gcn_aggregate";
  check_width(who, H, D);
  const std::size_t N = std::size_t(plan.impl().graph.num_nodes);
  auto c = call(dfgnn::detail::MessagePass::Gcn, stream, H, D);
  c.lhs = required("x", x, N, H, D), c.out = required("out", out, N, H, D);
  dfgnn::detail::run(who, plan, c);
}

void gcn_aggregate_backward(cudaStream_t stream, const MessagePlan& plan, int H, int D, const float* dout, float* dx) {
  constexpr const char* who = "cuda::gcn_aggregate_backward";
  check_width(who, H, D);
  const std::size_t N = std::size_t(plan.impl().graph.num_nodes);
  auto c = call(dfgnn::detail::MessagePass::GcnBackward, stream, H, D);
  c.dout = required("dout", dout, N, H, D), c.dlhs = required("dx", dx, N, H, D);
  dfgnn::detail::run(who, plan, c);
}

}  // namespace dfgnn::cuda

namespace dfgnn::detail {

std::unique_ptr<MessageBuilder> native_message_builder(const HostGraph& g, const edge_t* row_ptr, const node_t* src,
                                                       const node_t* dst, const edge_t* edge_id) {
  struct NativeMessages final : MessageBuilder {
    const HostGraph& g;
    cuda::DeviceGraph device;
    NativeMessages(const HostGraph& host, cuda::DeviceGraph d) : g(host), device(d) {}
    std::shared_ptr<const MessageExecutor> build() override {
      if (!device.row_ptr && !device.src) return std::make_shared<const cuda::MessagePlan>(g);
      return std::make_shared<const cuda::MessagePlan>(g, device);
    }
  };
  return std::make_unique<NativeMessages>(g, cuda::DeviceGraph{g.num_nodes, g.num_edges(), row_ptr, src, dst, edge_id});
}

}  // namespace dfgnn::detail
