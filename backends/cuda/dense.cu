// Dense launches (dense.cuh). The kernels of the three scores live in this one translation unit,
// so that the plan's occupancy query and the launches see the same instantiations.
#include "dense.cuh"

#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace dfgnn::cuda::detail {
namespace {

/// Calls f(std::integral_constant<int, warps>{}) with bucket b's warp count.
template <class F>
void with_bucket(int b, F&& f) {
  if (b == 0) return f(std::integral_constant<int, kDenseWarps[0]>{});
  if (b == 1) return f(std::integral_constant<int, kDenseWarps[1]>{});
  f(std::integral_constant<int, kDenseWarps[2]>{});
}

/// f(S{}) with Model's score on elements of type E, if Dense computes that model (its traits'
/// DenseRule; dense_fit refused the others before any plan got here).
template <class Model, class E, class F>
void with_model_score(E, F& f) {
  if constexpr (Model::dense.runs) f(ScoreOf<Model, E>{});
  else throw Error(std::string("cuda::Plan: Dense has no ") + Model::label + " score");
}

/// Calls f(S{}) with the score type of `kind` on elements of type t. (The element's type is
/// deduced from an argument: nvcc's host pass gives decltype of a by-value lambda parameter
/// captured into a nested lambda a reference type.)
template <class F>
void with_score(ScoreKind kind, DType t, F&& f) {
  with_element(t, [&](auto e) {
    visit_model(kind, [&](auto model) { with_model_score<decltype(model)>(e, f); });
  });
}

}  // namespace

bool dense_shared_region(ScoreKind kind, DType t, int b, int max_nodes, int H, int D, std::size_t optin) {
  // Plans of new graphs of the same shapes (a batch per step) reuse the answer: the occupancy
  // queries cost more than the rest of a Dense plan's host work.
  using Key = std::tuple<int, ScoreKind, DType, int, int, int, int, std::size_t>;
  static std::mutex lock;
  static std::map<Key, bool> known;
  int device = 0;
  DFGNN_CUDA(cudaGetDevice(&device));
  const Key key{device, kind, t, b, max_nodes, H, D, optin};
  {
    const std::lock_guard<std::mutex> hold(lock);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  bool shared = true;
  with_score(kind, t, [&](auto score) {
    with_bucket(b, [&](auto warps) {
      constexpr auto kernel = dense_kernel<decltype(score), warps, false, false>;
      const auto blocks_per_sm = [&](bool one) {
        const std::size_t bytes = dense_smem_bytes(kind, max_nodes, H, D, one, t);
        if (bytes > optin) return 0;
        allow_smem<kernel>(bytes);  // the occupancy API counts only what the kernel may ask for
        int blocks = 0;
        DFGNN_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, warps * kWarp, bytes));
        return blocks;
      };
      const int two = blocks_per_sm(false);
      shared = two == 0 || blocks_per_sm(true) > two;
    });
  });
  const std::lock_guard<std::mutex> hold(lock);
  known.emplace(key, shared);
  return shared;
}

template <class S>
void launch_dense(cudaStream_t st, const DenseData& d, const S& sc, const EdgeScaleOf<typename S::Elem>& w,
                  const Train& tr, const edge_t* row_ptr, int H, int D, typename S::Elem* out) {
  using E = typename S::Elem;
  const bool edge_wise = dense_edge_wise(w, tr), chunked = !edge_wise && dense_chunked(S::kKind, D, dtype_of<E>());
  bool first = true;  // the buckets after the first run as dependents (dense.cuh)
  for (int b = kDenseBuckets - 1; b >= 0; --b) {  // largest graphs first: the long blocks start early
    const DenseBucket& k = d.bucket[b];
    if (k.count == 0) continue;
    const DenseArgs<S> a{sc, out, H, D, d.graphs, k.graphs, k.shared_region, row_ptr, w, tr};
    with_bucket(b, [&](auto warps) {
      const auto run = [&](auto wise, auto in_chunks) {
        constexpr auto kernel = dense_kernel<S, warps, wise, in_chunks>;
        allow_smem<kernel>(k.smem);
        if (first)
          kernel<<<k.count, warps * kWarp, k.smem, st>>>(a);
        else
          launch_dependent_blocks(kernel, k.count, warps * kWarp, k.smem, st, a);
        first = false;
      };
      if (edge_wise)
        run(std::true_type{}, std::false_type{});
      else if (!chunked)
        run(std::false_type{}, std::false_type{});
      else if constexpr (!dense_stages_keys(S::kKind) && std::is_same_v<E, float>)
        run(std::false_type{}, std::true_type{});
    });
  }
}

#define DFGNN_DENSE(S)                                                                                    \
  template void launch_dense<S>(cudaStream_t, const DenseData&, const S&, const EdgeScaleOf<S::Elem>&,   \
                                const Train&, const edge_t*, int, int, S::Elem*);
#define DFGNN_DENSE_SCORES(E) DFGNN_DENSE(GTScore<E>) DFGNN_DENSE(AGNNScore<E>) DFGNN_DENSE(GATScore<E>)
DFGNN_DENSE_SCORES(float)
DFGNN_DENSE_SCORES(bf16)
DFGNN_DENSE_SCORES(f16)
#undef DFGNN_DENSE_SCORES
#undef DFGNN_DENSE

}  // namespace dfgnn::cuda::detail
