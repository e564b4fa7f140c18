#pragma once
/// \file types.hpp
/// Vocabulary shared by every backend: score models, strategies, errors.
/// Free of Kokkos and CUDA so that the CUDA-native entry and the CLI can use it alone.

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

namespace dfgnn {

/// Thrown for every user error detected at the API (bad shapes, malformed graphs, ...).
/// The message names the offending argument and the violated rule. It is one line of
/// printable text: messages quote file content, paths and arguments, so line breaks, control
/// characters and bytes that are not UTF-8 come out escaped (`\n`, `\r`, `\t`, `\xNN`).
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& message);
};

/// Node ids are 32-bit; edge positions and row offsets are 64-bit so any edge count works.
using node_t = std::int32_t;
using edge_t = std::int64_t;

/// How the three steps (SDDMM, softmax, SpMM) are mapped onto kernels.
enum class Strategy {
  Auto,     ///< chosen per graph and model by the plan (docs/design.md, "How Auto decides")
  SMMF,     ///< one node-parallel kernel, scores in shared memory / team scratch
  PMF,      ///< edge-parallel SDDMM to global memory, then fused softmax + SpMM
  Unfused,  ///< three separate kernels (the DGL-sparse-like baseline)
  /// batched graphs (CUDA-native only): a block per small graph, its source features staged
  /// in shared memory once and read from there by every edge
  Staged,
  /// one pass per (row, head) with an online softmax, no per-edge scores; heavy rows split and
  /// merged. CUDA-native: a warp (or sub-warp group), state in registers; portable: a thread
  /// group, the accumulator in team scratch
  Online,
  /// batched small graphs (CUDA-native only; GT, AGNN, GAT): a block per graph computes all its
  /// (row, node) scores on tensor cores, masked by the adjacency
  Dense,
};

/// Which kernels run a call: the hand-tuned CUDA-native ones (Native) or the portable Kokkos ones
/// (Portable). Auto takes Native wherever the CUDA-native kernels can run (a Kokkos::Cuda plan,
/// or the CLI on a visible GPU, in a build with DFGNN_ENABLE_CUDA), else Portable
/// (resolve_backend).
enum class Backend { Auto, Portable, Native };

/// Which score function an attention layer uses: one per model below, each a traits type in
/// Models, in this order. `Count` is none: it counts the kinds, so that a kind added here
/// without its traits fails to compile (the static_assert beside Models).
enum class ScoreKind { GT, AGNN, GAT, GATv2, Count };

/// The shape of a tensor argument in an op's sizes (op.hpp's Op).
enum class Extent {
  SrcFeatures,   ///< [src_nodes, H, D]
  DstFeatures,   ///< [dst_nodes, H, D]
  SrcScalars,    ///< [src_nodes, H]
  DstScalars,    ///< [dst_nodes, H]
  HeadFeatures,  ///< [H, D]
  HeadVector,    ///< [1] or [H]: shared by the heads or one per head
  EdgeFeatures,  ///< [edges, H, D], in the caller's edge order
  EdgeScalars,   ///< [edges, H], in the caller's edge order
};

/// Whether a tensor of extent x has a row per source node (the rows a bipartite graph's
/// num_src_nodes counts and a rank's halo extends).
constexpr bool source_rows(Extent x) { return x == Extent::SrcFeatures || x == Extent::SrcScalars; }
/// Whether it has a row per edge.
constexpr bool edge_rows(Extent x) { return x == Extent::EdgeFeatures || x == Extent::EdgeScalars; }
/// Whether it is a parameter of the whole graph, per head (GATv2's a, AGNN's beta): no rows;
/// each rank of a distributed call holds all of it.
constexpr bool head_argument(Extent x) { return x == Extent::HeadFeatures || x == Extent::HeadVector; }
/// Entries per row (node or edge) of a tensor of extent x with `heads` heads of `dim` features:
/// heads for scalars, heads * dim for features ([H, D] as one row; not for a HeadVector).
constexpr std::size_t row_entries(Extent x, std::size_t heads, std::size_t dim) {
  return x == Extent::SrcScalars || x == Extent::DstScalars || x == Extent::EdgeScalars ? heads : heads * dim;
}

