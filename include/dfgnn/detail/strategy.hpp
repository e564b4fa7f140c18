#pragma once
/// \file strategy.hpp
/// Every strategy decision of both backends, in one module (docs/design.md, "How Auto decides"):
/// which strategies an element type runs, Auto's cost model, whether Dense can run a batch, which
/// kernels a call of a Dense plan takes, the backward's order and the length of a row piece.
/// Each backend hands it the facts of its device and decides nothing on its own. Kokkos- and
/// CUDA-free.

#include <dfgnn/csr.hpp>
#include <dfgnn/op.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dfgnn::detail {

inline constexpr unsigned strategy_bit(Strategy s) { return 1u << int(s); }
/// The strategies both backends run; Staged and Dense are the CUDA-native backend's alone.
inline constexpr unsigned kPortableStrategies = strategy_bit(Strategy::SMMF) | strategy_bit(Strategy::PMF) |
                                                strategy_bit(Strategy::Unfused) | strategy_bit(Strategy::Online);

/// A batch of small graphs as Dense's rule reads it: its edges over the sum of n^2 over the
/// graphs (the share of (row, node) pairs that are edges) and the mean nodes of a non-empty
/// graph. Zero for a graph Dense cannot run.
struct BatchStats {
  double density = 0, mean_nodes = 0;
};

/// What a backend offers an op and graph on its device: the strategies it runs for them (Dense
/// and Staged only where their kernels' limits allow it), those of them that take two-byte
/// elements, the team scratch or shared memory (bytes) free for a row's scores or a thread
/// group's accumulator, the batch Dense would run, and why each strategy it does not offer
/// cannot run (the text of the Error an explicit request for it gets, after "who: ").
struct DeviceFacts {
  unsigned strategies = 0;  ///< strategy_bit(s) for each strategy s
  std::size_t scratch_bytes = 0;
  BatchStats batch;
  unsigned two_byte = strategy_bit(Strategy::Online);
  std::string why_not[int(Strategy::Dense) + 1];
  bool has(Strategy s) const { return (strategies & strategy_bit(s)) != 0; }
};

/// The strategy a plan of element type `dtype` runs for the asked one, on a backend whose
/// two-byte kernels are the strategies in `two_byte` (Online on both backends, Dense too on
/// the CUDA-native one): float32 keeps the asked one, and so does a two-byte type where the
/// backend runs it; Auto stays Auto where the backend has more than Online for two-byte types
/// (Auto then chooses among those), else becomes Online; another strategy is an Error naming
/// `who`.
Strategy element_strategy(const char* who, Strategy asked, DType dtype, unsigned two_byte);

/// Auto, the one cost model of every backend:
/// 1. Dense, where the device has it, on batches whose density reaches the model's bar at D
///    (its traits' DenseRule), with at least 64 nodes a graph;
/// 2. else Online, wherever a thread group's accumulator (dim floats) fits the scratch: one pass
///    over the edges, no per-edge scores, heavy rows split;
/// 3. else DF-GNN's rule: PMF when the heaviest row's scores do not fit the scratch and the
///    score reduces over features (GT, AGNN), so they are computed once, edge-parallel;
///    otherwise SMMF.
Strategy choose_strategy(const Op& op, const DegreeStats& degrees, const DeviceFacts& device);

/// The strategy a plan runs: the element type's rule, then Auto's cost model among what the
/// device offers that type; an explicit strategy the device does not offer is an Error "who:
/// <device.why_not>", as is a value that names no strategy.
Strategy resolve_strategy(const char* who, Strategy asked, const Op& op, const DegreeStats& degrees,
                          const DeviceFacts& device);

/// Dense's limits on a device (the CUDA-native kernels' tiles): nodes of a graph and edges of a
/// row at most, D a multiple of `dim_multiple`, a cosine score's D at most `max_cosine_dim`, and
/// the shared memory a block may ask for.
struct DenseLimits {
  int max_nodes = 0;
  edge_t max_degree = 0;
  int dim_multiple = 1;
  int max_cosine_dim = 0;
  std::size_t shared_bytes = 0;
};

/// A batch as Dense would run it: whether the graph is a batch of square graphs (its offsets
/// given, or its independent blocks), their count, the sum of their squared node counts, the
/// first graph above DenseLimits::max_nodes (-1: none) and its nodes, and the smallest graph
/// size whose block's shared memory the device lacks (0: every one fits) with those bytes.
struct DenseBatch {
  bool batch = false;
  int graphs = 0;
  double squares = 0;
  long long first_too_large = -1;
  node_t too_large_nodes = 0;
  int unfit_nodes = 0;
  std::size_t unfit_bytes = 0;
};

/// Whether Dense can run an op on a batch (`why` empty), and what Auto's rule reads of it.
struct DenseFit {
  std::string why;
  BatchStats batch;
};
DenseFit dense_fit(const Op& op, const DegreeStats& degrees, const DenseBatch& b, const DenseLimits& limits);

/// Whether a call of a plan that resolved to Dense runs Dense: Auto's Dense takes calls with
/// edge values, dropout or edge features to Online (Dense's edge-wise kernel was 1.4-4x slower
/// than Online there, docs/cuda.md, "How Auto decides"); an explicit Dense keeps them.
bool dense_runs(bool auto_dense, bool edge_wise, bool edge_features);
/// Throws Error naming `who` unless a call with edge features can run on a plan of `strategy`:
/// on the CUDA-native backend only Online (Auto's pick) and Auto's Dense (which runs them
/// Online) take them.
void check_edge_strategy(const char* who, Strategy strategy, bool auto_dense);

/// Mean in-degree from which Auto runs GT's backward columns first: below it the rows' second
/// gather mostly hits L1, or the degree is too low to pay for the Delta pass. GT backward, H100
/// (docs/backward.md, "Two orders"): columns first 16-18% faster on tolokers (mean 88) and
/// rmat-s17-d64 (54); 0-2% slower on PATTERN-like (49), CLUSTER-like (37) and 1.5-13% slower on
/// web-NotreDame, MNIST-like and pubmed (7-4.5).
inline constexpr double kColsFirstDegree = 52;

/// The backward's order (docs/backward.md, "Two orders"): true for columns first. `rows` and
/// `columns` say which orders the model's backward has; with edge features a model with both
/// runs rows first (its row walk holds Q_v and dOut_v for dE). Auto runs columns first where
/// that is the only order, or from a mean in-degree of kColsFirstDegree. An order the model
/// lacks is an Error naming `who` and `kind`.
bool columns_first(const char* who, BackwardOrder order, ScoreKind kind, bool rows, bool columns, edge_t edges,
                   node_t nodes, bool edge_features);

/// What a device cuts heavy rows by (piece_edges): thread groups of `lanes` lanes, of which it
/// runs `threads` lanes at once, and a piece's bounds.
struct PieceFacts {
  int lanes = 1;
  std::int64_t threads = 1;
  edge_t shortest = 0, longest = 0;
};

/// Bound of a portable piece on any device: a merge per 4096 edges is noise, while a device
/// running few threads (a CPU) would otherwise walk a super row in one group.
inline constexpr edge_t kMaxPieceEdges = 4096;

/// The length above which a row is cut into pieces, on every backend: a thread group's share of
/// the edges (`num_edges * lanes / threads`), so that no piece outlasts the rest of the graph,
/// within the device's bounds (the merge stays small).
edge_t piece_edges(edge_t num_edges, const PieceFacts& device);

}  // namespace dfgnn::detail
