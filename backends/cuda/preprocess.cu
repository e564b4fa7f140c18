// The preprocessing steps of preprocess.cuh: grid-stride kernels over rows, edges or graphs,
// CUB scans and sorts, and one readback of the scalars each step needs.

#include "preprocess.cuh"

#include <dfgnn/cuda.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

namespace dfgnn::cuda::detail {

namespace {

__device__ __forceinline__ std::int64_t first_item() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t item_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

/// The row holding CSR position e: the last v with ptr[v] <= e.
__device__ __forceinline__ node_t row_of(const edge_t* ptr, node_t n, edge_t e) {
  node_t lo = 0, hi = n;  // ptr[lo] <= e < ptr[hi]
  while (hi - lo > 1) {
    const node_t mid = lo + (hi - lo) / 2;
    if (ptr[mid] <= e) lo = mid; else hi = mid;
  }
  return lo;
}

/// Sums a value over the warp; lane 0 adds it to *total.
__device__ __forceinline__ void warp_add(unsigned long long* total, unsigned long long x) {
  for (int o = kWarp / 2; o > 0; o /= 2) x += __shfl_down_sync(kFull, x, o);
  if (threadIdx.x % kWarp == 0 && x != 0) atomicAdd(total, x);
}
__device__ __forceinline__ void warp_max(unsigned long long* total, unsigned long long x) {
  for (int o = kWarp / 2; o > 0; o /= 2) x = max(x, __shfl_down_sync(kFull, x, o));
  if (threadIdx.x % kWarp == 0 && x != 0) atomicMax(total, x);
}

__global__ void row_sums_kernel(const edge_t* __restrict__ ptr, node_t n, edge_t threshold, edge_t split,
                                RowSums* __restrict__ out) {
  RowSums s;
  // A block's threads share `base`, so whole warps run the loop and join the reductions.
  for (std::int64_t base = std::int64_t(blockIdx.x) * blockDim.x; base < n; base += item_stride()) {
    const std::int64_t v = base + threadIdx.x;
    if (v < n) {
      const unsigned long long d = ptr[v + 1] - ptr[v];
      s.max = max(s.max, d);
      s.above += d > (unsigned long long)threshold;
      s.empty += d == 0;
      if (d <= (unsigned long long)split) s.whole += 1, s.whole_sum += d, s.whole_squares += d * d;
    }
  }
  warp_max(&out->max, s.max);
  warp_add(&out->above, s.above);
  warp_add(&out->empty, s.empty);
  warp_add(&out->whole, s.whole);
  warp_add(&out->whole_sum, s.whole_sum);
  warp_add(&out->whole_squares, s.whole_squares);
}

/// reach[lo] = the highest node joined to lo by an edge (csr.hpp's independent_blocks).
__global__ void reach_kernel(const edge_t* __restrict__ row_ptr, const node_t* __restrict__ src, node_t n,
                             edge_t num_edges, node_t* __restrict__ reach) {
  for (std::int64_t e = first_item(); e < num_edges; e += item_stride()) {
    const node_t v = row_of(row_ptr, n, e), u = src[e];
    atomicMax(&reach[min(u, v)], max(u, v));
  }
}

struct Max {
  __device__ __forceinline__ node_t operator()(node_t a, node_t b) const { return a > b ? a : b; }
};

template <class T>
__global__ void iota_kernel(T* __restrict__ x, T n) {
  for (std::int64_t i = first_item(); i < n; i += item_stride()) x[i] = T(i);
}

/// ends[v] = 1 where a block ends at v (nothing at or below v reaches past it); ends[n] = 0.
__global__ void block_ends(const node_t* __restrict__ far, node_t n, int* __restrict__ ends) {
  for (std::int64_t v = first_item(); v <= n; v += item_stride()) ends[v] = v < n && far[v] == v;
}

__global__ void block_bounds(const node_t* __restrict__ far, const int* __restrict__ index, node_t n,
                             node_t* __restrict__ bounds) {
  for (std::int64_t v = first_item(); v <= n; v += item_stride()) {
    if (v == 0) bounds[0] = 0;
    if (v < n && far[v] == v) bounds[index[v] + 1] = node_t(v + 1);
  }
}

__global__ void batch_sums_kernel(const node_t* __restrict__ ptr, int num_graphs, BatchCounters* __restrict__ c) {
  for (std::int64_t i = first_item(); i < num_graphs; i += item_stride()) {
    const int n = ptr[i + 1] - ptr[i];
    atomicMax(&c->widest, (unsigned long long)n);
    atomicAdd(&c->mask_words, (unsigned long long)n * ((n + 31) / 32));
    if (n > kDenseMaxNodes) {
      atomicMin(&c->first_too_large, (unsigned long long)i << 32 | unsigned(n));  // the first, with its size
    } else if (n > 0) {
      const int b = dense_bucket(n);
      atomicMax(&c->max_nodes[b], n);
      atomicAdd(&c->count[b], 1);
      atomicAdd(&c->squares, (unsigned long long)n * n);
      atomicAdd(&c->graphs, 1ull);
    }
  }
}

/// Pieces and split-row slots of each row (n + 1 entries, the last 0, so that exclusive sums end
/// in the totals), and the sums of the rows walked whole.
__global__ void count_pieces(const edge_t* __restrict__ ptr, node_t n, edge_t split, int* __restrict__ pieces,
                             int* __restrict__ rows, RowSums* __restrict__ whole) {
  RowSums s;
  // A block's threads share `base`, so whole warps run the loop and join the reductions.
  for (std::int64_t base = std::int64_t(blockIdx.x) * blockDim.x; base <= n; base += item_stride()) {
    const std::int64_t v = base + threadIdx.x;
    if (v > n) continue;
    const edge_t d = v < n ? ptr[v + 1] - ptr[v] : 0;
    pieces[v] = d > split ? int((d + split - 1) / split) : 0;
    rows[v] = d > split;
    if (v < n && d <= split) s.whole += 1, s.whole_sum += d, s.whole_squares += (unsigned long long)d * d;
  }
  warp_add(&whole->whole, s.whole);
  warp_add(&whole->whole_sum, s.whole_sum);
  warp_add(&whole->whole_squares, s.whole_squares);
}

__global__ void fill_pieces(const edge_t* __restrict__ ptr, node_t n, edge_t split, const int* __restrict__ first,
                            const int* __restrict__ row_index, Piece* __restrict__ pieces, SplitRow* __restrict__ rows) {
  for (std::int64_t v = first_item(); v < n; v += item_stride()) {
    const edge_t a = ptr[v], d = ptr[v + 1] - a;
    if (d <= split) continue;
    const edge_t count = (d + split - 1) / split;
    const int f = first[v];
    rows[row_index[v]] = {node_t(v), f, int(count)};
    for (edge_t i = 0; i < count; ++i)
      pieces[f + i] = {a + d * i / count, a + d * (i + 1) / count, node_t(v), int(f + i)};
  }
}

/// Words of each graph's mask (n x ceil(n/32)), G + 1 entries with the last 0.
__global__ void mask_words(const node_t* __restrict__ ptr, int num_graphs, std::int64_t* __restrict__ words) {
  for (std::int64_t i = first_item(); i <= num_graphs; i += item_stride()) {
    const std::int64_t n = i < num_graphs ? ptr[i + 1] - ptr[i] : 0;
    words[i] = n * ((n + 31) / 32);
  }
}

/// Sets each edge's bit of its graph's mask (a block per graph); dup[i] = 1 when graph i has an
/// edge twice.
__global__ void fill_masks(const edge_t* __restrict__ row_ptr, const node_t* __restrict__ src,
                           const node_t* __restrict__ ptr, int num_graphs, const std::int64_t* __restrict__ mask_off,
                           std::uint32_t* __restrict__ mask, int* __restrict__ dup) {
  for (int i = blockIdx.x; i < num_graphs; i += gridDim.x) {
    const node_t n0 = ptr[i], n = ptr[i + 1] - n0, nw = (n + 31) / 32;
    std::uint32_t* m = mask + mask_off[i];
    for (node_t v = threadIdx.x; v < n; v += blockDim.x)
      for (edge_t e = row_ptr[n0 + v]; e < row_ptr[n0 + v + 1]; ++e) {
        const int u = src[e] - n0;
        const std::uint32_t bit = 1u << (u % 32);
        if (atomicOr(&m[std::int64_t(v) * nw + u / 32], bit) & bit) dup[i] = 1;  // any writer writes 1
      }
  }
}

/// Entries of each duplicate graph's rank table (n x (n + 1)), G + 1 entries with the last 0.
__global__ void first_entries(const node_t* __restrict__ ptr, int num_graphs, const int* __restrict__ dup,
                              std::int64_t* __restrict__ entries) {
  for (std::int64_t i = first_item(); i <= num_graphs; i += item_stride()) {
    const std::int64_t n = i < num_graphs ? ptr[i + 1] - ptr[i] : 0;
    entries[i] = i < num_graphs && dup[i] ? n * (n + 1) : 0;
  }
}

/// first_off[i] = the table's offset, or -1 for a graph without duplicates; entry (v, u) = row
/// v's edges from sources below u (a block per graph).
__global__ void fill_first(const edge_t* __restrict__ row_ptr, const node_t* __restrict__ src,
                           const node_t* __restrict__ ptr, int num_graphs, const int* __restrict__ dup,
                           std::int64_t* __restrict__ first_off, std::uint16_t* __restrict__ first) {
  for (int i = blockIdx.x; i < num_graphs; i += gridDim.x) {
    if (!dup[i]) {
      if (threadIdx.x == 0) first_off[i] = -1;
      continue;
    }
    const node_t n0 = ptr[i], n = ptr[i + 1] - n0;
    std::uint16_t* f = first + first_off[i];
    for (std::int64_t k = threadIdx.x; k < std::int64_t(n) * (n + 1); k += blockDim.x) {
      const node_t v = node_t(k / (n + 1)), u = node_t(k % (n + 1));
      int below = 0;
      for (edge_t e = row_ptr[n0 + v]; e < row_ptr[n0 + v + 1]; ++e) below += src[e] - n0 < u;
      f[k] = std::uint16_t(below);
    }
  }
}

/// order[a + rank] = e - a: each row's edges sorted by source, stably (a thread per edge).
__global__ void fill_order(const edge_t* __restrict__ row_ptr, const node_t* __restrict__ src, node_t n,
                           edge_t num_edges, std::uint16_t* __restrict__ order) {
  for (std::int64_t e = first_item(); e < num_edges; e += item_stride()) {
    const node_t v = row_of(row_ptr, n, e);
    const edge_t a = row_ptr[v], b = row_ptr[v + 1];
    const node_t u = src[e];
    int rank = 0;
    for (edge_t x = a; x < b; ++x) rank += src[x] < u || (src[x] == u && x < e);
    order[a + rank] = std::uint16_t(e - a);
  }
}

/// Sort keys of the buckets' graph lists: bucket, then larger graphs first; empty graphs last.
__global__ void bucket_keys(const node_t* __restrict__ ptr, int num_graphs, unsigned* __restrict__ keys,
                            int* __restrict__ ids) {
  for (std::int64_t i = first_item(); i < num_graphs; i += item_stride()) {
    const int n = ptr[i + 1] - ptr[i];
    keys[i] = n == 0 ? 0xffffu : unsigned(dense_bucket(n)) << 8 | unsigned(255 - n);
    ids[i] = int(i);
  }
}

__global__ void fill_destinations_kernel(const edge_t* __restrict__ row_ptr, node_t n, node_t* __restrict__ dst) {
  for (node_t v = blockIdx.x; v < n; v += gridDim.x)
    for (edge_t e = row_ptr[v] + threadIdx.x; e < row_ptr[v + 1]; e += blockDim.x) dst[e] = v;
}

__global__ void offsets_kernel(const node_t* __restrict__ keys, edge_t num_keys, node_t n, edge_t* __restrict__ ptr) {
  for (std::int64_t p = first_item(); p <= num_keys; p += item_stride()) {
    const node_t first = p == 0 ? 0 : keys[p - 1] + 1, last = p == num_keys ? n : keys[p];
    for (node_t v = first; v <= last; ++v) ptr[v] = p;
  }
}

/// The destination of each CSC edge: the row holding its CSR position.
__global__ void csc_destinations(const edge_t* __restrict__ row_ptr, node_t n, const edge_t* __restrict__ csr_edge,
                                 edge_t num_edges, node_t* __restrict__ dst) {
  for (std::int64_t c = first_item(); c < num_edges; c += item_stride()) dst[c] = row_of(row_ptr, n, csr_edge[c]);
}

__global__ void invert_kernel(const edge_t* __restrict__ perm, edge_t n, edge_t* __restrict__ inverse) {
  for (std::int64_t i = first_item(); i < n; i += item_stride()) inverse[perm[i]] = i;
}

template <class T>
__global__ void gather_kernel(const T* __restrict__ from, const edge_t* __restrict__ index, edge_t n,
                              T* __restrict__ out) {
  for (std::int64_t i = first_item(); i < n; i += item_stride()) out[i] = from[index[i]];
}

}  // namespace

int key_bits(node_t n) {
  int bits = 1;
  while (bits < 31 && (node_t(1) << bits) < n) ++bits;
  return bits;
}

namespace {

template <class T>
void exclusive_sum(Scratch& s, T* x, std::int64_t n) {
  cub_run(s, [&](void* tmp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(tmp, bytes, x, x, n, s.stream());
  });
}

}  // namespace

RowSums row_sums(cudaStream_t stream, const edge_t* ptr, node_t n, edge_t threshold, edge_t split) {
  Scratch s(stream);
  RowSums* d = s.alloc<RowSums>(1);
  DFGNN_CUDA(cudaMemsetAsync(d, 0, sizeof(RowSums), stream));
  if (n > 0) row_sums_kernel<<<grid(n), kThreads, 0, stream>>>(ptr, n, threshold, split, d);
  DFGNN_CUDA(cudaGetLastError());
  return read_back(stream, d);
}

DegreeStats degree_stats(const RowSums& s, node_t n, edge_t num_edges, edge_t threshold) {
  DegreeStats d;
  d.threshold = threshold;
  d.max = edge_t(s.max);
  d.above_threshold = node_t(s.above);
  d.empty_rows = node_t(s.empty);
  d.mean = n ? double(num_edges) / double(n) : 0.0;
  return d;
}

WholeDegrees whole_degrees(const RowSums& s) { return whole_degrees_of(s.whole, s.whole_sum, s.whole_squares); }

Blocks independent_blocks(cudaStream_t stream, DeviceArrays& out, const edge_t* row_ptr, const node_t* src,
                          node_t n, edge_t num_edges) {
  Scratch s(stream);
  node_t* reach = s.alloc<node_t>(std::size_t(n));
  node_t* far = s.alloc<node_t>(std::size_t(n));
  int* ends = s.alloc<int>(std::size_t(n) + 1);
  iota(stream, reach, n);
  if (num_edges > 0) reach_kernel<<<grid(num_edges), kThreads, 0, stream>>>(row_ptr, src, n, num_edges, reach);
  if (n > 0)
    cub_run(s, [&](void* tmp, std::size_t& bytes) {
      return cub::DeviceScan::InclusiveScan(tmp, bytes, reach, far, Max{}, std::int64_t(n), stream);
    });
  block_ends<<<grid(std::int64_t(n) + 1), kThreads, 0, stream>>>(far, n, ends);
  exclusive_sum(s, ends, std::int64_t(n) + 1);
  DFGNN_CUDA(cudaGetLastError());
  const int count = read_back(stream, ends + n);
  node_t* bounds = out.alloc<node_t>(std::size_t(count) + 1);
  block_bounds<<<grid(std::int64_t(n) + 1), kThreads, 0, stream>>>(far, ends, n, bounds);
  DFGNN_CUDA(cudaGetLastError());
  return {bounds, count};
}

void count_batch(cudaStream_t stream, const node_t* ptr, int num_graphs, BatchCounters* out) {
  DFGNN_CUDA(cudaMemsetAsync(out, 0, sizeof(BatchCounters), stream));
  DFGNN_CUDA(cudaMemsetAsync(&out->first_too_large, 0xff, sizeof(out->first_too_large), stream));
  if (num_graphs > 0) batch_sums_kernel<<<grid(num_graphs), kThreads, 0, stream>>>(ptr, num_graphs, out);
  DFGNN_CUDA(cudaGetLastError());
}

BatchSums batch_sums(const BatchCounters& c) {
  BatchSums b;
  b.widest = node_t(c.widest);
  b.squares = c.squares;
  b.graphs = c.graphs;
  b.mask_words = c.mask_words;
  std::copy(std::begin(c.max_nodes), std::end(c.max_nodes), b.max_nodes);
  std::copy(std::begin(c.count), std::end(c.count), b.count);
  if (c.first_too_large != ~0ull) {
    b.first_too_large = (long long)(c.first_too_large >> 32);
    b.too_large_nodes = node_t(c.first_too_large & 0xffffffffu);
  }
  return b;
}

BatchSums batch_sums(cudaStream_t stream, const node_t* ptr, int num_graphs) {
  Scratch s(stream);
  BatchCounters* d = s.alloc<BatchCounters>(1);
  count_batch(stream, ptr, num_graphs, d);
  return batch_sums(read_back(stream, d));
}

DevicePieces row_pieces(cudaStream_t stream, DeviceArrays& out, const edge_t* ptr, node_t n, edge_t split) {
  Scratch s(stream);
  int* first = s.alloc<int>(std::size_t(n) + 1);
  int* row_index = s.alloc<int>(std::size_t(n) + 1);
  RowSums* whole = s.alloc<RowSums>(1);
  DFGNN_CUDA(cudaMemsetAsync(whole, 0, sizeof(RowSums), stream));
  count_pieces<<<grid(std::int64_t(n) + 1), kThreads, 0, stream>>>(ptr, n, split, first, row_index, whole);
  exclusive_sum(s, first, std::int64_t(n) + 1);
  exclusive_sum(s, row_index, std::int64_t(n) + 1);
  DFGNN_CUDA(cudaGetLastError());
  Readback r(stream);
  const int* num_pieces = r.add(first + n);
  const int* num_rows = r.add(row_index + n);
  const RowSums* sums = r.add(whole);
  r.wait();
  DevicePieces p;
  p.num_pieces = *num_pieces;
  p.num_rows = *num_rows;
  p.whole = whole_degrees(*sums);
  Piece* pieces = out.alloc<Piece>(std::size_t(p.num_pieces));
  SplitRow* rows = out.alloc<SplitRow>(std::size_t(p.num_rows));
  if (p.num_rows > 0) fill_pieces<<<grid(n), kThreads, 0, stream>>>(ptr, n, split, first, row_index, pieces, rows);
  DFGNN_CUDA(cudaGetLastError());
  p.pieces = pieces, p.rows = rows;
  return p;
}

DenseArrays dense_arrays(cudaStream_t stream, DeviceArrays& out, const edge_t* row_ptr, const node_t* src, node_t n,
                         edge_t num_edges, const node_t* ptr, int num_graphs, const BatchSums& sums) {
  Scratch s(stream);
  const int G = num_graphs;
  DenseArrays d;
  DenseGraphs& g = d.graphs;
  g.graph_ptr = ptr;
  // The masks, at offsets of the words before them (sums.mask_words in all).
  std::int64_t* mask_off = out.alloc<std::int64_t>(std::size_t(G) + 1);
  mask_words<<<grid(std::int64_t(G) + 1), kThreads, 0, stream>>>(ptr, G, mask_off);
  exclusive_sum(s, mask_off, std::int64_t(G) + 1);
  DFGNN_CUDA(cudaGetLastError());
  const std::int64_t words = std::int64_t(sums.mask_words);
  std::uint32_t* mask = out.alloc<std::uint32_t>(std::size_t(words));
  int* dup = s.alloc<int>(std::size_t(G) + 1);
  if (words > 0) DFGNN_CUDA(cudaMemsetAsync(mask, 0, std::size_t(words) * sizeof(std::uint32_t), stream));
  DFGNN_CUDA(cudaMemsetAsync(dup, 0, (std::size_t(G) + 1) * sizeof(int), stream));
  const unsigned graph_blocks = unsigned(std::clamp(G, 1, 1 << 16));
  if (G > 0) fill_masks<<<graph_blocks, kThreads, 0, stream>>>(row_ptr, src, ptr, G, mask_off, mask, dup);
  // Rank tables for the graphs with duplicate edges only; none anywhere: no table at all.
  std::int64_t* first_off = s.alloc<std::int64_t>(std::size_t(G) + 1);
  first_entries<<<grid(std::int64_t(G) + 1), kThreads, 0, stream>>>(ptr, G, dup, first_off);
  exclusive_sum(s, first_off, std::int64_t(G) + 1);
  DFGNN_CUDA(cudaGetLastError());
  const std::int64_t entries = read_back(stream, first_off + G);
  if (entries > 0) {
    std::int64_t* kept_off = out.alloc<std::int64_t>(std::size_t(G));
    DFGNN_CUDA(cudaMemcpyAsync(kept_off, first_off, std::size_t(G) * sizeof(std::int64_t), cudaMemcpyDeviceToDevice,
                               stream));
    std::uint16_t* first = out.alloc<std::uint16_t>(std::size_t(entries));
    fill_first<<<graph_blocks, kThreads, 0, stream>>>(row_ptr, src, ptr, G, dup, kept_off, first);
    g.first = first, g.first_off = kept_off;
  }
  std::uint16_t* order = out.alloc<std::uint16_t>(std::size_t(num_edges));
  if (num_edges > 0) fill_order<<<grid(num_edges), kThreads, 0, stream>>>(row_ptr, src, n, num_edges, order);
  g.mask = mask, g.mask_off = mask_off, g.order = order;
  // The buckets' graph lists: one stable sort by (bucket, larger first).
  unsigned* keys = s.alloc<unsigned>(std::size_t(G));
  unsigned* sorted_keys = s.alloc<unsigned>(std::size_t(G));
  int* ids = s.alloc<int>(std::size_t(G));
  int* sorted = out.alloc<int>(std::size_t(G));
  if (G > 0) {
    bucket_keys<<<grid(G), kThreads, 0, stream>>>(ptr, G, keys, ids);
    cub_run(s, [&](void* tmp, std::size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, keys, sorted_keys, ids, sorted, G, 0, 16, stream);
    });
  }
  DFGNN_CUDA(cudaGetLastError());
  int before = 0;
  for (int b = 0; b < kDenseBuckets; ++b) {
    if (sums.count[b] > 0) d.bucket[b] = sorted + before;
    before += sums.count[b];
  }
  return d;
}

