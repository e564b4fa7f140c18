#include "cuda_runner.hpp"

#include <dfgnn/cuda.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>

namespace dfgnn::cli {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using Buffer = std::unique_ptr<float, DeviceFree>;

Buffer upload(const std::vector<float>& host) {
  float* p = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(host.size(), 1) * sizeof(float)), "cudaMalloc");
  Buffer b(p);
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  return b;
}

// Inputs on the device and the call that runs the model on them.
struct Launcher {
  std::vector<Buffer> tensors;
  Buffer beta, edge_values, out;
  std::function<void(cudaStream_t)> run;

  Launcher(const cuda::Plan& plan, const Inputs& in, float scale, float slope) {
    for (const auto& t : in.tensors) tensors.push_back(upload(t));
    beta = upload(in.beta);
    edge_values = upload(in.edge_values);
    out = upload(std::vector<float>(in.N * in.H * in.D));
    const cuda::DeviceEdgeValues w{in.edge_value_heads ? edge_values.get() : nullptr, in.edge_value_heads};
    const float* t0 = tensors[0].get();
    const float* t1 = tensors.size() > 1 ? tensors[1].get() : nullptr;
    const float* t2 = tensors.size() > 2 ? tensors[2].get() : nullptr;
    float* o = out.get();
    const float* b = beta.get();
    const int nb = int(in.beta.size());
    switch (in.kind) {
      case ScoreKind::GT: run = [&plan, t0, t1, t2, o, w, scale](cudaStream_t s) { cuda::attention(s, plan, GT{scale}, t0, t1, t2, o, w); }; break;
      case ScoreKind::AGNN: run = [&plan, t0, b, nb, o, w](cudaStream_t s) { cuda::attention(s, plan, AGNN{}, t0, b, nb, o, w); }; break;
      case ScoreKind::GAT: run = [&plan, t0, t1, t2, o, w, slope](cudaStream_t s) { cuda::attention(s, plan, GAT{slope}, t0, t1, t2, o, w); }; break;
      case ScoreKind::GATv2: run = [&plan, t0, t1, t2, o, w, slope](cudaStream_t s) { cuda::attention(s, plan, GATv2{slope}, t0, t1, t2, o, w); }; break;
    }
  }

  std::vector<float> download(std::size_t n) const {
    std::vector<float> host(n);
    check(cudaMemcpy(host.data(), out.get(), n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return host;
  }
};

}  // namespace

std::vector<float> run_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, float scale,
                            float slope, Strategy& used) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy);
  used = plan.strategy();
  Launcher launch(plan, in, scale, slope);
  launch.run(nullptr);
  check(cudaDeviceSynchronize(), "attention");
  return launch.download(in.N * in.H * in.D);
}

Timing time_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, float scale, float slope,
                 int warmup, int iters, Strategy& used, std::vector<float>* out) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy);
  used = plan.strategy();
  Launcher launch(plan, in, scale, slope);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) launch.run(nullptr);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    launch.run(nullptr);
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "attention");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (out) *out = launch.download(in.N * in.H * in.D);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? Timing{} : Timing{ms[ms.size() / 2], ms.front()};
}

std::string cuda_device_name() {
  int dev = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  return prop.name;
}

double cuda_copy_bandwidth() {
  const std::size_t bytes = std::size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(start);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

}  // namespace dfgnn::cli
