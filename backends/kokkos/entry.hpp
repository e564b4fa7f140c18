#pragma once
// What the public entries (attention.cpp, backward.cpp) share: argument checks whose messages
// name the entry and the argument, the Problem a call hands to the kernels, and AGNN's norms.

#include "scores.hpp"

#include <dfgnn/attention.hpp>
#include <dfgnn/cuda.hpp>  // declarations only: run_native names the native entries

#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string>
#include <type_traits>

// Applies M to every enabled execution space: the entries are instantiated once per space.
#ifdef KOKKOS_ENABLE_SERIAL
#define DFGNN_ON_SERIAL(M) M(Kokkos::Serial)
#else
#define DFGNN_ON_SERIAL(M)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define DFGNN_ON_OPENMP(M) M(Kokkos::OpenMP)
#else
#define DFGNN_ON_OPENMP(M)
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define DFGNN_ON_THREADS(M) M(Kokkos::Threads)
#else
#define DFGNN_ON_THREADS(M)
#endif
#ifdef KOKKOS_ENABLE_CUDA
#define DFGNN_ON_CUDA(M) M(Kokkos::Cuda)
#else
#define DFGNN_ON_CUDA(M)
#endif
#define DFGNN_FOR_EACH_EXECUTION_SPACE(M) DFGNN_ON_SERIAL(M) DFGNN_ON_OPENMP(M) DFGNN_ON_THREADS(M) DFGNN_ON_CUDA(M)

namespace dfgnn::kokkos_impl {

template <class View>
std::string shape_of(const View& t) {
  std::ostringstream s;
  s << '[';
  for (unsigned r = 0; r < View::rank; ++r) s << (r ? "," : "") << t.extent(r);
  return s.str() + ']';
}

/// A view's entries by its extents: Kokkos 4.6 reports size() 0 for an unmanaged View made on
/// a null pointer, whatever its extents, so size() cannot tell such a view from an empty one.
template <class View>
std::size_t entries(const View& t) {
  std::size_t n = 1;
  for (unsigned r = 0; r < View::rank; ++r) n *= t.extent(r);
  return n;
}

/// A tensor's bytes, for overlap checks.
struct Region {
  const char* name;
  const char* begin;
  std::size_t bytes;
  template <class View>
  Region(const char* n, const View& t)
      : name(n), begin(reinterpret_cast<const char*>(t.data())), bytes(t.span() * sizeof(float)) {}
  bool overlaps(const Region& o) const {
    return begin && o.begin && begin < o.begin + o.bytes && o.begin < begin + bytes;
  }
};

/// The checks of one call to the public entry `who` (every message starts with it).
template <class Exec>
struct Checker {
  const char* who;
  const Plan<Exec>& plan;
  std::size_t N, H, D;

  Checker(const char* entry, const Plan<Exec>& p, ScoreKind kind)
      : who(entry), plan(p), N(std::size_t(p.graph().num_nodes())), H(std::size_t(p.heads())),
        D(std::size_t(p.dim())) {
    if (p.kind() != kind)
      fail(std::string("the plan was made for ") + to_string(p.kind()) + ", not " + to_string(kind));
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(std::string(who) + ": " + what); }

  /// t has no gaps: the kernels (and the native ones, which get t.data() alone) index it densely.
  template <class View>
  void contiguous(const char* name, const View& t) const {
    if (t.span() != entries(t)) fail(std::string(name) + " is strided (a subview with gaps); pass a contiguous View");
  }

  /// t has the extents `want` (named `dims`) and data, unless it is empty, and is contiguous.
  template <class View>
  void shape(const char* name, const View& t, std::initializer_list<std::size_t> want, const char* dims) const {
    std::size_t r = 0;
    bool ok = true;
    for (std::size_t w : want) ok = ok && t.extent(r++) == w;
    if (ok && (t.data() || entries(t) == 0)) return contiguous(name, t);
    std::ostringstream s;
    s << name << " has shape " << shape_of(t) << ", expected " << dims << " = [";
    r = 0;
    for (std::size_t w : want) s << (r++ ? "," : "") << w;
    fail(s.str() + "]");
  }
  template <class View>
  void features(const char* name, const View& t) const { shape(name, t, {N, H, D}, "[N,H,D]"); }
  template <class View>
  void scalars(const char* name, const View& t) const { shape(name, t, {N, H}, "[N,H]"); }
  template <class View>
  void head_vector(const char* name, const View& t) const {
    if ((t.extent(0) != 1 && t.extent(0) != H) || !t.data())
      fail(std::string(name) + " has " + std::to_string(t.extent(0)) + (t.data() ? "" : " unallocated") +
           " entries, expected 1 or H = " + std::to_string(H));
    contiguous(name, t);
  }
  /// A model's scale or slope.
  void finite(const char* name, float x) const {
    if (!std::isfinite(x)) fail(std::string(name) + " is " + std::to_string(x) + ", not a finite number");
  }

  /// Edge values, the logsumexp output when present, and the dropout rate.
  void options(const Options<typename Exec::memory_space>& o) const {
    const auto& w = o.edge_values;
    const std::size_t E = std::size_t(plan.graph().num_edges());
    if (w.data() || entries(w)) {
      if (!w.data() && E > 0) fail("edge_values has shape " + shape_of(w) + " but no data");
      if (w.extent(0) != E || (w.extent(1) != 1 && w.extent(1) != H))
        fail("edge_values has shape " + shape_of(w) + ", expected [E,1] or [E,H] with E = " +
             std::to_string(E) + ", H = " + std::to_string(H));
      contiguous("edge_values", w);
    }
    if (o.logsumexp.data() || entries(o.logsumexp)) scalars("logsumexp", o.logsumexp);
    if (!(o.dropout.rate >= 0.0f && o.dropout.rate < 1.0f))
      fail("dropout rate " + std::to_string(o.dropout.rate) + " is outside [0, 1)");
  }

  /// No written tensor shares a byte with a read one or with another written one.
  void disjoint(std::initializer_list<Region> written, std::initializer_list<Region> read) const {
    for (auto w = written.begin(); w != written.end(); ++w) {
      for (const Region& r : read)
        if (w->overlaps(r)) fail(std::string(w->name) + " overlaps " + r.name);
      for (auto o = w + 1; o != written.end(); ++o)
        if (w->overlaps(*o)) fail(std::string(w->name) + " overlaps " + o->name);
    }
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
        inv(n, h) = sq > 0.0f ? 1.0f / sqrt(sq) : 0.0f;
      });
  return inv;
}

/// Runs `call(stream, native plan, native options)` when the plan has CUDA-native kernels
/// (Kokkos::Cuda with DFGNN_ENABLE_CUDA) and returns true; else false, and the caller runs the
/// portable kernels. `call` is generic so that builds without the native path never see it.
template <class Exec, class Call>
bool run_native(const Exec& exec, const Plan<Exec>& plan, const Options<typename Exec::memory_space>& o,
                const Call& call) {
#ifdef DFGNN_NATIVE_CUDA
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    if (!plan.native()) return false;
    cuda::Options native{cuda::DeviceEdgeValues{o.edge_values.data(), int(o.edge_values.extent(1))}};
    native.logsumexp = o.logsumexp.data();
    native.dropout = o.dropout;
    call(exec.cuda_stream(), *plan.native(), native);
    return true;
  }
#endif
  (void)exec, (void)plan, (void)o, (void)call;
  return false;
}

}  // namespace dfgnn::kokkos_impl
