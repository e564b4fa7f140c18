// Plan construction: device limits, the Auto cost model, the SMMF block partition with split
// super rows, PMF's and Online's pieces, the Staged batch check, Dense's eligibility and
// adjacency, and the workspace. Everything but SMMF's packing is computed on the device
// (preprocess.cuh), from whichever graph the plan was made of.

#include "plan_impl.hpp"
#include "preprocess.cuh"
#include "staged.cuh"

#include <dfgnn/detail/strategy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace dfgnn::cuda {

/// What a plan is built from, whichever constructor made it: the CSR on the device (a
/// destination array only where the caller has one), the degree statistics, the batch's device
/// offsets (null: the plan finds the graph's independent blocks where a strategy needs them) and
/// the host copy of the graph, where there is one.
/// Where the graph's construction already summed the batch and the rows, `sums` and `rows`
/// point to them.
struct Plan::Source {
  node_t num_src_nodes = 0;
  DeviceGraph device;
  DegreeStats stats;
  const node_t* batch = nullptr;
  int num_graphs = 0;
  const detail::BatchSums* sums = nullptr;
  const WholeDegrees* rows = nullptr;  ///< every row's degrees, as walked whole
  const HostGraph* host = nullptr;
};

namespace detail {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("dfgnn::cuda: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace detail

namespace {

using detail::Piece;
using detail::SmmfBlock;
using detail::SplitRow;

/// Staged shared-memory floats per node for the score kind.
std::size_t staged_floats(ScoreKind kind, int H, int D) {
  return visit_model(
      kind, [&](auto model) { return detail::staged_floats_per_node<detail::ScoreOf<decltype(model)>>(H, D); });
}

/// Bytes of shared memory a Staged block needs for the batch's widest graph, or 0 when there is
/// no batch (a bipartite graph) or that graph does not fit in shared memory.
std::size_t staged_smem(bool batch, node_t widest, ScoreKind kind, int H, int D, std::size_t optin) {
  if (!batch) return 0;
  const std::size_t bytes = std::max<std::size_t>(16, widest * staged_floats(kind, H, D) * sizeof(float));
  return bytes <= optin ? bytes : 0;
}

/// The batch Dense would run (strategy.hpp's dense_fit reads it): each size bucket's largest
/// graph in shared memory (of elements of type t) with one region.
dfgnn::detail::DenseBatch dense_batch(bool batch, const detail::BatchSums& b, ScoreKind kind, int H, int D, DType t,
                                      std::size_t optin) {
  dfgnn::detail::DenseBatch d{batch, int(b.graphs), double(b.squares), b.first_too_large, b.too_large_nodes};
  for (const int nodes : b.max_nodes) {
    const std::size_t bytes = detail::dense_smem_bytes(kind, nodes, H, D, true, t);
    if (nodes > 0 && bytes > optin) {
      d.unfit_nodes = nodes, d.unfit_bytes = bytes;
      break;
    }
  }
  return d;
}

/// Dense's limits: D % 32 == 0 (S takes d in blocks of 16 floats or 32 two-byte elements, PV
/// writes 32-column chunks), graphs of at most kDenseMaxNodes nodes, rows of at most
/// kDenseMaxDegree edges, a cosine's D at most kDenseMaxCosineDim.
dfgnn::detail::DenseLimits dense_limits(std::size_t optin) {
  return {detail::kDenseMaxNodes, detail::kDenseMaxDegree, 32, detail::kDenseMaxCosineDim, optin};
}

/// Where the CUDA-native kernels cut rows into pieces (strategy.hpp's piece_edges): a piece is
/// about half a warp's share of the edges (E / (SMs * 32 resident warps) / 2, counted as lanes
/// of 32-lane warps): one warp covers a row several times more slowly per edge than a full SM
/// covers its warps' shares, so longer pieces would finish last. Online also splits the
/// moderately heavy rows of small graphs, whose time is that of their longest row: beyond 32
/// edges, or 16 when every row fits in one wave of resident warps (H100: cora and citeseer
/// backward 13-20% faster at 16, forward up to 9%; pubmed, five waves, 0-4% slower at 16; 8
/// slower everywhere). PMF's pieces take at least 128 edges.
dfgnn::detail::PieceFacts native_pieces(Strategy s, node_t N, int sms) {
  constexpr int kResidentWarps = 32;  // per SM: Online's and the walks' launch bounds, 64 registers
  const bool one_wave = std::int64_t(N) <= std::int64_t(kResidentWarps) * sms;
  const edge_t shortest = s == Strategy::PMF ? 128 : one_wave ? 16 : 32;
  return {detail::kWarp, 2 * std::int64_t(sms) * kResidentWarps * detail::kWarp, shortest, std::numeric_limits<edge_t>::max()};
}

/// Online's row statistic (plan_impl.hpp) of the rows it walks whole: rows of a warp wait for
/// the heaviest, so with uneven degrees slices of one row balance better; with even ones
/// several rows per warp waste nothing and save the slices' merge. Measured on the H100 at D =
/// 16 and 32 (docs/cuda.md).
double uneven_mean(const WholeDegrees& d) { return d.uneven() ? d.mean : 0; }

/// What Auto and an explicit strategy read of this device (strategy.hpp): every strategy but
/// Dense and Staged, which only where their limits allow it; the two-byte kernels, Online and
/// Dense (docs/cuda.md, "Element types"); and the shared memory a block may ask for, where any
/// D's accumulator fits, so Auto takes Online wherever Dense does not pay. Online was the
/// fastest of the others in all 80 (graph, model, H x D) cases measured on the H100 (docs/cuda.md,
/// "How Auto decides"): SMMF, PMF and Unfused move a superset of its bytes in more launches, and
/// Staged, which reads each edge's rows from shared memory with a warp-wide reduction, ran 2x
/// slower on PATTERN; a cost model between Online and Staged only ever preferred Staged on tiny
/// batches, by one launch, so it was dropped.
dfgnn::detail::DeviceFacts device_facts(const dfgnn::detail::DenseFit& dense, std::size_t staged_smem,
                                        std::size_t smem_optin) {
  using dfgnn::detail::strategy_bit;
  dfgnn::detail::DeviceFacts f;
  f.strategies = dfgnn::detail::kPortableStrategies;
  f.two_byte = strategy_bit(Strategy::Online) | strategy_bit(Strategy::Dense);
  f.scratch_bytes = smem_optin;
  f.batch = dense.batch;
  if (dense.why.empty()) f.strategies |= strategy_bit(Strategy::Dense);
  if (staged_smem > 0) f.strategies |= strategy_bit(Strategy::Staged);
  f.why_not[int(Strategy::Dense)] = "Dense " + dense.why;
  f.why_not[int(Strategy::Staged)] =
      "Staged needs a batch of square graphs (graph_ptr, or the graph's independent blocks) whose graphs' staged "
      "features fit in " + std::to_string(smem_optin) + " bytes of shared memory";
  return f;
}

/// SMMF partition. Rows of at most `wide` edges are packed in order into blocks of at most
/// `budget` edges and kMaxRows rows; a heavier row gets blocks of its own, all warps sharing
/// it, cut into equal pieces of at most `budget` edges with partial slots when it exceeds
/// the budget. Budget: a few blocks per SM for load balance, capped by shared memory.
struct SmmfPartition {
  std::vector<SmmfBlock> blocks;
  std::vector<SplitRow> split;
  int slots = 0;
  std::size_t smem_floats = 0;
};

SmmfPartition smmf_partition(const std::vector<edge_t>& row_ptr, int H, int D, int sms, std::size_t optin) {
  constexpr int kMaxRows = 4 * kSmmfWarps;
  const int NW = kSmmfWarps;
  const node_t N = node_t(row_ptr.size()) - 1;
  const edge_t E = row_ptr.back();
  const std::size_t stats = 2 * std::size_t(kMaxRows) * H + 4 + std::size_t(NW) * H * D;
  const std::size_t avail = optin / sizeof(float);
  if (avail <= stats + H) throw Error("cuda::Plan: H*D too large for SMMF shared memory");
  const edge_t cap = edge_t((avail - stats) / H);
  const edge_t budget = std::max<edge_t>(1, std::min<edge_t>(std::min<edge_t>(2048, cap),
                                                             std::max<edge_t>(64, E / (8 * sms))));
  const edge_t wide = std::max<edge_t>(4 * NW, budget / 4);
  SmmfPartition p;
  auto add = [&](SmmfBlock b) {
    p.blocks.push_back(b);
    p.smem_floats = std::max(p.smem_floats, detail::smmf_smem_floats(b.e1 - b.e0, b.r1 - b.r0, H, D, b.wide, NW));
  };
  SmmfBlock open{0, 0, 0, 0, -1, 0};
  for (node_t v = 0; v < N; ++v) {
    const edge_t a = row_ptr[v], d = row_ptr[v + 1] - a;
    if (d > wide) {
      if (open.r1 > open.r0) add(open);
      const edge_t n = (d + budget - 1) / budget;
      if (n > 1) p.split.push_back({v, p.slots, int(n)});
      for (edge_t i = 0; i < n; ++i)
        add({a + d * i / n, a + d * (i + 1) / n, v, v + 1, n > 1 ? p.slots++ : -1, 1});
      open = {row_ptr[v + 1], row_ptr[v + 1], v + 1, v + 1, -1, 0};
      continue;
    }
    if (open.r1 > open.r0 && (open.e1 - open.e0 + d > budget || open.r1 - open.r0 == kMaxRows)) {
      add(open);
      open = {a, a, v, v, -1, 0};
    }
    open.e1 = a + d;
    open.r1 = v + 1;
  }
  if (open.r1 > open.r0) add(open);
  return p;
}

}  // namespace

/// The first backward transposes the graph on the device (preprocess.cuh; on the host when the
/// device lacks the sort's scratch, 16 bytes per edge): forward-only plans skip it and its 12
/// (rows first), 20 (columns first) or 32 (GT: both, and the edges' destinations) bytes per
/// edge on the device.
const BackwardData& Plan::Impl::backward(cudaStream_t stream) const {
  if (bwd) return *bwd;
  detail::refuse_capture(stream, "the plan's backward structure (dfgnn_plan_prepare_backward builds it too)");
  auto b = std::make_unique<BackwardData>();
  const node_t N = graph.num_nodes, NS = op.src_nodes;
  const std::size_t E = std::size_t(graph.num_edges);
  detail::DeviceArrays csr_edge;  // kept where a pass reads it
  detail::DeviceCsc csc;
  if (!detail::transpose(stream, mem, csr_edge, graph.row_ptr, graph.src, N, NS, edge_t(E), csc)) {
    // The plan's own (validated) structure, without the destinations, edge ids and stats that
    // transpose does not read: 4 bytes per edge on the host besides the CSC.
    HostGraph g;
    g.num_nodes = N;
    g.num_src_nodes = NS;
    g.row_ptr = detail::download(stream, graph.row_ptr, std::size_t(N) + 1);
    g.src = detail::download(stream, graph.src, E);
    const HostCsc h = dfgnn::detail::transpose_of_valid(g);
    csc = {mem.upload(h.col_ptr.data(), h.col_ptr.size()), mem.upload(h.dst.data(), h.dst.size()),
           csr_edge.upload(h.csr_edge.data(), E)};
  }
  b->col_ptr = csc.col_ptr;
  b->col_dst = csc.dst;
  // What the score kind needs: its orders and its partials' widths.
  struct Needs {
    bool rows_first, cols_first, cols_read_edge_grad, shared_edge_columns, cosine;
    int row_width, col_width, param_width;
  };
  const Needs need = visit_model(kind, [&](auto model) {
    using G = detail::GradOf<detail::ScoreOf<decltype(model)>>;
    return Needs{G::kRowsFirst, G::kColsFirst, G::kColsReadEdgeGrad, G::kSharedEdgeColumns, decltype(model)::cosine,
                 detail::pad4(G::row_width(dim)), detail::pad4(G::col_width(dim)), G::param_width(dim)};
  });
  if (need.rows_first) {
    edge_t* csc_pos = mem.alloc<edge_t>(E);
    detail::invert(stream, csc.csr_edge, edge_t(E), csc_pos);
    b->csc_pos = csc_pos;
  }
  if (need.cols_first) b->csr_pos = csc.csr_edge;
  // The caller's edge ids in CSC order: the scoring column walk's (edge values, dropout, GAT's
  // edge scores) and a column walk's that reads the edge gradient there (GATv2's). Where the
  // caller's order is the CSR's (no edge ids kept) they are the CSR positions.
  if (need.cols_first || need.cols_read_edge_grad) {
    if (graph.edge_id == nullptr) {
      b->col_edge_id = csc.csr_edge;
    } else {
      edge_t* col_edge_id = mem.alloc<edge_t>(E);
      detail::gather(stream, graph.edge_id, csc.csr_edge, edge_t(E), col_edge_id);
      b->col_edge_id = col_edge_id;
    }
  }
  if (b->csr_pos != nullptr || b->col_edge_id == csc.csr_edge) mem.take(csr_edge);
  b->split = dfgnn::detail::piece_edges(edge_t(E), native_pieces(Strategy::Online, N, sms));
  for (auto [ptr, n, seg] : {std::tuple{graph.row_ptr, N, &b->rows}, std::tuple{b->col_ptr, NS, &b->cols}}) {
    const detail::DevicePieces rp = detail::row_pieces(stream, mem, ptr, n, b->split);
    seg->pieces = rp.pieces;
    seg->num_pieces = seg->slots = rp.num_pieces;
    seg->split = rp.rows;
    seg->num_split = rp.num_rows;
    seg->uneven = rp.whole.uneven();
  }
  const std::size_t EH = E * heads, NH = std::size_t(N) * heads;
  b->work.dr_q = need.rows_first ? reinterpret_cast<float2*>(workspace(2 * EH)) : nullptr;
  b->work.dr = need.cols_first ? workspace(EH) : nullptr;
  b->work.delta = need.cols_first ? workspace(NH) : nullptr;
  b->work.cos = need.cosine ? workspace(EH) : nullptr;
  b->work.inv_norm = need.cosine ? workspace(NH) : nullptr;
  b->work.row_part = workspace(std::size_t(b->rows.slots) * heads * need.row_width);
  b->work.col_part = workspace(std::size_t(b->cols.slots) * heads * need.col_width);
  const std::size_t units = std::size_t(N) + b->rows.slots;
  b->work.param = workspace(units * heads * need.param_width);
  b->work.param_slices =
      workspace(detail::ParamSlicing(std::int64_t(units)).count * std::size_t(heads) * need.param_width);
  // GT's one-row edge columns read each edge's destination: built here, so that a prepared plan
  // builds nothing in its calls (refuse_capture).
  if (need.shared_edge_columns) with_destinations(stream);
  DFGNN_CUDA(cudaStreamSynchronize(stream));  // so that calls on any stream see the data
  bwd = std::move(b);
  return *bwd;
}

const DeviceGraph& Plan::Impl::with_destinations(cudaStream_t stream) const {
  if (graph.dst != nullptr) return graph;
  if (graph_with_dst.dst == nullptr) {
    detail::refuse_capture(stream, "the edges' destinations (attention weights, GT's shared edge columns)");
    graph_with_dst = graph;
    node_t* dst = mem.alloc<node_t>(std::size_t(graph.num_edges));
    detail::fill_destinations(stream, graph.row_ptr, graph.num_nodes, graph.num_edges, dst);
    graph_with_dst.dst = dst;
  }
  return graph_with_dst;
}

bool device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// A plan being built (dfgnn::detail::Builder): the device's limits and, where Auto, Staged or
/// Dense may run, the batch and Dense's fit (facts), then the plan of the strategy the strategy
/// module resolved (take).
class Plan::Builder final : public dfgnn::detail::Builder {
 public:
  /// `impl` holds what the constructor uploaded for `g` already.
  Builder(const Source& g, const Op& op, cudaStream_t stream, std::unique_ptr<Impl> impl)
      : g_(g), stream_(stream), impl_(std::move(impl)) {
    impl_->op = op;
    impl_->kind = op.kind, impl_->heads = op.heads, impl_->dim = op.dim;
  }

  dfgnn::detail::DeviceFacts facts(Strategy asked) override;
  std::shared_ptr<const dfgnn::detail::Executor> build(Strategy resolved) override {
    return std::shared_ptr<const Plan>(new Plan(take(resolved)));
  }
  /// The plan's state for `resolved`.
  std::unique_ptr<Impl> take(Strategy resolved);

 private:
  Source g_;
  cudaStream_t stream_;
  std::unique_ptr<Impl> impl_;
  bool auto_asked_ = false;
  // The batch Staged and Dense run, and what the facts found of it.
  detail::Blocks batch_;
  detail::DeviceArrays blocks_;  // the plan keeps them if Staged or Dense runs
  detail::BatchSums sums_;
  std::size_t staged_ = 0;
};

namespace {

/// The source of a plan over a host graph: its arrays on the device as `device_graph` gives
/// them (checked against `g`), or uploaded into the plan's memory.
Plan::Source host_source(const HostGraph& g, const DeviceGraph& device_graph, Plan::Impl& p) {
  const node_t N = g.num_nodes;
  const edge_t E = g.num_edges();
  Plan::Source source;
  source.num_src_nodes = g.num_src_nodes;
  source.stats = g.stats;
  source.host = &g;
  if (device_graph.row_ptr != nullptr || device_graph.src != nullptr) {
    if (device_graph.num_nodes != N || device_graph.num_edges != E)
      throw Error("cuda::Plan: device_graph has " + std::to_string(device_graph.num_nodes) + " nodes and " +
                  std::to_string(device_graph.num_edges) + " edges, the host graph " + std::to_string(N) +
                  " and " + std::to_string(E));
    if (device_graph.row_ptr == nullptr || (E > 0 && (!device_graph.src || !device_graph.dst || !device_graph.edge_id)))
      throw Error("cuda::Plan: device_graph has a null array");
    source.device = device_graph;
  } else {
    // Only what every pass reads (docs/cuda.md, "Device memory"): edge ids in CSR order (a
    // graph made from a CSR, or from edges sorted by destination) are not uploaded, since the
    // kernels read position e as edge e (caller_edge); the destinations are filled on the
    // device for the first pass that reads them.
    const bool in_order = dfgnn::detail::edges_in_csr_order(g);
    source.device = {N, E, p.upload(g.row_ptr.data(), g.row_ptr.size()), p.upload(g.src.data(), g.src.size()),
                     nullptr, in_order ? nullptr : p.upload(g.edge_id.data(), g.edge_id.size())};
  }
  if (!g.graph_ptr.empty()) {
    source.batch = p.upload(g.graph_ptr.data(), g.graph_ptr.size());
    source.num_graphs = int(g.graph_ptr.size()) - 1;
  }
  return source;
}

/// The source of a plan over a graph built on the device: its arrays, statistics and batch sums.
Plan::Source graph_source(const Graph& g) {
  Plan::Source source;
  source.num_src_nodes = g.num_src_nodes();
  source.device = g.device();
  source.stats = g.stats();
  source.batch = g.batch();
  source.num_graphs = g.num_graphs();
  if (g.batch() != nullptr) source.sums = &g.impl().sums;
  source.rows = &g.impl().rows;
  return source;
}

Op op_of(const Plan::Source& g, ScoreKind kind, int heads, int dim, DType dtype) {
  return {kind, dtype, heads, dim, g.num_src_nodes, g.device.num_nodes, g.device.num_edges};
}

}  // namespace

Plan::Plan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Plan::Plan(const HostGraph& g, ScoreKind kind, int heads, int dim, Strategy strategy, DType dtype)
    : Plan(g, DeviceGraph{}, kind, heads, dim, strategy, dtype) {}

Plan::Plan(const HostGraph& g, const DeviceGraph& device_graph, ScoreKind kind, int heads, int dim,
           Strategy strategy, DType dtype)
    : impl_(std::make_unique<Impl>()) {
  validate(g);
  const Source source = host_source(g, device_graph, *impl_);
  build(source, op_of(source, kind, heads, dim, dtype), strategy, nullptr);
}

Plan::Plan(const Graph& g, ScoreKind kind, int heads, int dim, Strategy strategy, cudaStream_t stream, DType dtype)
    : impl_(std::make_unique<Impl>()) {
  const Source source = graph_source(g);
  build(source, op_of(source, kind, heads, dim, dtype), strategy, stream);
}

std::unique_ptr<dfgnn::detail::Builder> detail::builder(const Graph& g, const Op& op, cudaStream_t stream) {
  return std::make_unique<Plan::Builder>(graph_source(g), op, stream, std::make_unique<Plan::Impl>());
}

void Plan::build(const Source& g, const Op& op, Strategy strategy, cudaStream_t stream) {
  dfgnn::detail::check_op("cuda::Plan", op);
  Builder builder(g, op, stream, std::move(impl_));
  impl_ = builder.take(dfgnn::detail::resolve_strategy("cuda::Plan", strategy, op, g.stats, builder.facts(strategy)));
}

dfgnn::detail::DeviceFacts Plan::Builder::facts(Strategy asked) {
  Impl& p = *impl_;
  const Source& g = g_;
  const ScoreKind kind = p.kind;
  const int heads = p.heads, dim = p.dim;
  const node_t N = g.device.num_nodes;
  const edge_t E = g.device.num_edges;
  if (dim > 512 || (dim % 4 != 0 && dim > 256))
    throw Error("cuda::Plan: dim " + std::to_string(dim) + " unsupported (at most 256, or 512 when a multiple of 4)");
  // The kernels' per-node byte stride H*D*4 is 32-bit (online.cuh, message_passing.cuh).
  if (std::int64_t(heads) * dim * 4 > std::numeric_limits<std::int32_t>::max())
    throw Error("cuda::Plan: heads x dim = " + std::to_string(heads) + " x " + std::to_string(dim) +
                " exceeds 2^29 features per node");
  DFGNN_CUDA(cudaGetDevice(&p.device));
  DFGNN_CUDA(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, p.device));
  int optin = 0;
  DFGNN_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, p.device));
  p.smem_optin = std::size_t(optin);
  p.graph = g.device;

  // The batch Staged and Dense run: the given offsets, else the graph's independent blocks (a
  // batch flattened into one edge list, or a single graph as one block). None for a bipartite
  // graph: Staged and Dense stage a graph's nodes once for both ends of its edges.
  batch_ = {g.batch, g.num_graphs};
  const bool square = g.num_src_nodes == N;
  const bool batched = asked == Strategy::Auto || asked == Strategy::Staged || asked == Strategy::Dense;
  if (square && batched && batch_.ptr == nullptr)
    batch_ = detail::independent_blocks(stream_, blocks_, g.device.row_ptr, g.device.src, N, E);
  const bool has_batch = square && batch_.ptr != nullptr;
  sums_ = !has_batch          ? detail::BatchSums{}
          : g.sums != nullptr ? *g.sums
                              : detail::batch_sums(stream_, batch_.ptr, batch_.count);
  staged_ = staged_smem(has_batch, sums_.widest, kind, heads, dim, p.smem_optin);
  const dfgnn::detail::DenseFit dense =
      asked == Strategy::Auto || asked == Strategy::Dense
          ? dfgnn::detail::dense_fit(p.op, g.stats, dense_batch(has_batch, sums_, kind, heads, dim, p.op.dtype, p.smem_optin),
                                     dense_limits(p.smem_optin))
          : dfgnn::detail::DenseFit{};
  auto_asked_ = asked == Strategy::Auto;
  return device_facts(dense, staged_, p.smem_optin);
}