void offsets_of_sorted(cudaStream_t stream, const node_t* keys, edge_t num_keys, node_t n, edge_t* ptr) {
  offsets_kernel<<<grid(num_keys + 1), kThreads, 0, stream>>>(keys, num_keys, n, ptr);
  DFGNN_CUDA(cudaGetLastError());
}

bool transpose(cudaStream_t stream, DeviceArrays& out, DeviceArrays& csr_edge_out, const edge_t* row_ptr,
               const node_t* src, node_t n, node_t ns, edge_t num_edges, DeviceCsc& csc) {
  const edge_t E = num_edges;
  const int bits = key_bits(ns);
  std::size_t sort_bytes = 0;
  cub::DoubleBuffer<node_t> no_keys;
  cub::DoubleBuffer<edge_t> no_values;
  DFGNN_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, no_keys, no_values, E, 0, bits, stream));
  std::size_t free = 0, total = 0;
  DFGNN_CUDA(cudaMemGetInfo(&free, &total));
  const double need = double(E) * (2 * sizeof(node_t) + sizeof(edge_t)) + double(sort_bytes);
  const double results = double(E) * (sizeof(edge_t) + sizeof(node_t)) + double(ns + 1) * sizeof(edge_t);
  if (need + results > 0.9 * double(free)) return false;
  Scratch s(stream);
  edge_t* order = csr_edge_out.alloc<edge_t>(std::size_t(E));
  node_t* keys[2] = {s.alloc<node_t>(std::size_t(E)), s.alloc<node_t>(std::size_t(E))};
  edge_t* alt = s.alloc<edge_t>(std::size_t(E));
  if (E > 0) {
    DFGNN_CUDA(cudaMemcpyAsync(keys[0], src, std::size_t(E) * sizeof(node_t), cudaMemcpyDeviceToDevice, stream));
    iota(stream, order, E);
    cub::DoubleBuffer<node_t> k(keys[0], keys[1]);
    cub::DoubleBuffer<edge_t> v(order, alt);
    DFGNN_CUDA(cub::DeviceRadixSort::SortPairs(s.alloc<unsigned char>(std::max<std::size_t>(sort_bytes, 1)), sort_bytes,
                                               k, v, E, 0, bits, stream));
    if (v.Current() != order)
      DFGNN_CUDA(cudaMemcpyAsync(order, v.Current(), std::size_t(E) * sizeof(edge_t), cudaMemcpyDeviceToDevice, stream));
    keys[0] = k.Current();
  }
  edge_t* col_ptr = out.alloc<edge_t>(std::size_t(ns) + 1);
  offsets_of_sorted(stream, keys[0], E, ns, col_ptr);
  node_t* dst = out.alloc<node_t>(std::size_t(E));
  if (E > 0) csc_destinations<<<grid(E), kThreads, 0, stream>>>(row_ptr, n, order, E, dst);
  DFGNN_CUDA(cudaGetLastError());
  csc = {col_ptr, dst, order};
  return true;
}

