#pragma once
// Second, small kernel of a split: combines the (max, sum, accumulator) pieces of each super
// row in slot order (flash-decoding style), one thread per four output features (one where
// they are not 16-byte aligned). No atomics, so the result is the same on every run.

#include "common.cuh"

#include <dfgnn/detail/schedule.hpp>

namespace dfgnn::cuda::detail {

/// A piece of a split row and a split row's consecutive partial slots, as the host cuts them
/// (dfgnn/detail/schedule.hpp, shared with the Kokkos backend).
using Piece = dfgnn::RowPiece;
using SplitRow = dfgnn::SplitRow;

/// Slots a merge thread loads before folding them in, in slot order: a split row has a few
/// (pieces are a warp's fair share of the edges), and one load in flight per thread left the
/// merges far below the copy bandwidth.
inline constexpr int kMergeAhead = 4;

/// The split row holding merge entry i (rows of `width` entries, `entries` in all), loaded
/// before wait_for_previous() for the partials. Every thread waits, one past the end too
/// (false), so that the merge grid ends only after the kernel whose partials it reads.
__device__ __forceinline__ bool split_row_then_wait(const SplitRow* rows, std::size_t i, std::size_t entries,
                                                    std::size_t width, SplitRow& r) {
  const bool mine = i < entries;
  r = mine ? rows[i / width] : SplitRow{};
  wait_for_previous();
  return mine;
}

/// Folds the `count` slots of a split row in slot order, fold(j, load(j)), with kMergeAhead
/// loads in flight.
template <class Load, class Fold>
__device__ __forceinline__ void for_slots(int count, Load load, Fold fold) {
  using X = decltype(load(0));
  for (int j0 = 0; j0 < count; j0 += kMergeAhead) {
    X x[kMergeAhead];
#pragma unroll
    for (int j = 0; j < kMergeAhead; ++j)
      if (j0 + j < count) x[j] = load(j0 + j);
#pragma unroll
    for (int j = 0; j < kMergeAhead; ++j) {
      if (j0 + j >= count) break;
      fold(j0 + j, x[j]);
    }
  }
}

/// Launches the merge of `num_rows` split rows into out (float, bf16 or f16), and their
/// logsumexp into lse when it is not null (defined in merge.cu).
template <class E>
void launch_merge(cudaStream_t stream, const SplitRow* rows, int num_rows, int H, int D, const Partials& part,
                  E* out, float* lse);

}  // namespace dfgnn::cuda::detail