std::unique_ptr<Plan::Impl> Plan::Builder::take(Strategy strategy) {
  Impl& p = *impl_;
  const Source& g = g_;
  const cudaStream_t stream = stream_;
  const ScoreKind kind = p.kind;
  const int heads = p.heads, dim = p.dim;
  const DType dtype = p.op.dtype;
  const node_t N = g.device.num_nodes;
  const edge_t E = g.device.num_edges;
  const detail::Blocks& batch = batch_;
  const detail::BatchSums& sums = sums_;
  // A plan whose Dense Auto picked runs Online for calls with edge values or dropout
  // (attention.cuh).
  p.auto_dense = auto_asked_ && strategy == Strategy::Dense;
  p.strategy = strategy;
  if (strategy == Strategy::Staged || strategy == Strategy::Dense) p.mem.take(blocks_);
  // The edge-parallel SDDMM (SMMF's, PMF's, Unfused's; steps.cuh) reads each edge's row. Online,
  // Staged and Dense walk rows.
  if (p.graph.dst == nullptr && (strategy == Strategy::SMMF || strategy == Strategy::PMF || strategy == Strategy::Unfused)) {
    node_t* dst = p.mem.alloc<node_t>(std::size_t(E));
    detail::fill_destinations(stream, p.graph.row_ptr, N, E, dst);
    p.graph.dst = dst;
  }

  int slots = 0;
  switch (strategy) {
    case Strategy::SMMF: {
      // Packing rows into blocks is sequential: the one step that reads the row offsets on the host.
      const SmmfPartition smmf = smmf_partition(
          g.host ? g.host->row_ptr : detail::download(stream, g.device.row_ptr, std::size_t(N) + 1), heads, dim,
          p.sms, p.smem_optin);
      p.blocks = p.upload(smmf.blocks.data(), smmf.blocks.size());
      p.num_blocks = int(smmf.blocks.size());
      p.smmf_smem = smmf.smem_floats * sizeof(float);
      p.split_rows = p.upload(smmf.split.data(), smmf.split.size());
      p.num_split_rows = int(smmf.split.size());
      slots = smmf.slots;
      break;
    }
    case Strategy::PMF:
    case Strategy::Online: {
      p.split = dfgnn::detail::piece_edges(E, native_pieces(strategy, N, p.sms));
      const detail::DevicePieces rp = detail::row_pieces(stream, p.mem, g.device.row_ptr, N, p.split);
      p.pieces = rp.pieces;
      p.num_pieces = rp.num_pieces;
      p.split_rows = rp.rows;
      p.num_split_rows = rp.num_rows;
      slots = p.num_pieces;
      if (strategy == Strategy::PMF) p.scores = p.workspace(std::size_t(E) * heads);
      if (strategy == Strategy::Online) p.online_uneven_mean = uneven_mean(rp.whole);
      break;
    }
    case Strategy::Unfused:
      p.scores = p.workspace(std::size_t(E) * heads);
      break;
    case Strategy::Staged: {
      p.graph_ptr = batch.ptr;
      p.num_graphs = batch.count;
      p.staged_smem = staged_;
      break;
    }
    case Strategy::Dense: {
      const detail::DenseArrays d =
          detail::dense_arrays(stream, p.mem, g.device.row_ptr, g.device.src, N, E, batch.ptr, batch.count, sums);
      p.dense.graphs = d.graphs;
      for (int b = 0; b < detail::kDenseBuckets; ++b) {
        if (sums.count[b] == 0) continue;
        const int nodes = sums.max_nodes[b];
        // GAT's key chunks stage one head's V at a time even where all heads' fit as many
        // blocks per SM: that was 3-5% faster at 4x32 (docs/cuda.md, "Shared memory").
        const bool shared = detail::dense_chunked(kind, dim, dtype) ||
                            detail::dense_shared_region(kind, dtype, b, nodes, heads, dim, p.smem_optin);
        p.dense.bucket[b] = {d.bucket[b], sums.count[b],
                             detail::dense_smem_bytes(kind, nodes, heads, dim, shared, dtype), shared};
      }
      // Online's data for unaligned tensors: whole rows, so no pieces and no merge.
      p.split = std::numeric_limits<edge_t>::max();
      p.online_uneven_mean =
          uneven_mean(g.rows ? *g.rows : detail::whole_degrees(detail::row_sums(stream, g.device.row_ptr, N, 0, p.split)));
      break;
    }
    default: throw Error("cuda::Plan: unknown strategy");
  }
  p.part.max = p.workspace(std::size_t(slots) * heads);
  p.part.sum = p.workspace(std::size_t(slots) * heads);
  p.part.acc = p.workspace(std::size_t(slots) * heads * dim);
  // The uploads above went through the legacy stream; what ran on `stream` is waited for, so the
  // plan is ready on any stream.
  DFGNN_CUDA(cudaStreamSynchronize(stream));
  return std::move(impl_);
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

const Op& Plan::op() const { return impl_->op; }
Strategy Plan::strategy() const { return impl_->strategy; }

void Plan::forward(const Call& call) const {
  visit_model(impl_->kind, [&](auto model) { detail::forward<decltype(model)>(*this, call); });
}

void Plan::backward(const Call& call) const {
  visit_model(impl_->kind, [&](auto model) { detail::backward<decltype(model)>(*this, call); });
}

void Plan::prepare_backward(void* stream) const { impl_->backward(static_cast<cudaStream_t>(stream)); }
std::size_t Plan::device_bytes() const { return impl_->mem.bytes(); }
ScoreKind Plan::kind() const { return impl_->kind; }
int Plan::heads() const { return impl_->heads; }
int Plan::dim() const { return impl_->dim; }
const DeviceGraph& Plan::graph() const { return impl_->graph; }

void check_shape(const Plan& plan, int heads, int dim) {
  if (heads != plan.heads() || dim != plan.dim())
    throw Error("cuda::attention: tensors have H x D = " + std::to_string(heads) + " x " + std::to_string(dim) +
                ", the plan was built for " + std::to_string(plan.heads()) + " x " + std::to_string(plan.dim()));
}

}  // namespace dfgnn::cuda

namespace dfgnn::detail {

std::unique_ptr<Builder> native_builder(const HostGraph& g, const edge_t* row_ptr, const node_t* src,
                                        const node_t* dst, const edge_t* edge_id, const Op& op, void* stream) {
  auto impl = std::make_unique<cuda::Plan::Impl>();
  const cuda::Plan::Source source =
      cuda::host_source(g, cuda::DeviceGraph{g.num_nodes, g.num_edges(), row_ptr, src, dst, edge_id}, *impl);
  return std::make_unique<cuda::Plan::Builder>(source, op, static_cast<cudaStream_t>(stream), std::move(impl));
}

}  // namespace dfgnn::detail
