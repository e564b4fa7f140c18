// Plan construction: device limits, the Auto cost model, the SMMF block partition with split
// super rows, PMF's and Online's pieces, the Staged batch check, Dense's eligibility and
// adjacency, and the workspace.

#include <dfgnn/parallel.hpp>

#include "plan_impl.hpp"
#include "staged.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace dfgnn::cuda {
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

edge_t degree(const HostGraph& g, node_t v) { return g.row_ptr[v + 1] - g.row_ptr[v]; }

/// Staged shared-memory floats per node for the score kind.
std::size_t staged_floats(ScoreKind kind, int H, int D) {
  return visit_model(
      kind, [&](auto model) { return detail::staged_floats_per_node<detail::ScoreOf<decltype(model)>>(H, D); });
}

/// The batch's node offsets; for a graph not built as a batch, its independent blocks (a
/// batch flattened into one edge list, or a single graph as one block). None for a bipartite
/// graph: Staged and Dense stage a graph's nodes once for both ends of its edges.
std::vector<node_t> batch_offsets(const HostGraph& g) {
  if (g.bipartite()) return {};
  return g.graph_ptr.empty() ? dfgnn::detail::independent_blocks_of_valid(g) : g.graph_ptr;
}

/// Bytes of shared memory a Staged block needs, or 0 when there is no batch `ptr` or a graph of
/// it (no edge between two: validate, independent_blocks) does not fit in shared memory.
std::size_t staged_smem(const std::vector<node_t>& ptr, ScoreKind kind, int H, int D, std::size_t optin) {
  if (ptr.empty()) return 0;
  node_t widest = 0;
  for (std::size_t i = 0; i + 1 < ptr.size(); ++i) widest = std::max(widest, ptr[i + 1] - ptr[i]);
  const std::size_t bytes = std::max<std::size_t>(16, widest * staged_floats(kind, H, D) * sizeof(float));
  return bytes <= optin ? bytes : 0;
}

/// Whether Dense can run a plan, and what Auto's rule reads.
struct DenseFit {
  std::string why;  ///< empty: Dense can run
  BatchStats batch;
  int max_nodes[detail::kDenseBuckets] = {};
};

/// Dense needs the GT, AGNN (D <= kDenseMaxCosineDim) or GAT score, D % 32 == 0 (S takes d in
/// blocks of 16, PV writes 32-column chunks), graphs of at most kDenseMaxNodes nodes (the batch
/// `ptr` has no edge between two: validate, independent_blocks), rows of at most
/// kDenseMaxDegree edges, and each bucket's largest graph in shared memory with one region.
/// The cheap checks come first, so that a large graph is turned down without reading its edges.
DenseFit dense_fit(const HostGraph& g, const std::vector<node_t>& ptr, ScoreKind kind, int H, int D,
                   std::size_t optin) {
  DenseFit f;
  const auto fail = [&](std::string why) {
    f.why = std::move(why);
    return f;
  };
  if (ptr.empty()) return fail("needs a batch of square graphs, not a bipartite graph");
  if (kind == ScoreKind::GATv2) return fail("computes the GT, AGNN and GAT scores, not GATv2");
  if (D % 32 != 0) return fail("needs D a multiple of 32, got " + std::to_string(D));
  if (kind == ScoreKind::AGNN && D > detail::kDenseMaxCosineDim)
    return fail("computes the AGNN score at D <= " + std::to_string(detail::kDenseMaxCosineDim) + " only, got " +
                std::to_string(D));
  double squares = 0, graphs = 0;
  for (std::size_t i = 0; i + 1 < ptr.size(); ++i) {
    const node_t n = ptr[i + 1] - ptr[i];
    if (n > detail::kDenseMaxNodes)
      return fail("needs a batch of graphs of at most " + std::to_string(detail::kDenseMaxNodes) + " nodes; graph " +
                  std::to_string(i) + " has " + std::to_string(n));
    if (n == 0) continue;
    const int b = detail::dense_bucket(n);
    f.max_nodes[b] = std::max(f.max_nodes[b], n);
    squares += double(n) * n, graphs += 1;
  }
  for (const int nodes : f.max_nodes) {
    const std::size_t bytes = detail::dense_smem_bytes(kind, nodes, H, D, true);
    if (nodes > 0 && bytes > optin)
      return fail("needs " + std::to_string(bytes) + " bytes of shared memory for graphs of " + std::to_string(nodes) +
                  " nodes at D = " + std::to_string(D) + ", the device allows " + std::to_string(optin));
  }
  for (node_t v = 0; v < g.num_nodes; ++v)
    if (degree(g, v) > detail::kDenseMaxDegree)
      return fail("takes rows of at most " + std::to_string(detail::kDenseMaxDegree) + " edges; node " +
                  std::to_string(v) + " has " + std::to_string(degree(g, v)));
  f.batch.density = squares > 0 ? double(g.num_edges()) / squares : 0;
  f.batch.mean_nodes = graphs > 0 ? g.num_nodes / graphs : 0;
  return f;
}

