// cuda::Graph: the destination-major CSR of device edge arrays, built on the device (a stable
// radix sort by destination, skipped when the edges come sorted), checked there, with its degree
// statistics; the host sees only sizes, the statistics and the first fault (docs/cuda.md,
// "Preprocessing on the device").

#include "preprocess.cuh"

#include <dfgnn/csr.hpp>
#include <dfgnn/cuda.hpp>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <limits>
#include <string>

namespace dfgnn::cuda {

namespace {

using detail::download;
using detail::grid;
using detail::kThreads;
using detail::Scratch;

constexpr unsigned long long kNone = ~0ull;

/// The first fault of each kind (kNone: none) and whether the edges come unsorted by destination.
struct Faults {
  unsigned long long edge, offset, crossing, unsorted;
};

/// Checks every edge's ids and narrows them to node_t; notes whether dst decreases anywhere.
__global__ void check_edges(const std::int64_t* __restrict__ src, const std::int64_t* __restrict__ dst, edge_t num_edges,
                            node_t ns, node_t n, node_t* __restrict__ src32, node_t* __restrict__ dst32,
                            Faults* __restrict__ f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < num_edges;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t u = src[i], v = dst[i];
    if (u < 0 || u >= ns || v < 0 || v >= n) {
      atomicMin(&f->edge, (unsigned long long)i);
      continue;
    }
    src32[i] = node_t(u), dst32[i] = node_t(v);
    if (i > 0 && v < dst[i - 1]) atomicMin(&f->unsorted, 0ull);
  }
}

/// Checks the batch offsets (from 0 to n, non-decreasing) and narrows them.
__global__ void check_offsets(const std::int64_t* __restrict__ ptr, std::int64_t num_graphs, node_t n,
                              node_t* __restrict__ ptr32, Faults* __restrict__ f) {
  for (std::int64_t j = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j <= num_graphs;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t p = ptr[j];
    const bool bad = p < 0 || p > n || (j == 0 && p != 0) || (j == num_graphs && p != n) || (j > 0 && p < ptr[j - 1]);
    if (bad) atomicMin(&f->offset, (unsigned long long)j);
    ptr32[j] = node_t(bad ? 0 : p);
  }
}

/// Notes the first edge whose ends lie in two graphs of the batch (offsets and ids checked).
__global__ void check_crossing(const node_t* __restrict__ src, const node_t* __restrict__ dst, edge_t num_edges,
                               const node_t* __restrict__ ptr, std::int64_t num_graphs, Faults* __restrict__ f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < num_edges;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const node_t v = dst[i];
    std::int64_t lo = 0, hi = num_graphs;  // the graph of v: ptr[lo] <= v < ptr[lo + 1]
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (ptr[mid] <= v) lo = mid; else hi = mid;
    }
    if (src[i] < ptr[lo] || src[i] >= ptr[lo + 1]) atomicMin(&f->crossing, (unsigned long long)i);
  }
}

}  // namespace