/// One argument of a model: its name in messages and its shape, and for an optional one the
/// argument that stands in for it where a call leaves it out (`stand_in`, its index; -1: the
/// argument is required). A stand-in serves only where it has the optional argument's shape (on
/// a bipartite graph a destination-side argument has other rows than a source-side one), and
/// the left-out argument's gradient terms then add to the stand-in's gradient.
struct ArgSpec {
  const char* name;
  Extent extent;
  int stand_in = -1;
};

/// A model's arguments in call order (its score inputs and its values), the name of each
/// input's gradient, its scalar parameter (null: none), and its optional edge argument with its
/// gradient (PyG's edge_dim: edge features the score, and GT's message, take per edge; name
/// null: the model has none). `edge_columns`: the edge argument may also be narrow, [E, 1 or
/// H, F] with F <= D, added to each head's last F columns (one row for every head at 1; GT,
/// docs/design.md "Edge columns").
struct ModelArgs {
  int count;
  ArgSpec inputs[3];
  const char* gradients[3];
  const char* param;
  ArgSpec edge = {nullptr, Extent::EdgeFeatures};
  const char* edge_gradient = nullptr;
  bool edge_columns = false;
};

/// Dense (CUDA-native: a batch's small graphs on tensor cores) for a model's score: whether it
/// computes it, and the batch density from which Dense beats Online at D <= 32, at D <= 64 and
/// above (docs/cuda.md, "How Auto decides"; detail::choose_strategy).
struct DenseRule {
  bool runs = false;
  double bars[3] = {};
};

/// The byte model of `dfgnn bench` (tools/bytes.cpp) for a model's kernels, beyond each argument
/// read once and each result written once: the [H, D] feature rows gathered per edge by the
/// forward and by the backward (its walk over rows, which gathers the sources' rows, and its walk
/// over columns, the destinations' rows: "K V + Q dOut"), and the scalars per edge and head that
/// the backward writes to its workspace and reads back.
struct EdgeTraffic {
  int forward_rows = 0;
  int backward_rows = 0;
  int backward_scalars = 0;
};

// `cosine`: the score is a cosine, so the kernels keep each node's inverse norms (and Dense's
// tiles of them bound D). `pmf_on_heavy_rows`: DF-GNN's rule, where no accumulator fits the scratch, for rows whose
// scores do not fit it either: PMF computes each score once, edge-parallel, where the score is a
// dot product over the features (GT, AGNN); GAT's score is two loads and an add, so recomputing
// nothing and launching once wins, and GATv2 stays on SMMF too (docs/design.md).

// The models: each is its own traits type (docs/design.md, "Adding a model"): its kind, name
// (CLI, messages) and label (prose), arguments and scalar parameter (`param()`, a call's
// Call::param), Dense's rule and the bench's byte model (`traffic`), read by every layer; the
// kernels add its score and gradient functors.

/// Graph Transformer dot-product score: scale * <Q[v,h], K[u,h]>; with edge features E
/// [E,H,D] (TransformerConv's edge_dim) scale * <Q[v,h], K[u,h] + E[e,h]> and message V[u,h] +
/// E[e,h]. E may be narrow, [E, 1 or H, F] with F <= D: then it is added to the last F columns
/// of K[u,h] and V[u,h] (row E[e,0] for every head at 1), so that a factored edge projection
/// runs as concatenated columns (docs/design.md, "Edge columns").
struct GT {
  float scale = 0.0f;  ///< 0 selects the default 1/sqrt(D)
  static constexpr ScoreKind kind = ScoreKind::GT;
  static constexpr const char* name = "gt";
  static constexpr const char* label = "GT";
  static constexpr bool pmf_on_heavy_rows = true;
  static constexpr DenseRule dense{true, {0.26, 0.225, 0.225}};
  static constexpr bool cosine = false;
  static constexpr EdgeTraffic traffic{2, 4, 2};  // K V; K V + Q dOut; dr q
  static constexpr ModelArgs args{
      3, {{"Q", Extent::DstFeatures}, {"K", Extent::SrcFeatures}, {"V", Extent::SrcFeatures}},
      {"dQ", "dK", "dV"}, "GT::scale", {"E", Extent::EdgeFeatures}, "dE", true};
  float param() const { return scale; }
  /// The scale of a score over `dim` features, in T's precision: `scale`, or 1/sqrt(dim).
  template <class T = float>
  T scale_for(int dim) const {
    return scale != 0.0f ? T(scale) : T(1) / std::sqrt(T(dim));
  }
};

