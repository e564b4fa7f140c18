#pragma once
// What a cuda::Plan caches: the resolved strategy, the device's limits, the SMMF block list,
// PMF's and Online's pieces of split rows, the batched graphs' offsets, Dense's adjacency and
// buckets, and the workspace (scores, partials); and what its constructors build it from.

#include "backward.cuh"
#include "dense.cuh"
#include "device_memory.cuh"
#include "merge.cuh"
#include "pmf.cuh"
#include "smmf.cuh"

#include <dfgnn/cuda.hpp>

#include <memory>
#include <vector>

namespace dfgnn::cuda {

/// The backward's data: the CSC (column offsets, each CSC edge's destination), where the
/// scoring walk's stores go for the orders the score kind has (rows first: each CSR edge's CSC
/// position; columns first: each CSC edge's CSR position), each CSC edge's caller's edge id
/// (columns first, and GATv2's column walk with edge features), the pieces of rows and columns
/// above `split` edges, and the workspace.
struct BackwardData {
  const edge_t* col_ptr = nullptr;
  const node_t* col_dst = nullptr;
  const edge_t* csc_pos = nullptr;
  const edge_t* csr_pos = nullptr;
  const edge_t* col_edge_id = nullptr;
  edge_t split = 0;
  detail::SplitSegments rows, cols;
  detail::BackwardWork work;
};

struct Plan::Impl {
  Op op;
  ScoreKind kind;
  int heads, dim;
  Strategy strategy;
  /// Dense picked by Auto: calls with edge values or dropout run Online instead, since Dense's
  /// edge-wise kernel was 1.4-4x slower than Online there (docs/cuda.md, "How Auto decides").
  bool auto_dense = false;
  DeviceGraph graph;
  int device = 0;
  int sms = 0;
  std::size_t smem_optin = 0;      ///< bytes of dynamic shared memory a block may ask for
  mutable detail::DeviceArrays mem;  ///< device allocations freed with the plan

  // SMMF: one block per entry.
  const detail::SmmfBlock* blocks = nullptr;
  int num_blocks = 0;
  std::size_t smmf_smem = 0;       ///< bytes, the largest block's need
  // PMF and Online: rows above `split` edges go as pieces; Unfused and PMF: scores [E, H].
  const detail::Piece* pieces = nullptr;
  int num_pieces = 0;
  edge_t split = 0;
  float* scores = nullptr;
  // Online: the mean degree of the rows a warp takes whole when their degrees are uneven
  // (coefficient of variation above kUnevenDegrees), else 0.
  double online_uneven_mean = 0;
  // Split rows of SMMF, PMF or Online and their partial slots.
  const detail::SplitRow* split_rows = nullptr;
  int num_split_rows = 0;
  detail::Partials part;
  // Staged: one block per graph of the batch.
  const node_t* graph_ptr = nullptr;
  int num_graphs = 0;
  std::size_t staged_smem = 0;
  // Dense: the batch's adjacency and the size buckets' launches. A Dense plan also holds
  // Online's data for whole rows (no pieces), which runs for tensors not 16-byte aligned.
  detail::DenseData dense;
  // Backward: built by the first backward, so forward-only plans hold no CSC.
  mutable std::unique_ptr<BackwardData> bwd;

  /// Copies `n` elements to a new device allocation owned by the plan.
  template <class T>
  T* upload(const T* host, std::size_t n) const {
    return mem.upload(host, n);
  }
  float* workspace(std::size_t floats) const { return mem.alloc<float>(floats); }
  /// The backward's data, built once on `stream` (by the first backward or prepare_backward)
  /// and waited for.
  const BackwardData& backward(cudaStream_t stream) const;
  /// The graph with its destination per edge (`dst`), which only the edge-parallel SDDMM and
  /// the attention weights read: an Online, Staged or Dense plan's own copy fills it on the
  /// device at the first call for weights (docs/cuda.md, "Device memory").
  const DeviceGraph& with_destinations(cudaStream_t stream) const;
  mutable DeviceGraph graph_with_dst;  ///< with_destinations' graph, once filled
};

/// Warps per block of the SMMF kernel.
inline constexpr int kSmmfWarps = 8;

namespace detail {
/// A checked call of `Model` on the plan (one specialisation per model, in its .cu file: the
/// score functor and gradients it makes of the call's tensors).
template <class Model>
void forward(const Plan& plan, const Call& call);
template <class Model>
void backward(const Plan& plan, const Call& call);
}  // namespace detail

}  // namespace dfgnn::cuda