/// Dense's arrays (dense.cuh) on the host, for a batch dense_fit accepted.
struct DenseHost {
  std::vector<std::uint32_t> mask;
  std::vector<std::int64_t> mask_off;
  std::vector<std::uint16_t> first;
  std::vector<std::int64_t> first_off;  ///< empty when no graph has duplicate edges
  std::vector<std::uint16_t> order;
  std::vector<int> bucket[detail::kDenseBuckets];  ///< graph ids, largest first
};

DenseHost dense_host(const HostGraph& g, const std::vector<node_t>& ptr) {
  const int G = int(ptr.size()) - 1;
  DenseHost d;
  d.mask_off.resize(G);
  d.first_off.assign(G, -1);
  d.order.resize(g.num_edges());
  bool any_dup = false;
  std::vector<int> rank;
  for (int i = 0; i < G; ++i) {
    const node_t n0 = ptr[i];
    const int n = ptr[i + 1] - n0, nw = (n + 31) / 32;
    d.mask_off[i] = std::int64_t(d.mask.size());
    d.mask.resize(d.mask.size() + std::size_t(n) * nw, 0u);
    std::uint32_t* m = d.mask.data() + d.mask_off[i];
    bool dup = false;
    for (int v = 0; v < n; ++v)
      for (edge_t e = g.row_ptr[n0 + v]; e < g.row_ptr[n0 + v + 1]; ++e) {
        const int u = g.src[e] - n0;
        std::uint32_t& w = m[std::size_t(v) * nw + u / 32];
        dup |= (w >> (u % 32)) & 1u;
        w |= 1u << (u % 32);
      }
    if (dup) {
      any_dup = true;
      d.first_off[i] = std::int64_t(d.first.size());
      d.first.resize(d.first.size() + std::size_t(n) * (n + 1));
    }
    // Each row's edges by source (a counting sort, stable): rank[u] = edges from sources below u.
    for (int v = 0; v < n; ++v) {
      const edge_t a = g.row_ptr[n0 + v], b = g.row_ptr[n0 + v + 1];
      rank.assign(n + 1, 0);
      for (edge_t e = a; e < b; ++e) ++rank[g.src[e] - n0 + 1];
      for (int u = 0; u < n; ++u) rank[u + 1] += rank[u];
      if (dup) std::copy(rank.begin(), rank.end(), d.first.begin() + d.first_off[i] + std::size_t(v) * (n + 1));
      for (edge_t e = a; e < b; ++e) d.order[a + rank[g.src[e] - n0]++] = std::uint16_t(e - a);
    }
    if (n > 0) d.bucket[detail::dense_bucket(n)].push_back(i);
  }
  if (!any_dup) d.first_off.clear();
  for (auto& b : d.bucket)  // largest first: the long blocks start early, short ones fill the tail
    std::stable_sort(b.begin(), b.end(), [&](int x, int y) { return ptr[x + 1] - ptr[x] > ptr[y + 1] - ptr[y]; });
  return d;
}