Graph::Graph(cudaStream_t stream, node_t num_src_nodes, node_t num_nodes, edge_t num_edges, const std::int64_t* src,
             const std::int64_t* dst, const std::int64_t* batch, std::int64_t num_graphs)
    : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  if (num_src_nodes < 0 || num_nodes < 0)
    throw Error("graph: negative node count " + std::to_string(std::min(num_src_nodes, num_nodes)));
  if (num_edges < 0) throw Error("graph: num_edges must be >= 0");
  if (num_edges > 0 && (src == nullptr || dst == nullptr)) throw Error("graph: null edge arrays");
  if (batch != nullptr && num_src_nodes != num_nodes)
    throw Error("graph: graph offsets (a batch) need a square graph, not a bipartite one");
  if (batch != nullptr && (num_graphs < 0 || num_graphs >= std::int64_t(1) << 31))
    throw Error("graph: the batch has " + std::to_string(num_graphs) + " graphs, outside [0, 2^31)");
  const edge_t E = num_edges;
  Scratch s(stream);
  Faults* faults = s.alloc<Faults>(1);
  DFGNN_CUDA(cudaMemsetAsync(faults, 0xff, sizeof(Faults), stream));
  node_t* src32 = g.arrays.alloc<node_t>(std::size_t(E));
  node_t* dst32 = s.alloc<node_t>(std::size_t(E));
  if (E > 0) check_edges<<<grid(E), kThreads, 0, stream>>>(src, dst, E, num_src_nodes, num_nodes, src32, dst32, faults);
  node_t* ptr32 = nullptr;
  if (batch != nullptr) {
    ptr32 = g.arrays.alloc<node_t>(std::size_t(num_graphs) + 1);
    check_offsets<<<grid(num_graphs + 1), kThreads, 0, stream>>>(batch, num_graphs, num_nodes, ptr32, faults);
    if (E > 0 && num_graphs > 0)
      check_crossing<<<grid(E), kThreads, 0, stream>>>(src32, dst32, E, ptr32, num_graphs, faults);
  }
  // The batch's sums (Staged's and Dense's rules) come back with the checks.
  detail::BatchCounters* counters = batch != nullptr ? s.alloc<detail::BatchCounters>(1) : nullptr;
  if (batch != nullptr) detail::count_batch(stream, ptr32, int(num_graphs), counters);
  DFGNN_CUDA(cudaGetLastError());
  detail::Readback checks(stream);
  const Faults& f = *checks.add(faults);
  const detail::BatchCounters* batch_counters = batch != nullptr ? checks.add(counters) : nullptr;
  checks.wait();
  if (f.edge != kNone) {
    const std::int64_t u = download(stream, src + f.edge, 1)[0], v = download(stream, dst + f.edge, 1)[0];
    const bool bad_source = u < 0 || u >= num_src_nodes;
    throw Error(std::string("graph: ") + (bad_source ? "source" : "destination") + " " +
                std::to_string(bad_source ? u : v) + " of edge " + std::to_string(f.edge) + " is outside [0, " +
                std::to_string(bad_source ? num_src_nodes : num_nodes) + ")");
  }
  if (f.offset != kNone)
    throw Error("graph: graph offsets must run from 0 to num_nodes = " + std::to_string(num_nodes) +
                " without decreasing (offset " + std::to_string(f.offset) + " is " +
                std::to_string(download(stream, batch + f.offset, 1)[0]) + ")");
  if (f.crossing != kNone)
    throw Error("graph: edge " + std::to_string(f.crossing) + " joins two graphs of the batch (" +
                std::to_string(download(stream, src + f.crossing, 1)[0]) + " -> " +
                std::to_string(download(stream, dst + f.crossing, 1)[0]) + ")");
  // Stable by destination, so each row keeps the caller's order (graph_from_edges).
  const node_t* keys = dst32;
  edge_t* edge_id = nullptr;
  node_t* csr_src = src32;
  if (f.unsorted != kNone) {
    edge_t* order = s.alloc<edge_t>(std::size_t(E));
    node_t* sorted = s.alloc<node_t>(std::size_t(E));
    edge_id = g.arrays.alloc<edge_t>(std::size_t(E));
    csr_src = g.arrays.alloc<node_t>(std::size_t(E));
    detail::iota(stream, order, E);
    detail::cub_run(s, [&](void* tmp, std::size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, dst32, sorted, order, edge_id, E, 0,
                                             detail::key_bits(num_nodes), stream);
    });
    detail::gather(stream, src32, edge_id, E, csr_src);
    keys = sorted;
  }
  edge_t* row_ptr = g.arrays.alloc<edge_t>(std::size_t(num_nodes) + 1);
  detail::offsets_of_sorted(stream, keys, E, num_nodes, row_ptr);
  g.graph = {num_nodes, E, row_ptr, csr_src, nullptr, edge_id};
  g.num_src_nodes = num_src_nodes;
  // Every row counts as walked whole: Dense's fallback reads those degrees.
  const detail::RowSums rows = detail::row_sums(stream, row_ptr, num_nodes, kDefaultHeavyThreshold,
                                                std::numeric_limits<edge_t>::max());
  g.stats = detail::degree_stats(rows, num_nodes, E, kDefaultHeavyThreshold);
  g.rows = detail::whole_degrees(rows);
  g.batch = ptr32;
  g.num_graphs = int(num_graphs);
  if (batch_counters != nullptr) g.sums = detail::batch_sums(*batch_counters);
}

Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

const DeviceGraph& Graph::device() const { return impl_->graph; }
node_t Graph::num_src_nodes() const { return impl_->num_src_nodes; }
node_t Graph::num_nodes() const { return impl_->graph.num_nodes; }
edge_t Graph::num_edges() const { return impl_->graph.num_edges; }
const DegreeStats& Graph::stats() const { return impl_->stats; }
const node_t* Graph::batch() const { return impl_->batch; }
int Graph::num_graphs() const { return impl_->num_graphs; }
std::size_t Graph::device_bytes() const { return impl_->arrays.bytes(); }

HostGraph Graph::host(cudaStream_t stream) const {
  const Impl& g = *impl_;
  const std::size_t E = std::size_t(g.graph.num_edges);
  HostGraph h = graph_from_csr(g.num_src_nodes, g.graph.num_nodes,
                               download(stream, g.graph.row_ptr, std::size_t(g.graph.num_nodes) + 1),
                               download(stream, g.graph.src, E));
  if (g.graph.edge_id != nullptr) h.edge_id = download(stream, g.graph.edge_id, E);
  if (g.batch != nullptr) h.graph_ptr = download(stream, g.batch, std::size_t(g.num_graphs) + 1);
  return h;
}

}  // namespace dfgnn::cuda
