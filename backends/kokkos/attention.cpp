// Public entry -> checks -> strategy dispatch, instantiated for every enabled execution space.

#include "pmf.hpp"
#include "smmf.hpp"
#include "unfused.hpp"

#include <dfgnn/attention.hpp>

#include <cmath>
#include <sstream>

namespace dfgnn {

namespace {

using kokkos_impl::Problem;

template <class View>
std::string shape_of(const View& t) {
  std::ostringstream s;
  s << '[';
  for (unsigned r = 0; r < View::rank; ++r) s << (r ? "," : "") << t.extent(r);
  return s.str() + ']';
}

template <class View>
void expect_shape(const char* name, const View& t, std::initializer_list<std::size_t> want,
                  const char* dims) {
  std::size_t r = 0;
  bool ok = true;
  for (std::size_t w : want) ok = ok && t.extent(r++) == w;
  if (ok && (t.data() || t.size() == 0)) return;
  std::ostringstream s;
  s << "attention: " << name << " has shape " << shape_of(t) << ", expected " << dims << " = [";
  r = 0;
  for (std::size_t w : want) s << (r++ ? "," : "") << w;
  throw Error(s.str() + "]");
}

template <class Out, class View>
void expect_disjoint(const Out& out, const char* name, const View& t) {
  const auto* o = reinterpret_cast<const char*>(out.data());
  const auto* i = reinterpret_cast<const char*>(t.data());
  if (o && i && o < i + t.span() * sizeof(float) && i < o + out.span() * sizeof(float))
    throw Error(std::string("attention: out overlaps ") + name);
}

template <class Exec>
struct Checker {
  const Plan<Exec>& plan;
  std::size_t N, H, D;
  explicit Checker(const Plan<Exec>& p, ScoreKind kind)
      : plan(p), N(std::size_t(p.graph().num_nodes())), H(std::size_t(p.heads())), D(std::size_t(p.dim())) {
    if (p.kind() != kind)
      throw Error(std::string("attention: the plan was made for ") + to_string(p.kind()) +
                  ", not " + to_string(kind));
  }
  template <class View>
  void features(const char* name, const View& t) const { expect_shape(name, t, {N, H, D}, "[N,H,D]"); }
  template <class View>
  void scalars(const char* name, const View& t) const { expect_shape(name, t, {N, H}, "[N,H]"); }
  template <class View>
  void head_vector(const char* name, const View& t) const {
    if ((t.extent(0) != 1 && t.extent(0) != H) || !t.data())
      throw Error(std::string("attention: ") + name + " has " + std::to_string(t.extent(0)) +
                  (t.data() ? "" : " unallocated") + " entries, expected 1 or H = " + std::to_string(H));
  }
  template <class Out>
  void options(const Options<typename Exec::memory_space>& o, const Out& out) const {
    const auto& w = o.edge_values;
    const std::size_t E = std::size_t(plan.graph().num_edges());
    if (w.data() || w.size()) {
      if (!w.data() && E > 0)
        throw Error("attention: edge_values has shape " + shape_of(w) + " but no data");
      if (w.extent(0) != E || (w.extent(1) != 1 && w.extent(1) != H))
        throw Error("attention: edge_values has shape " + shape_of(w) + ", expected [E,1] or [E,H] with E = " +
                    std::to_string(E) + ", H = " + std::to_string(H));
      expect_disjoint(out, "edge_values", w);
    }
    if (o.logsumexp.data() || o.logsumexp.size()) {
      scalars("logsumexp", o.logsumexp);
      expect_disjoint(out, "logsumexp", o.logsumexp);
    }
    if (!(o.dropout.rate >= 0.0f && o.dropout.rate < 1.0f))
      throw Error("attention: dropout rate " + std::to_string(o.dropout.rate) + " is outside [0, 1)");
  }
};

template <class Exec>
Problem<typename Exec::memory_space> problem(const Plan<Exec>& plan,
                                             const NodeOutput<typename Exec::memory_space>& out,
                                             const Options<typename Exec::memory_space>& o) {
  const auto& g = plan.graph();
  return {g.row_ptr(), g.src(), g.dst(), g.edge_id(), o.edge_values, o.logsumexp, o.dropout,
          out, plan.heads(), plan.dim()};
}

template <class Exec, class Score>
void dispatch(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
              const Score& score) {
  switch (plan.strategy()) {
    case Strategy::SMMF: return kokkos_impl::smmf(exec, plan, p, score);
    case Strategy::PMF: return kokkos_impl::pmf(exec, plan, p, score);
    case Strategy::Unfused: return kokkos_impl::unfused(exec, plan, p, score);
    case Strategy::Auto: break;
  }
  throw Error("attention: the plan has no resolved strategy");
}

// 1/|X[n,h]| per node and head (0 for a zero vector), so a cosine costs one dot product.
template <class Exec>
Kokkos::View<const float**, Kokkos::LayoutRight, typename Exec::memory_space> inverse_norms(
    const Exec& exec, const Plan<Exec>& plan, const NodeFeatures<typename Exec::memory_space>& X) {
  const int H = plan.heads(), D = plan.dim();
  const auto inv = plan.layout().inv_norms;
  Kokkos::parallel_for(
      "dfgnn::inverse_norms", Kokkos::RangePolicy<Exec>(exec, 0, inv.size()),
      KOKKOS_LAMBDA(std::size_t k) {
        const node_t n = node_t(k / H);
        const int h = int(k % H);
        float sq = 0.0f;
        for (int d = 0; d < D; ++d) sq += X(n, h, d) * X(n, h, d);
        inv(n, h) = sq > 0.0f ? 1.0f / kokkos_impl::sqrt(sq) : 0.0f;
      });
  return inv;
}

}  // namespace

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GT& model,
               const NodeFeatures<typename Exec::memory_space>& Q,
               const NodeFeatures<typename Exec::memory_space>& K,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(plan, ScoreKind::GT);
  check.features("Q", Q), check.features("K", K), check.features("V", V), check.features("out", out);
  check.options(options, out);
  expect_disjoint(out, "Q", Q), expect_disjoint(out, "K", K), expect_disjoint(out, "V", V);
  const float scale = model.scale != 0.0f ? model.scale : 1.0f / std::sqrt(float(plan.dim()));
  dispatch(exec, plan, problem(plan, out, options),
           kokkos_impl::DotScore<typename Exec::memory_space>{Q, K, V, scale});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN&,
               const NodeFeatures<typename Exec::memory_space>& X,
               const HeadScalars<typename Exec::memory_space>& beta,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(plan, ScoreKind::AGNN);
  check.features("X", X), check.features("out", out), check.head_vector("beta", beta);
  check.options(options, out);
  expect_disjoint(out, "X", X), expect_disjoint(out, "beta", beta);
  dispatch(exec, plan, problem(plan, out, options),
           kokkos_impl::CosineScore<typename Exec::memory_space>{X, inverse_norms(exec, plan, X), beta});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
               const NodeScalars<typename Exec::memory_space>& el,
               const NodeScalars<typename Exec::memory_space>& er,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(plan, ScoreKind::GAT);
  check.scalars("el", el), check.scalars("er", er), check.features("V", V), check.features("out", out);
  check.options(options, out);
  expect_disjoint(out, "el", el), expect_disjoint(out, "er", er), expect_disjoint(out, "V", V);
  dispatch(exec, plan, problem(plan, out, options),
           kokkos_impl::AdditiveScore<typename Exec::memory_space>{el, er, V, model.slope});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
               const NodeFeatures<typename Exec::memory_space>& XL,
               const NodeFeatures<typename Exec::memory_space>& XR,
               const HeadFeatures<typename Exec::memory_space>& a,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(plan, ScoreKind::GATv2);
  check.features("XL", XL), check.features("XR", XR), check.features("out", out);
  expect_shape("a", a, {check.H, check.D}, "[H,D]");
  check.options(options, out);
  expect_disjoint(out, "XL", XL), expect_disjoint(out, "XR", XR), expect_disjoint(out, "a", a);
  dispatch(exec, plan, problem(plan, out, options),
           kokkos_impl::AdditiveV2Score<typename Exec::memory_space>{XL, XR, a, model.slope});
}

#define DFGNN_INSTANTIATE(EXEC)                                                                    \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GT&,                          \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const AGNN&,                        \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const HeadScalars<EXEC::memory_space>&,                             \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GAT&,                         \
                                const NodeScalars<EXEC::memory_space>&,                             \
                                const NodeScalars<EXEC::memory_space>&,                             \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GATv2&,                       \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const HeadFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);

#ifdef KOKKOS_ENABLE_SERIAL
DFGNN_INSTANTIATE(Kokkos::Serial)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
DFGNN_INSTANTIATE(Kokkos::OpenMP)
#endif
#ifdef KOKKOS_ENABLE_THREADS
DFGNN_INSTANTIATE(Kokkos::Threads)
#endif
#ifdef KOKKOS_ENABLE_CUDA
DFGNN_INSTANTIATE(Kokkos::Cuda)
#endif

}  // namespace dfgnn