/// The CUDA-native counterpart of piece_edges (schedule.hpp): rows of PMF and Online above this
/// many edges are cut into pieces of at most this many. A piece is about half a warp's share of
/// the edges (E / (SMs * 32 resident warps)): one warp covers a row several times more slowly
/// per edge than a full SM covers its warps' shares, so longer pieces would finish last. Online also splits the moderately heavy rows of small
/// graphs, whose time is that of their longest row: beyond 32 edges, or 16 when every row fits
/// in one wave of resident warps (H100: cora and citeseer backward 13-20% faster at 16, forward
/// up to 9%; pubmed, five waves, 0-4% slower at 16; 8 slower everywhere).
edge_t native_piece_edges(Strategy s, edge_t E, node_t N, int sms) {
  constexpr int kResidentWarps = 32;  // per SM: Online's and the walks' launch bounds, 64 registers
  const bool one_wave = std::int64_t(N) <= std::int64_t(kResidentWarps) * sms;
  const edge_t shortest = s == Strategy::PMF ? 128 : one_wave ? 16 : 32;
  return std::max<edge_t>(shortest, E / (2 * kResidentWarps * edge_t(sms)));
}

/// Online's row statistic (plan_impl.hpp): rows of a warp wait for the heaviest, so with
/// uneven degrees slices of one row balance better; with even ones several rows per warp waste
/// nothing and save the slices' merge. Measured on the H100 at D = 16 and 32 (docs/cuda.md).
double uneven_mean(const std::vector<edge_t>& ptr, edge_t split) {
  const WholeDegrees d = whole_degrees(ptr, split);
  return d.uneven() ? d.mean : 0;
}