/// AGNN cosine score: beta[h] * cos(X_dst[v,h], X[u,h]) with values X; beta is a tensor argument
/// ([H] or [1]). X_dst is optional: left out, X serves both ends of an edge (a square graph), so
/// that dX holds both ends' gradient terms; a bipartite graph needs it (X [NS,H,D], X_dst [N,H,D]).
struct AGNN {
  static constexpr ScoreKind kind = ScoreKind::AGNN;
  static constexpr const char* name = "agnn";
  static constexpr const char* label = "AGNN";
  static constexpr bool pmf_on_heavy_rows = true;
  static constexpr DenseRule dense{true, {0.29, 0.25, 0.23}};
  static constexpr bool cosine = true;
  static constexpr EdgeTraffic traffic{1, 3, 3};  // X; X + X_dst dOut; dr q cos
  // X_dst last, so that a call of X and beta alone leaves it out.
  static constexpr ModelArgs args{
      3, {{"X", Extent::SrcFeatures}, {"beta", Extent::HeadVector}, {"X_dst", Extent::DstFeatures, 0}},
      {"dX", "dbeta", "dX_dst"}, nullptr};
  float param() const { return 0.0f; }
};

/// GAT additive score: LeakyReLU(el[u,h] + er[v,h], slope); with edge scores ee [E,H]
/// (GATConv's edge_dim, its lin_edge and att_edge applied) LeakyReLU(el[u,h] + er[v,h] + ee[e,h]).
struct GAT {
  float slope = 0.2f;
  static constexpr ScoreKind kind = ScoreKind::GAT;
  static constexpr const char* name = "gat";
  static constexpr const char* label = "GAT";
  static constexpr bool pmf_on_heavy_rows = false;
  static constexpr DenseRule dense{true, {0.355, 0.27, 0.25}};
  static constexpr bool cosine = false;
  static constexpr EdgeTraffic traffic{1, 2, 2};  // V; V + dOut; dr q
  static constexpr ModelArgs args{
      3, {{"el", Extent::SrcScalars}, {"er", Extent::DstScalars}, {"V", Extent::SrcFeatures}},
      {"del", "der", "dV"}, "GAT::slope", {"ee", Extent::EdgeScalars}, "dee"};
  float param() const { return slope; }
};

/// GATv2 score: sum_d a[h,d] * LeakyReLU(XL[u,h,d] + XR[v,h,d], slope); values are XL. With
/// edge features E [E,H,D] (GATv2Conv's edge_dim) inside: LeakyReLU(XL[u,h,d] + XR[v,h,d] + E[e,h,d]).
struct GATv2 {
  float slope = 0.2f;
  static constexpr ScoreKind kind = ScoreKind::GATv2;
  static constexpr const char* name = "gatv2";
  static constexpr const char* label = "GATv2";
  static constexpr bool pmf_on_heavy_rows = false;
  static constexpr DenseRule dense{};  // Dense has no GATv2 score
  static constexpr bool cosine = false;
  static constexpr EdgeTraffic traffic{1, 3, 2};  // XL; XL + XR dOut; dr q
  static constexpr ModelArgs args{
      3, {{"XL", Extent::SrcFeatures}, {"XR", Extent::DstFeatures}, {"a", Extent::HeadFeatures}},
      {"dXL", "dXR", "da"}, "GATv2::slope", {"E", Extent::EdgeFeatures}, "dE"};
  float param() const { return slope; }
};

/// Every model's traits, in ScoreKind's order.
using Models = std::tuple<GT, AGNN, GAT, GATv2>;
static_assert(std::tuple_size_v<Models> == std::size_t(ScoreKind::Count), "a score kind without its traits in Models");

