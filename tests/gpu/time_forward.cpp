// Quick timing of the CUDA-native forward on the anchors.md graphs (not the benchmark harness):
// median of 20 CUDA-event timings after 3 warm-ups, random inputs, every strategy and Auto;
// for GT, Auto, Online and Dense once more in training mode (logsumexp + dropout 0.1, which
// Dense runs in its edge-wise kernel).
// Usage: dfgnn_time_forward DATA_DIR [graph...]  (DATA_DIR holds cora/pubmed/tolokers/web-NotreDame)

#include <dfgnn/cuda.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/io.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace dfgnn;

namespace {

void ok(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}

struct Dev {
  float* p = nullptr;
  explicit Dev(std::size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
    std::vector<float> h(std::max<std::size_t>(n, 1));
    std::uniform_real_distribution<float> d(lo, hi);
    for (float& x : h) x = d(rng);
    ok(cudaMalloc(&p, h.size() * 4));
    ok(cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  }
  ~Dev() { cudaFree(p); }
};

float median_ms(const std::function<void()>& f) {
  cudaEvent_t a, b;
  ok(cudaEventCreate(&a));
  ok(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < 20; ++i) {
    ok(cudaEventRecord(a));
    f();
    ok(cudaEventRecord(b));
    ok(cudaEventSynchronize(b));
    float ms;
    ok(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

HostGraph load(const std::string& path) {
  io::EdgeList el = io::read_graph(path);
  std::vector<node_t> src, dst;
  for (std::size_t i = 0; i < el.src.size(); ++i)
    if (el.src[i] != el.dst[i]) src.push_back(el.src[i]), dst.push_back(el.dst[i]);
  symmetrize(src, dst);
  return graph_from_edges(el.num_nodes, src, dst);
}

/// Gather-model bytes (anchors.md): compulsory bytes plus one gathered row per edge and tensor.
double gather_bytes(const HostGraph& g, ScoreKind k, int H, int D) {
  const double N = g.num_nodes, E = double(g.num_edges()), f = N * H * D * 4, e = E * H * D * 4;
  const double graph = (N + 1) * 8 + E * 4;
  switch (k) {
    case ScoreKind::GT: return graph + 4 * f + 2 * e;
    case ScoreKind::AGNN: return graph + 2 * f + e;
    case ScoreKind::GAT: return graph + 2 * f + 2 * N * H * 4 + e;
    case ScoreKind::GATv2: return graph + 3 * f + e;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "data";
  std::vector<std::string> want(argv + std::min(argc, 2), argv + argc);
  auto wanted = [&](const std::string& n) { return want.empty() || std::find(want.begin(), want.end(), n) != want.end(); };
  std::vector<std::pair<std::string, std::function<HostGraph()>>> list = {
      {"cora", [&] { return load(dir + "/cora/planetoid_edges.tsv.gz"); }},
      {"pubmed", [&] { return load(dir + "/pubmed/planetoid_edges.tsv.gz"); }},
      {"PATTERN", [] { return gen::sbm_batch(gen::SbmKind::Pattern, 1024); }},
      {"CLUSTER", [] { return gen::sbm_batch(gen::SbmKind::Cluster, 1024); }},
      {"MNIST", [] { return gen::knn_batch(1024); }},
      {"tolokers", [&] { return load(dir + "/tolokers/tolokers_edges.tsv.gz"); }},
      {"web-NotreDame", [&] { return load(dir + "/web-NotreDame/web-NotreDame.txt.gz"); }},
      {"rmat-s17-d64", [] { return gen::rmat(17, 64); }},
  };
  {  // copy bandwidth, bytes read + written
    const std::size_t n = std::size_t(1) << 28;
    void *a, *b;
    ok(cudaMalloc(&a, n));
    ok(cudaMalloc(&b, n));
    ok(cudaMemset(a, 1, n));
    const float ms = median_ms([&] { ok(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); });
    std::printf("copy bandwidth %.0f GB/s\n", 2.0 * n / ms / 1e6);
    cudaFree(a);
    cudaFree(b);
  }
  std::printf("%-14s %8s %9s %4s %6s %-8s %-8s %8s %7s\n", "graph", "nodes", "edges", "max", "HxD", "model",
              "strategy", "ms", "GB/s");
  std::mt19937 rng(1);
  for (auto& [name, make] : list) {
    if (!wanted(name)) continue;
    const HostGraph g = make();
    for (auto [H, D] : {std::pair{1, 128}, std::pair{4, 32}}) {
      const std::size_t nf = std::size_t(g.num_nodes) * H * D, ns = std::size_t(g.num_nodes) * H;
      Dev a(nf, rng), b(nf, rng), c(nf, rng), sa(ns, rng), sb(ns, rng), beta(H, rng, 0.5f, 2.f), att(H * D, rng);
      float *out, *lse;
      ok(cudaMalloc(&out, nf * 4));
      ok(cudaMalloc(&lse, ns * 4));
      for (ScoreKind k : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
        std::vector<std::pair<Strategy, bool>> runs;  // (strategy, training)
        for (Strategy s : {Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Staged,
                           Strategy::Online, Strategy::Dense})
          runs.emplace_back(s, false);
        if (k == ScoreKind::GT)
          for (Strategy s : {Strategy::Auto, Strategy::Online, Strategy::Dense}) runs.emplace_back(s, true);
        for (const auto& [s, training] : runs) {
          std::unique_ptr<cuda::Plan> plan;
          try {
            plan = std::make_unique<cuda::Plan>(g, k, H, D, s);
          } catch (const Error&) {
            continue;  // Staged or Dense on a graph or model they do not take
          }
          cuda::Options o;
          if (training) o.logsumexp = lse, o.dropout = {0.1f, 42};
          const float ms = median_ms([&] {
            switch (k) {
              case ScoreKind::GT: cuda::attention(nullptr, *plan, GT{}, a.p, b.p, c.p, out, o); break;
              case ScoreKind::AGNN: cuda::attention(nullptr, *plan, AGNN{}, a.p, beta.p, H, out, o); break;
              case ScoreKind::GAT: cuda::attention(nullptr, *plan, GAT{}, sa.p, sb.p, c.p, out, o); break;
              case ScoreKind::GATv2: cuda::attention(nullptr, *plan, GATv2{}, a.p, b.p, att.p, out, o); break;
            }
          });
          std::string label = to_string(plan->strategy());
          if (s == Strategy::Auto) label = "auto=" + label;
          if (training) label = "train:" + label;
          std::printf("%-14s %8d %9lld %4lld %dx%-4d %-8s %-12s %8.4f %7.0f\n", name.c_str(), g.num_nodes,
                      (long long)g.num_edges(), (long long)g.stats.max, H, D, to_string(k), label.c_str(), ms,
                      gather_bytes(g, k, H, D) / ms / 1e6);
        }
      }
      cudaFree(out);
      cudaFree(lse);
    }
  }
  return 0;
}
