#include "cuda_runner.hpp"

#include <dfgnn/cuda.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
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
using Buffer = std::unique_ptr<void, DeviceFree>;

/// A device copy of `host` as elements of type t (the floats hold t's values: Inputs::dtype).
Buffer upload(const std::vector<float>& host, DType t = DType::F32) {
  std::vector<std::uint16_t> two;
  if (t != DType::F32)
    for (float x : host) two.push_back(to_bits(t, x));
  const void* from = t == DType::F32 ? static_cast<const void*>(host.data()) : two.data();
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::size_t>(host.size(), 1) * size_of(t)), "cudaMalloc");
  Buffer b(p);
  check(cudaMemcpy(p, from, host.size() * size_of(t), cudaMemcpyHostToDevice), "cudaMemcpy");
  return b;
}

// Inputs on the device and the calls that run the model on them through the generic entries:
// the forward (training mode keeps the logsumexp) and, after set_dout, the backward into the
// gradients (one per input, in the model's order).
struct Launcher {
  std::vector<Buffer> tensors, grads;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  Buffer edge_values, edge_features, edge_grad, out, lse, dout, weights;
  std::function<void(cudaStream_t)> run, backward;
  DType dtype;  // of every tensor but the logsumexp

  Launcher(const cuda::Plan& plan, const Inputs& in, bool training = false) : dtype(in.dtype) {
    for (const auto& t : in.tensors) inputs.push_back(tensors.emplace_back(upload(t, dtype)).get());
    edge_values = upload(in.edge_values, dtype);
    out = upload(std::vector<float>(in.out_size()), dtype);
    lse = upload(std::vector<float>(training || in.weights ? in.N * in.H : 0));  // the weights are computed from it
    weights = upload(std::vector<float>(in.weights ? in.E * in.H : 0), dtype);
    cuda::Options o(cuda::DeviceEdgeValues{in.edge_value_heads ? edge_values.get() : nullptr, in.edge_value_heads});
    o.logsumexp = training || in.weights ? static_cast<float*>(lse.get()) : nullptr;
    o.attention_weights = in.weights ? weights.get() : nullptr;
    edge_features = upload(in.edge_features, dtype);
    o.edge_features = in.edges() ? edge_features.get() : nullptr;
    if (training) o.dropout = in.dropout;
    const ScoreKind kind = in.kind;
    const float param = in.param;
    const std::size_t count = in.count();
    void* y = out.get();
    run = [this, &plan, kind, param, count, y, o](cudaStream_t s) {
      cuda::detail::attention(s, plan, kind, param, dtype, inputs.data(), count, y, o);
    };
    if (!training) return;
    for (const auto& t : in.tensors)
      outputs.push_back(grads.emplace_back(upload(std::vector<float>(t.size()), dtype)).get());
    edge_grad = upload(std::vector<float>(in.edge_features.size()), dtype);
    o.edge_grad = in.edges() ? edge_grad.get() : nullptr;
    backward = [this, &plan, kind, param, count, o](cudaStream_t s) {
      cuda::detail::attention_backward(s, plan, kind, param, dtype, inputs.data(), count, out.get(),
                                       static_cast<const float*>(lse.get()), dout.get(), outputs.data(), o);
    };
  }
  Launcher(const Launcher&) = delete;  // the calls capture this
  Launcher& operator=(const Launcher&) = delete;

  void set_dout(const std::vector<float>& host) { dout = upload(host, dtype); }