/// What Auto (choose_strategy) reads of this device: every strategy but Dense and Staged,
/// which only where their limits allow, and the shared memory a block may ask for, where any
/// D's accumulator fits, so Auto takes Online wherever Dense does not pay. Online was the
/// fastest of the others in all 80 (graph, model, H x D) cases measured on the H100
/// (docs/cuda.md, "How Auto decides"): SMMF, PMF and Unfused move a superset of its bytes in
/// more launches, and Staged, which reads each edge's rows from shared memory with a warp-wide
/// reduction, ran 2x slower on PATTERN; a cost model between Online and Staged only ever
/// preferred Staged on tiny batches, by one launch, so it was dropped.
DeviceFacts device_facts(const DenseFit& dense, std::size_t staged_smem, std::size_t smem_optin) {
  unsigned strategies = kPortableStrategies;
  if (dense.why.empty()) strategies |= strategy_bit(Strategy::Dense);
  if (staged_smem > 0) strategies |= strategy_bit(Strategy::Staged);
  return {strategies, smem_optin};
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

SmmfPartition smmf_partition(const HostGraph& g, int H, int D, int sms, std::size_t optin) {
  constexpr int kMaxRows = 4 * kSmmfWarps;
  const int NW = kSmmfWarps;
  const edge_t E = g.num_edges();
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
  for (node_t v = 0; v < g.num_nodes; ++v) {
    const edge_t a = g.row_ptr[v], d = degree(g, v);
    if (d > wide) {
      if (open.r1 > open.r0) add(open);
      const edge_t n = (d + budget - 1) / budget;
      if (n > 1) p.split.push_back({v, p.slots, int(n)});
      for (edge_t i = 0; i < n; ++i)
        add({a + d * i / n, a + d * (i + 1) / n, v, v + 1, n > 1 ? p.slots++ : -1, 1});
      open = {g.row_ptr[v + 1], g.row_ptr[v + 1], v + 1, v + 1, -1, 0};
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

Plan::Impl::~Impl() {
  for (void* p : owned) cudaFree(p);  // no throw from a destructor
}

template <class T>
T* Plan::Impl::upload(const T* host, std::size_t n) const {
  if (n == 0) return nullptr;
  void* d = nullptr;
  DFGNN_CUDA(cudaMalloc(&d, n * sizeof(T)));
  owned.push_back(d);
  owned_bytes += n * sizeof(T);
  DFGNN_CUDA(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(d);
}

float* Plan::Impl::workspace(std::size_t floats) const {
  if (floats == 0) return nullptr;
  void* d = nullptr;
  DFGNN_CUDA(cudaMalloc(&d, floats * sizeof(float)));
  owned.push_back(d);
  owned_bytes += floats * sizeof(float);
  return static_cast<float*>(d);
}

/// The first backward downloads the graph to transpose it: forward-only plans skip the
/// transposition and its 12 (rows first), 20 (columns first) or 28 (GT, both) bytes per edge on
/// the device.
const BackwardData& Plan::Impl::backward() const {
  if (bwd) return *bwd;
  auto b = std::make_unique<BackwardData>();
  const std::size_t N = std::size_t(graph.num_nodes), E = std::size_t(graph.num_edges);
  const auto download = [](auto& host, const auto* device, std::size_t n) {
    host.resize(n);
    if (n > 0) DFGNN_CUDA(cudaMemcpy(host.data(), device, n * sizeof(host[0]), cudaMemcpyDeviceToHost));
  };
  HostGraph g;
  g.num_nodes = graph.num_nodes;
  g.num_src_nodes = op.src_nodes;
  download(g.row_ptr, graph.row_ptr, N + 1);
  download(g.src, graph.src, E);
  // The plan's own (validated) structure, without the destinations, edge ids and stats that
  // transpose does not read: 4 bytes per edge on the host besides the CSC.
  const HostCsc csc = dfgnn::detail::transpose_of_valid(g);
  b->col_ptr = upload(csc.col_ptr.data(), csc.col_ptr.size());
  b->col_dst = upload(csc.dst.data(), csc.dst.size());
  // What the score kind needs: its orders and its partials' widths.
  struct Needs {
    bool rows_first, cols_first;
    int row_width, col_width, param_width;
  };
  const Needs need = visit_model(kind, [&](auto model) {
    using S = detail::ScoreOf<decltype(model)>;
    return Needs{detail::kRowsFirst<S>, detail::kColsFirst<S>, detail::pad4(detail::row_width<S>(dim)),
                 detail::pad4(detail::col_width<S>(dim)), detail::param_width<S>(dim)};
  });
  if (need.rows_first) {
    std::vector<edge_t> csc_pos(E);
    dfgnn::detail::parallel_blocks(std::int64_t(E), 1 << 20, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) csc_pos[csc.csr_edge[c]] = c;
    });
    b->csc_pos = upload(csc_pos.data(), E);
  }
  if (need.cols_first) b->csr_pos = upload(csc.csr_edge.data(), E);
  // The caller's edge ids in CSC order: the scoring column walk's (edge values, dropout, GAT's
  // edge scores) and GATv2's column walk's, which reads the edge gradient there. Where the
  // caller's order is the CSR's (no edge ids kept) they are the CSR positions.
  if (need.cols_first || kind == ScoreKind::GATv2) {
    if (graph.edge_id == nullptr) {
      b->col_edge_id = b->csr_pos ? b->csr_pos : upload(csc.csr_edge.data(), E);
    } else {
      std::vector<edge_t> edge_id, col_edge_id(E);
      download(edge_id, graph.edge_id, E);
      dfgnn::detail::parallel_blocks(std::int64_t(E), 1 << 20, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) col_edge_id[c] = edge_id[csc.csr_edge[c]];
      });
      b->col_edge_id = upload(col_edge_id.data(), E);
    }
  }
  b->split = native_piece_edges(Strategy::Online, edge_t(E), node_t(N), sms);
  for (auto [ptr, seg] : {std::pair{&std::as_const(g).row_ptr, &b->rows}, std::pair{&csc.col_ptr, &b->cols}}) {
    const RowPieces rp = row_pieces(*ptr, b->split);
    seg->pieces = upload(rp.pieces.data(), rp.pieces.size());
    seg->num_pieces = seg->slots = int(rp.pieces.size());
    seg->split = upload(rp.rows.data(), rp.rows.size());
    seg->num_split = int(rp.rows.size());
    seg->uneven = whole_degrees(*ptr, b->split).uneven();
  }
  const std::size_t EH = E * heads, NH = N * heads;
  const bool agnn = kind == ScoreKind::AGNN;
  b->work.dr_q = need.rows_first ? reinterpret_cast<float2*>(workspace(2 * EH)) : nullptr;
  b->work.dr = need.cols_first ? workspace(EH) : nullptr;
  b->work.delta = need.cols_first ? workspace(NH) : nullptr;
  b->work.cos = agnn ? workspace(EH) : nullptr;
  b->work.inv_norm = agnn ? workspace(NH) : nullptr;
  b->work.row_part = workspace(std::size_t(b->rows.slots) * heads * need.row_width);
  b->work.col_part = workspace(std::size_t(b->cols.slots) * heads * need.col_width);
  const std::size_t units = N + b->rows.slots;
  b->work.param = workspace(units * heads * need.param_width);
  b->work.param_slices =
      workspace(detail::ParamSlicing(std::int64_t(units)).count * std::size_t(heads) * need.param_width);
  bwd = std::move(b);
  return *bwd;
}

namespace {

/// dst[e] = v for the edges of row v: a block per row range, a thread per edge.
__global__ void fill_destinations(const edge_t* __restrict__ row_ptr, node_t n, node_t* __restrict__ dst) {
  for (node_t v = blockIdx.x; v < n; v += gridDim.x)
    for (edge_t e = row_ptr[v] + threadIdx.x; e < row_ptr[v + 1]; e += blockDim.x) dst[e] = v;
}

}  // namespace

const DeviceGraph& Plan::Impl::with_destinations(cudaStream_t stream) const {
  if (graph.dst != nullptr) return graph;
  if (graph_with_dst.dst == nullptr) {
    graph_with_dst = graph;
    node_t* dst = reinterpret_cast<node_t*>(workspace(std::size_t(graph.num_edges)));  // 4-byte entries
    if (graph.num_edges > 0) {
      fill_destinations<<<std::min(graph.num_nodes, node_t(1) << 16), 256, 0, stream>>>(graph.row_ptr, graph.num_nodes, dst);
      DFGNN_CUDA(cudaGetLastError());
    }
    graph_with_dst.dst = dst;
  }
  return graph_with_dst;
}

bool device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

Plan::Plan(const HostGraph& g, ScoreKind kind, int heads, int dim, Strategy strategy)
    : Plan(g, DeviceGraph{}, kind, heads, dim, strategy) {}

Plan::Plan(const HostGraph& g, const DeviceGraph& device_graph, ScoreKind kind, int heads, int dim,
           Strategy strategy)
    : Plan((validate(g), g), device_graph, kind, heads, dim, strategy, ValidGraph{}) {}

Plan::Plan(const HostGraph& g, const DeviceGraph& device_graph, ScoreKind kind, int heads, int dim,
           Strategy strategy, ValidGraph)
    : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  check_named("cuda::Plan", strategy, kind);
  const node_t N = g.num_nodes;
  const edge_t E = g.num_edges();
  p.kind = kind, p.heads = heads, p.dim = dim;
  p.op = {kind, DType::F32, heads, dim, g.num_src_nodes, N, E};
  dfgnn::detail::check_op("cuda::Plan", p.op);
  if (dim > 512 || (dim % 4 != 0 && dim > 256))
    throw Error("cuda::Plan: dim " + std::to_string(dim) + " unsupported (at most 256, or 512 when a multiple of 4)");
  // The kernels' per-node byte stride H*D*4 is 32-bit (online.cuh, message_passing.cuh).
  if (std::int64_t(heads) * dim * 4 > std::numeric_limits<std::int32_t>::max())
    throw Error("cuda::Plan: heads x dim = " + std::to_string(heads) + " x " + std::to_string(dim) +
                " exceeds 2^29 features per node");
  DFGNN_CUDA(cudaGetDevice(&p.device));
  cudaDeviceProp prop;
  DFGNN_CUDA(cudaGetDeviceProperties(&prop, p.device));
  p.sms = prop.multiProcessorCount;
  p.smem_optin = prop.sharedMemPerBlockOptin;

  if (device_graph.row_ptr != nullptr || device_graph.src != nullptr) {
    if (device_graph.num_nodes != N || device_graph.num_edges != E)
      throw Error("cuda::Plan: device_graph has " + std::to_string(device_graph.num_nodes) + " nodes and " +
                  std::to_string(device_graph.num_edges) + " edges, the host graph " + std::to_string(N) +
                  " and " + std::to_string(E));
    if (device_graph.row_ptr == nullptr || (E > 0 && (!device_graph.src || !device_graph.dst || !device_graph.edge_id)))
      throw Error("cuda::Plan: device_graph has a null array");
    p.graph = device_graph;
  } else {
    // Only what every pass reads (docs/cuda.md, "Device memory"): edge ids in CSR order (a
    // graph made from a CSR, or from edges sorted by destination) are not uploaded, since the
    // kernels read position e as edge e (caller_edge); the destinations are filled on the
    // device for the first call that reads them (with_destinations).
    const bool in_order = dfgnn::detail::edges_in_csr_order(g);
    p.graph = {N, E, p.upload(g.row_ptr.data(), g.row_ptr.size()), p.upload(g.src.data(), g.src.size()), nullptr,
               in_order ? nullptr : p.upload(g.edge_id.data(), g.edge_id.size())};
  }

  const std::vector<node_t> ptr = batch_offsets(g);
  const std::size_t staged = staged_smem(ptr, kind, heads, dim, p.smem_optin);
  const DenseFit dense = strategy == Strategy::Auto || strategy == Strategy::Dense
                             ? dense_fit(g, ptr, kind, heads, dim, p.smem_optin)
                             : DenseFit{};
  if (strategy == Strategy::Auto) {
    strategy = choose_strategy(kind, heads, dim, g.stats, dense.batch, device_facts(dense, staged, p.smem_optin));
    // A plan whose Dense Auto picked runs Online for calls with edge values or dropout
    // (attention.cuh).
    p.auto_dense = strategy == Strategy::Dense;
  }
  p.strategy = strategy;
  // The edge-parallel SDDMM (SMMF's, PMF's, Unfused's; steps.cuh) reads each edge's row. Online,
  // Staged and Dense walk rows.
  if (p.graph.dst == nullptr && (strategy == Strategy::SMMF || strategy == Strategy::PMF || strategy == Strategy::Unfused))
    p.graph.dst = p.upload(g.dst.data(), g.dst.size());

  std::vector<SplitRow> split;
  int slots = 0;
  switch (strategy) {
    case Strategy::SMMF: {
      SmmfPartition smmf = smmf_partition(g, heads, dim, p.sms, p.smem_optin);
      p.blocks = p.upload(smmf.blocks.data(), smmf.blocks.size());
      p.num_blocks = int(smmf.blocks.size());
      p.smmf_smem = smmf.smem_floats * sizeof(float);
      split = std::move(smmf.split);
      slots = smmf.slots;
      break;
    }
    case Strategy::PMF:
    case Strategy::Online: {
      p.split = native_piece_edges(strategy, E, g.num_nodes, p.sms);
      RowPieces rp = row_pieces(g.row_ptr, p.split);
      p.pieces = p.upload(rp.pieces.data(), rp.pieces.size());
      p.num_pieces = int(rp.pieces.size());
      split = std::move(rp.rows);
      slots = p.num_pieces;
      if (strategy == Strategy::PMF) p.scores = p.workspace(std::size_t(E) * heads);
      if (strategy == Strategy::Online) p.online_uneven_mean = uneven_mean(g.row_ptr, p.split);
      break;
    }
    case Strategy::Unfused:
      p.scores = p.workspace(std::size_t(E) * heads);
      break;
    case Strategy::Staged: {
      if (staged == 0)
        throw Error("cuda::Plan: Staged needs a batch of square graphs (graph_ptr, or the graph's independent blocks) "
                    "whose graphs' staged features fit in " + std::to_string(p.smem_optin) + " bytes of shared memory");
      p.graph_ptr = p.upload(ptr.data(), ptr.size());
      p.num_graphs = int(ptr.size()) - 1;
      p.staged_smem = staged;
      break;
    }
    case Strategy::Dense: {
      if (!dense.why.empty()) throw Error("cuda::Plan: Dense " + dense.why);
      const DenseHost d = dense_host(g, ptr);
      detail::DenseGraphs& dg = p.dense.graphs;
      dg.graph_ptr = p.upload(ptr.data(), ptr.size());
      dg.mask = p.upload(d.mask.data(), d.mask.size());
      dg.mask_off = p.upload(d.mask_off.data(), d.mask_off.size());
      dg.first = p.upload(d.first.data(), d.first.size());
      dg.first_off = p.upload(d.first_off.data(), d.first_off.size());
      dg.order = p.upload(d.order.data(), d.order.size());
      for (int b = 0; b < detail::kDenseBuckets; ++b) {
        if (d.bucket[b].empty()) continue;
        const int nodes = dense.max_nodes[b];
        // GAT's key chunks stage one head's V at a time even where all heads' fit as many
        // blocks per SM: that was 3-5% faster at 4x32 (docs/cuda.md, "Shared memory").
        const bool shared = detail::dense_chunked(kind, dim) ||
                            detail::dense_shared_region(kind, b, nodes, heads, dim, p.smem_optin);
        p.dense.bucket[b] = {p.upload(d.bucket[b].data(), d.bucket[b].size()), int(d.bucket[b].size()),
                             detail::dense_smem_bytes(kind, nodes, heads, dim, shared), shared};
      }
      // Online's data for unaligned tensors: whole rows, so no pieces and no merge.
      p.split = std::numeric_limits<edge_t>::max();
      p.online_uneven_mean = uneven_mean(g.row_ptr, p.split);
      break;
    }
    case Strategy::Auto: break;
    default: throw Error("cuda::Plan: unknown strategy");
  }
  p.split_rows = p.upload(split.data(), split.size());
  p.num_split_rows = int(split.size());
  p.part.max = p.workspace(std::size_t(slots) * heads);
  p.part.sum = p.workspace(std::size_t(slots) * heads);
  p.part.acc = p.workspace(std::size_t(slots) * heads * dim);
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
std::size_t Plan::device_bytes() const { return impl_->owned_bytes; }
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

std::shared_ptr<const Executor> native_executor(const HostGraph& g, const edge_t* row_ptr, const node_t* src,
                                                const node_t* dst, const edge_t* edge_id, const Op& op,
                                                Strategy strategy) {
  const cuda::DeviceGraph device{g.num_nodes, g.num_edges(), row_ptr, src, dst, edge_id};
  return std::shared_ptr<const cuda::Plan>(
      new cuda::Plan(g, device, op.kind, op.heads, op.dim, strategy, cuda::Plan::ValidGraph{}));
}

}  // namespace dfgnn::detail