namespace detail {
template <std::size_t... I>
constexpr bool kinds_in_order(std::index_sequence<I...>) {
  return ((std::tuple_element_t<I, Models>::kind == ScoreKind(I)) && ...);
}
static_assert(kinds_in_order(std::make_index_sequence<std::tuple_size_v<Models>>{}), "Models in ScoreKind's order");
template <std::size_t... I>
constexpr std::array<ScoreKind, sizeof...(I)> kinds_of(std::index_sequence<I...>) {
  return {std::tuple_element_t<I, Models>::kind...};
}
}  // namespace detail

/// The traits of the model of kind K.
template <ScoreKind K>
using ModelOf = std::tuple_element_t<std::size_t(K), Models>;

/// Every model's kind.
inline constexpr auto kModels = detail::kinds_of(std::make_index_sequence<std::tuple_size_v<Models>>{});

/// f(Model{}) for the model of `kind`: the one dispatch over the models, so that the layers
/// that need a model's type (the executors, the CLI) visit instead of switching. Throws Error
/// for a value that is none of the models'.
template <std::size_t I = 0, class F>
decltype(auto) visit_model(ScoreKind kind, F&& f) {
  if constexpr (I + 1 < std::tuple_size_v<Models>) {
    if (int(kind) != int(I)) return visit_model<I + 1>(kind, std::forward<F>(f));
  } else {
    if (int(kind) != int(I))
      throw Error("score kind " + std::to_string(int(kind)) + " is none of the enum's values");
  }
  return f(std::tuple_element_t<I, Models>{});
}

/// The model of `kind` with scalar parameter `param` (GT's scale, the GATs' slope; AGNN has none).
template <class Model>
Model with_param(float param) {
  if constexpr (Model::args.param == nullptr) {
    (void)param;
    return Model{};
  } else {
    return Model{param};
  }
}

/// Degree statistics of the in-degrees (CSR by destination).
struct DegreeStats {
  edge_t max = 0;
  double mean = 0.0;
  edge_t threshold = 0;      ///< the threshold used for `above_threshold`
  node_t above_threshold = 0;  ///< rows whose in-degree exceeds `threshold`
  node_t empty_rows = 0;     ///< rows with no in-edges
};

/// The product of `factors` (each >= 0), or Error "<what> <f1> x <f2> x ... overflows 64 bits":
/// a count multiplied in size_t once wrapped to a small number and passed every shape check.
std::uint64_t checked_product(const std::string& what, std::initializer_list<std::uint64_t> factors);

/// Throws Error "<what> needs <bytes> bytes of host memory, more than the <limit> bytes this
/// process can have" when `bytes` exceeds the machine's memory (or a lower address-space or
/// cgroup limit): what cannot fit is refused up front, not left to the allocator or the OOM
/// killer.
void check_host_bytes(const std::string& what, std::uint64_t bytes);

/// s in ASCII lower case: the case-insensitive names the parsers and the CLI read.
std::string lower(std::string_view s);

const char* to_string(Strategy s);
const char* to_string(ScoreKind k);
/// Parses "auto|smmf|pmf|unfused|staged|online|dense" (case-insensitive); throws Error otherwise.
Strategy parse_strategy(const std::string& s);
/// The models' names (`name`, in ScoreKind's order) joined by `separator`: "gt|agnn|...".
std::string model_names(const char* separator);
/// Parses a model's name (model_names; case-insensitive); throws Error otherwise.
ScoreKind parse_score_kind(const std::string& s);
/// Parses "auto|kokkos|cuda" (case-insensitive; kokkos is Portable, cuda Native); throws Error
/// otherwise.
Backend parse_backend(const std::string& s);
/// The one rule of which kernels run: `requested`, Auto taking Native where the CUDA-native
/// kernels can run, i.e. where `native_unavailable` is empty (it says why they cannot), and
/// Portable elsewhere. Native where they cannot throws Error "WHO: the CUDA-native backend
/// <native_unavailable>"; a value that names no backend (an integer cast to Backend) throws Error too.
Backend resolve_backend(const char* who, Backend requested, const std::string& native_unavailable);

}  // namespace dfgnn