namespace {

template <class T>
void iota_of(cudaStream_t stream, T* x, T n) {
  if (n > 0) iota_kernel<<<grid(n), kThreads, 0, stream>>>(x, n);
  DFGNN_CUDA(cudaGetLastError());
}

template <class T>
void gather_of(cudaStream_t stream, const T* from, const edge_t* index, edge_t n, T* out) {
  if (n > 0) gather_kernel<<<grid(n), kThreads, 0, stream>>>(from, index, n, out);
  DFGNN_CUDA(cudaGetLastError());
}

}  // namespace

void iota(cudaStream_t stream, edge_t* x, edge_t n) { iota_of(stream, x, n); }
void iota(cudaStream_t stream, node_t* x, node_t n) { iota_of(stream, x, n); }

void invert(cudaStream_t stream, const edge_t* perm, edge_t n, edge_t* inverse) {
  if (n > 0) invert_kernel<<<grid(n), kThreads, 0, stream>>>(perm, n, inverse);
  DFGNN_CUDA(cudaGetLastError());
}

void gather(cudaStream_t stream, const edge_t* from, const edge_t* index, edge_t n, edge_t* out) {
  gather_of(stream, from, index, n, out);
}
void gather(cudaStream_t stream, const node_t* from, const edge_t* index, edge_t n, node_t* out) {
  gather_of(stream, from, index, n, out);
}

void fill_destinations(cudaStream_t stream, const edge_t* row_ptr, node_t n, edge_t num_edges, node_t* dst) {
  if (num_edges == 0) return;
  fill_destinations_kernel<<<std::min(n, node_t(1) << 16), 256, 0, stream>>>(row_ptr, n, dst);
  DFGNN_CUDA(cudaGetLastError());
}

}  // namespace dfgnn::cuda::detail
