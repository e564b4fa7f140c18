// A Kokkos application's two-layer GAT on its own Views, through the installed dfgnn package.
// The application owns the features, the weights and the dense algebra (plain parallel_fors
// here; a real one calls its BLAS); dfgnn runs each layer's attention, fused, on the same
// execution space. Each layer's result is checked against dfgnn's float64 reference, so the
// program fails (exit 1) if the library computes anything else.
//   gat_two_layers [scale]   an R-MAT graph of 2^scale nodes (default 12), 16 edges a node
#include <dfgnn/dfgnn.hpp>
#include <dfgnn/generate.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;

// A value in [-scale, scale) from an index: weights and features without random-number state.
KOKKOS_INLINE_FUNCTION float hashed(std::uint64_t i, std::uint64_t salt, float scale) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + salt;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return scale * (float((z ^ (z >> 31)) >> 40) / float(1ull << 23) - 1.0f);
}

Matrix filled(const char* name, std::size_t rows, std::size_t cols, std::uint64_t salt, float scale) {
  Matrix m(std::string(name), rows, cols);
  Kokkos::parallel_for(
      name, Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, std::int64_t(rows * cols)),
      KOKKOS_LAMBDA(std::int64_t i) { m.data()[i] = hashed(std::uint64_t(i), salt, scale); });
  return m;
}

// One GATConv: Z = X W split into H heads of D, el = <Z_h, a_l_h>, er = <Z_h, a_r_h>, then
// out_v = sum over in-edges u -> v of softmax_u(LeakyReLU(el_u + er_v)) Z_u (dfgnn), then a ReLU
// between the layers.
struct Layer {
  int in, H, D;
  bool relu;
  Matrix W, a_l, a_r;  // [in, H*D], [H, D], [H, D]
  dfgnn::Plan<Exec> plan;
  dfgnn::NodeOutput<Mem> Z, out;
  Matrix el, er;

  Layer(const Exec& exec, const dfgnn::Graph<Mem>& graph, int in_, int H_, int D_, bool relu_, std::uint64_t salt)
      : in(in_), H(H_), D(D_), relu(relu_),
        W(filled("W", std::size_t(in), std::size_t(H) * D, salt, 1.0f / float(in))),
        a_l(filled("a_l", std::size_t(H), std::size_t(D), salt + 1, 0.5f)),
        a_r(filled("a_r", std::size_t(H), std::size_t(D), salt + 2, 0.5f)),
        plan(exec, graph, dfgnn::ScoreKind::GAT, H, D),
        Z("Z", std::size_t(graph.num_nodes()), std::size_t(H), std::size_t(D)),
        out("out", std::size_t(graph.num_nodes()), std::size_t(H), std::size_t(D)),
        el("el", std::size_t(graph.num_nodes()), std::size_t(H)),
        er("er", std::size_t(graph.num_nodes()), std::size_t(H)) {}

  // X [N, in] -> out [N, H, D] (read as [N, H*D] by the next layer).
  void forward(const Exec& exec, const Matrix& X) const {
    const int n = int(X.extent(0)), width = H * D, heads = H, d = D, k = in;
    const Matrix W_ = W, a_l_ = a_l, a_r_ = a_r, el_ = el, er_ = er;
    const dfgnn::NodeOutput<Mem> Z_ = Z;
    using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
    Kokkos::parallel_for(
        "project", Policy(exec, 0, std::int64_t(n) * width), KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t v = i / width, c = i % width;
          float s = 0;
          for (int j = 0; j < k; ++j) s += X(v, j) * W_(j, c);
          Z_.data()[i] = s;
        });
    Kokkos::parallel_for(
        "scores", Policy(exec, 0, std::int64_t(n) * heads), KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t v = i / heads, h = i % heads;
          float l = 0, r = 0;
          for (int j = 0; j < d; ++j) l += Z_(v, h, j) * a_l_(h, j), r += Z_(v, h, j) * a_r_(h, j);
          el_(v, h) = l, er_(v, h) = r;
        });
    dfgnn::attention(exec, plan, dfgnn::GAT{0.2f}, el, er, Z, out);
    if (!relu) return;
    const auto out_ = out;
    Kokkos::parallel_for(
        "relu", Policy(exec, 0, std::int64_t(out.span())),
        KOKKOS_LAMBDA(std::int64_t i) { out_.data()[i] = out_.data()[i] > 0 ? out_.data()[i] : 0.0f; });
  }

  // The attention of the last forward against the float64 reference, on the host.
  double error(const dfgnn::HostGraph& host) const {
    const auto h_el = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), el);
    const auto h_er = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), er);
    const auto h_Z = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Z);
    std::vector<double> ref = dfgnn::reference_attention(host, H, D, dfgnn::GAT{0.2f}, h_el.data(), h_er.data(), h_Z.data());
    if (relu)
      for (double& x : ref) x = x > 0 ? x : 0.0;
    const auto h_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    return dfgnn::max_relative_error(h_out.data(), ref);
  }

  // This layer's output as the next one's [N, H*D] input: the same memory.
  Matrix as_input() const { return Matrix(out.data(), out.extent(0), std::size_t(H) * D); }
};

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  const int scale = argc > 1 ? std::atoi(argv[1]) : 12;
  const int features = 32, hidden_heads = 4, hidden = 16, classes = 7;
  try {
    Exec exec;
    const dfgnn::HostGraph host = dfgnn::gen::rmat(scale, 16);  // Graph500-like: skewed in-degrees
    const dfgnn::Graph<Mem> graph(host);                   // uploaded once, shared by both plans
    const Matrix X = filled("X", std::size_t(host.num_nodes), features, 7, 1.0f);
    const Layer first(exec, graph, features, hidden_heads, hidden, true, 100);
    const Layer second(exec, graph, hidden_heads * hidden, 1, classes, false, 200);
    std::printf("graph: %d nodes, %lld edges, max in-degree %lld; execution space %s\n", host.num_nodes,
                static_cast<long long>(host.num_edges()), static_cast<long long>(host.stats.max),
                Exec::name());
    std::printf("layer 1: GAT %dx%d, strategy %s; layer 2: GAT 1x%d, strategy %s\n", hidden_heads, hidden,
                dfgnn::to_string(first.plan.strategy()), classes, dfgnn::to_string(second.plan.strategy()));

    const auto forward = [&] {
      first.forward(exec, X);
      second.forward(exec, first.as_input());
    };
    forward();
    const double e1 = first.error(host), e2 = second.error(host);
    const bool ok = e1 < 1e-4 && e2 < 1e-4;
    std::printf("max relative error against the float64 reference: layer 1 %.2g, layer 2 %.2g: %s\n", e1, e2,
                ok ? "ok" : "WRONG");
    const int runs = 10;
    exec.fence();
    Kokkos::Timer timer;
    for (int r = 0; r < runs; ++r) forward();
    exec.fence();
    std::printf("two-layer forward: %.3f ms (mean of %d)\n", 1e3 * timer.seconds() / runs, runs);
    return ok ? 0 : 1;
  } catch (const dfgnn::Error& e) {
    std::fprintf(stderr, "gat_two_layers: %s\n", e.what());
    return 2;
  }
}
