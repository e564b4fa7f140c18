// Runs GT attention on a 4-node graph through the installed package and checks the result.
#include <dfgnn/dfgnn.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  const int N = 4, H = 2, D = 3;
  const dfgnn::HostGraph host = dfgnn::graph_from_edges(N, {0, 1, 2, 3, 1}, {1, 2, 3, 0, 0});
  std::vector<float> q(N * H * D), k(q.size()), v(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = 0.1f * i, k[i] = 0.2f - 0.03f * i, v[i] = 1.0f + i;
  // [N,H,D] tensors on the execution space's memory, filled from the host vectors.
  const auto features = [&](const char* name, const std::vector<float>& x) {
    const std::size_t n = N, h = H, d = D;
    dfgnn::NodeOutput<Mem> t(std::string(name), n, h, d);
    Kokkos::deep_copy(t, Kokkos::View<const float***, Kokkos::LayoutRight, Kokkos::HostSpace>(x.data(), n, h, d));
    return dfgnn::NodeFeatures<Mem>(t);
  };
  Exec exec;
  const dfgnn::Plan<Exec> plan(exec, dfgnn::Graph<Mem>(host), dfgnn::ScoreKind::GT, H, D);
  dfgnn::NodeOutput<Mem> out("out", N, H, D);
  dfgnn::attention(exec, plan, dfgnn::GT{}, features("q", q), features("k", k), features("v", v), out);
  const auto result = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  const double err = dfgnn::max_relative_error(
      result.data(), dfgnn::reference_attention(host, H, D, dfgnn::GT{}, q.data(), k.data(), v.data()));
  std::printf("consumer: %s, max relative error %.3g\n", err < 1e-5 ? "ok" : "WRONG", err);
  return err < 1e-5 ? 0 : 1;
}
