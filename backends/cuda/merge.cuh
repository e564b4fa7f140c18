#pragma once
// Second, small kernel of a split: combines the (max, sum, accumulator) pieces of each super
// row in slot order (flash-decoding style), one thread per output feature. No atomics, so the
// result is the same on every run.

#include "common.cuh"

#include <dfgnn/schedule.hpp>

namespace dfgnn::cuda::detail {

/// A piece of a split row and a split row's consecutive partial slots, as the host cuts them
/// (dfgnn/schedule.hpp, shared with the Kokkos backend).
using Piece = dfgnn::RowPiece;
using SplitRow = dfgnn::SplitRow;

/// Launches the merge of `num_rows` split rows into out, and their logsumexp into lse when it is
/// not null (defined in merge.cu).
void launch_merge(cudaStream_t stream, const SplitRow* rows, int num_rows, int H, int D, const Partials& part,
                  float* out, float* lse);

}  // namespace dfgnn::cuda::detail
