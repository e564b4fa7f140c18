#pragma once
// Graph and plan preprocessing on the device (docs/cuda.md, "Preprocessing on the device"): the
// CSR of device edge arrays, the batch's blocks, the row statistics Auto reads, PMF's and
// Online's pieces, and Dense's adjacency. Each step runs on a stream and brings back to the host
// only the few scalars that size what comes next, so neither a graph built on the device nor a
// plan over it reads an array on the host.

#include "dense.cuh"
#include "device_memory.cuh"
#include "merge.cuh"

#include <dfgnn/detail/schedule.hpp>

#include <dfgnn/cuda.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dfgnn::cuda::detail {

/// Threads per block of the grid-stride steps.
inline constexpr int kThreads = 256;

/// Blocks of a grid-stride launch over n items.
inline unsigned grid(std::int64_t n) {
  return unsigned(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, std::int64_t(1) << 16));
}

/// Runs a CUB device algorithm: asks its scratch, then runs it on the stream.
template <class F>
void cub_run(Scratch& s, F f) {
  std::size_t bytes = 0;
  DFGNN_CUDA(f(nullptr, bytes));
  DFGNN_CUDA(f(s.alloc<unsigned char>(std::max<std::size_t>(bytes, 1)), bytes));
}

/// Sums over rows (or columns) of a pointer array: the degree statistics (DegreeStats, above
/// `threshold`) and those of the rows a thread group walks whole (at most `split` edges).
struct RowSums {
  unsigned long long max = 0, above = 0, empty = 0, whole = 0, whole_sum = 0, whole_squares = 0;
};
/// The sums, after one wait.
RowSums row_sums(cudaStream_t stream, const edge_t* ptr, node_t n, edge_t threshold, edge_t split);
DegreeStats degree_stats(const RowSums& s, node_t n, edge_t num_edges, edge_t threshold);
WholeDegrees whole_degrees(const RowSums& s);

/// The graph's independent blocks (csr.hpp's independent_blocks) as device node offsets
/// [count + 1] in `out`'s arrays; a square graph only.
struct Blocks {
  const node_t* ptr = nullptr;
  int count = 0;
};
Blocks independent_blocks(cudaStream_t stream, DeviceArrays& out, const edge_t* row_ptr, const node_t* src,
                          node_t n, edge_t num_edges);

/// What Staged's and Dense's rules read of a batch: its widest graph, the first graph above
/// kDenseMaxNodes (-1: none) and, of the others, each Dense bucket's largest graph and count,
/// the sum of n^2, the non-empty graphs, and the words of Dense's masks (n x ceil(n / 32) per graph).
struct BatchSums {
  node_t widest = 0;
  long long first_too_large = -1;
  node_t too_large_nodes = 0;
  int max_nodes[kDenseBuckets] = {};
  int count[kDenseBuckets] = {};
  unsigned long long squares = 0, graphs = 0, mask_words = 0;
};
/// BatchSums as the device counts them.
struct BatchCounters {
  unsigned long long widest, first_too_large, squares, graphs, mask_words;  // first_too_large: id << 32 | nodes
  int max_nodes[kDenseBuckets], count[kDenseBuckets];
};
/// Queues the counts of the batch with node offsets `ptr` into `out` (device; set here).
void count_batch(cudaStream_t stream, const node_t* ptr, int num_graphs, BatchCounters* out);
BatchSums batch_sums(const BatchCounters& c);
/// The sums, after one wait.
BatchSums batch_sums(cudaStream_t stream, const node_t* ptr, int num_graphs);

/// PMF's and Online's pieces of the rows above `split` edges (schedule.hpp's row_pieces), in
/// `out`'s arrays, and the degrees of the rows walked whole (Online's statistic).
struct DevicePieces {
  const Piece* pieces = nullptr;
  int num_pieces = 0;
  const SplitRow* rows = nullptr;
  int num_rows = 0;
  WholeDegrees whole;
};
DevicePieces row_pieces(cudaStream_t stream, DeviceArrays& out, const edge_t* ptr, node_t n, edge_t split);

/// Dense's arrays (dense.cuh) of a batch that dense_fit accepted, and each bucket's graph ids,
/// largest first (ties by id), in `out`'s arrays.
struct DenseArrays {
  DenseGraphs graphs;
  const int* bucket[kDenseBuckets] = {};
};
DenseArrays dense_arrays(cudaStream_t stream, DeviceArrays& out, const edge_t* row_ptr, const node_t* src, node_t n,
                         edge_t num_edges, const node_t* ptr, int num_graphs, const BatchSums& sums);

/// The CSC of a CSR (csr.hpp's transpose_of_valid: each column's edges in CSR order): the
/// column offsets [ns + 1] and each CSC edge's destination in `out`'s arrays, each CSC edge's CSR
/// position in `csr_edge_out`'s (the caller keeps it only where a pass reads it). A stable radix
/// sort by source, which needs 16 bytes per edge of scratch besides the results: false, with
/// nothing done, when the device has not that much free.
struct DeviceCsc {
  const edge_t* col_ptr = nullptr;
  const node_t* dst = nullptr;
  const edge_t* csr_edge = nullptr;
};
bool transpose(cudaStream_t stream, DeviceArrays& out, DeviceArrays& csr_edge_out, const edge_t* row_ptr,
               const node_t* src, node_t n, node_t ns, edge_t num_edges, DeviceCsc& csc);

/// inverse[perm[i]] = i.
void invert(cudaStream_t stream, const edge_t* perm, edge_t n, edge_t* inverse);
/// out[i] = from[index[i]].
void gather(cudaStream_t stream, const edge_t* from, const edge_t* index, edge_t n, edge_t* out);
void gather(cudaStream_t stream, const node_t* from, const edge_t* index, edge_t n, node_t* out);

/// Bits a radix sort of node ids below n reads.
int key_bits(node_t n);
/// x[i] = i.
void iota(cudaStream_t stream, edge_t* x, edge_t n);
void iota(cudaStream_t stream, node_t* x, node_t n);

/// Offsets of the segments of sorted keys [n + 1]: segment v starts at the first key >= v.
void offsets_of_sorted(cudaStream_t stream, const node_t* keys, edge_t num_keys, node_t n, edge_t* ptr);

/// dst[e] = v for the edges of row v.
void fill_destinations(cudaStream_t stream, const edge_t* row_ptr, node_t n, edge_t num_edges, node_t* dst);

}  // namespace dfgnn::cuda::detail

namespace dfgnn::cuda {

/// A graph built on the device: its arrays, and what its construction learnt that plans read
/// (a batch's sums; the degrees of all rows, walked whole, which Dense's fallback reads).
struct Graph::Impl {
  detail::DeviceArrays arrays;
  DeviceGraph graph;
  node_t num_src_nodes = 0;
  DegreeStats stats;
  WholeDegrees rows;
  const node_t* batch = nullptr;
  int num_graphs = 0;
  detail::BatchSums sums;  ///< the batch's sums (meaningful where `batch` is set)
};

}  // namespace dfgnn::cuda
