#pragma once
// The inputs of one CLI attention run and its timing, shared by the Kokkos and CUDA runners.

#include <dfgnn/dropout.hpp>
#include <dfgnn/types.hpp>

#include <vector>

namespace dfgnn::cli {

// The tensors of one model, in the order the API takes them.
struct Inputs {
  ScoreKind kind;
  std::size_t N, H, D;
  std::vector<std::vector<float>> tensors;
  std::vector<float> beta;         // AGNN
  std::vector<float> edge_values;  // [E, edge_value_heads] or empty
  int edge_value_heads = 0;
  Dropout dropout;  // of the training forward and backward (--dropout), keyed on --seed
};

/// Milliseconds of repeated runs.
struct Timing {
  double median_ms = 0, min_ms = 0;
  double plan_mib = -1;  ///< device memory the plan held after the runs (CUDA-native), MiB
};

}  // namespace dfgnn::cli