  /// n elements of the call's type, as floats.
  std::vector<float> download(const Buffer& b, std::size_t n) const {
    std::vector<float> host(n);
    if (dtype == DType::F32) {
      check(cudaMemcpy(host.data(), b.get(), n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      return host;
    }
    std::vector<std::uint16_t> two(n);
    check(cudaMemcpy(two.data(), b.get(), n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (std::size_t i = 0; i < n; ++i) host[i] = from_bits(dtype, two[i]);
    return host;
  }
  std::vector<std::vector<float>> gradients(const Inputs& in) const {
    std::vector<std::vector<float>> r;
    for (std::size_t i = 0; i < grads.size(); ++i) r.push_back(download(grads[i], in.tensors[i].size()));
    if (in.edges()) r.push_back(download(edge_grad, in.edge_features.size()));  // gradient_sizes' order
    return r;
  }
};

/// Median and minimum of the samples.
Timing summary(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? Timing{} : Timing{ms[ms.size() / 2], ms.front()};
}

/// CUDA events on the default stream; elapsed() gives the milliseconds between two marks.
struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(int n) : e(std::size_t(n)) {
    for (auto& x : e) check(cudaEventCreate(&x), "cudaEventCreate");
  }
  ~Events() {
    for (auto& x : e) cudaEventDestroy(x);
  }
  void mark(int i) { check(cudaEventRecord(e[std::size_t(i)]), "cudaEventRecord"); }
  double elapsed(int a, int b) {
    check(cudaEventSynchronize(e[std::size_t(b)]), "attention");
    float t = 0;
    check(cudaEventElapsedTime(&t, e[std::size_t(a)], e[std::size_t(b)]), "cudaEventElapsedTime");
    return t;
  }
};

/// One line on the device memory of a run: the plan's (graph copy, CSC, workspaces) per edge,
/// and all in use on the device after the call (nothing is freed during one: its peak).
void report_memory(const cuda::Plan& plan, const Inputs& in, const char* what) {
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  const double plan_bytes = double(plan.device_bytes());
  std::printf("%s device memory: plan %.1f MiB (%.1f bytes per edge), %.2f GiB of %.2f GiB in use after the call\n",
              what, plan_bytes / (1 << 20), in.E ? plan_bytes / double(in.E) : 0.0, double(total - free) / (1 << 30),
              double(total) / (1 << 30));
}

}  // namespace

std::vector<float> run_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, Strategy& used,
                            std::vector<float>* weights) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy, in.dtype);
  used = plan.strategy();
  Launcher launch(plan, in);
  launch.run(nullptr);
  check(cudaDeviceSynchronize(), "attention");
  report_memory(plan, in, "forward");
  if (in.weights) *weights = launch.download(launch.weights, in.E * in.H);
  return launch.download(launch.out, in.out_size());
}

std::vector<std::vector<float>> run_cuda_backward(const HostGraph& g, const Inputs& in, Strategy strategy,
                                                  const std::vector<float>& dout) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy, in.dtype);
  Launcher launch(plan, in, /*training=*/true);
  launch.set_dout(dout);
  launch.run(nullptr);
  launch.backward(nullptr);
  check(cudaDeviceSynchronize(), "attention_backward");
  report_memory(plan, in, "training forward + backward");
  return launch.gradients(in);
}

Timing time_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, int warmup, int iters, Strategy& used,
                 std::vector<float>* out) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy, in.dtype);
  used = plan.strategy();
  Launcher launch(plan, in);
  Events ev(2);
  for (int i = 0; i < warmup; ++i) launch.run(nullptr);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    ev.mark(0);
    launch.run(nullptr);
    ev.mark(1);
    ms.push_back(ev.elapsed(0, 1));
  }
  if (out) *out = launch.download(launch.out, in.out_size());
  Timing t = summary(ms);
  t.plan_mib = double(plan.device_bytes()) / (1 << 20);
  return t;
}

TrainTiming time_cuda_backward(const HostGraph& g, const Inputs& in, Strategy strategy, const std::vector<float>& dout,
                               int warmup, int iters, Strategy& used, std::vector<std::vector<float>>* grads) {
  const cuda::Plan plan(g, in.kind, int(in.H), int(in.D), strategy, in.dtype);
  used = plan.strategy();
  Launcher launch(plan, in, /*training=*/true);
  launch.set_dout(dout);
  Events ev(3);
  std::vector<double> total, backward;
  for (int i = 0; i < warmup + iters; ++i) {
    ev.mark(0);
    launch.run(nullptr);
    ev.mark(1);
    launch.backward(nullptr);
    ev.mark(2);
    const double t = ev.elapsed(0, 2), b = ev.elapsed(1, 2);
    if (i >= warmup) total.push_back(t), backward.push_back(b);
  }
  if (grads) *grads = launch.gradients(in);
  TrainTiming t{summary(total), summary(backward)};
  t.total.plan_mib = t.backward.plan_mib = double(plan.device_bytes()) / (1 << 20);
  return t;
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
