// The CUDA-native kernels' Device (run.hpp): the graph's arrays and a run's tensors in the
// current device's memory, calls on the legacy default stream, timed by CUDA events there.

#include "run.hpp"

#include <dfgnn/cuda.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace dfgnn::cli {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class CudaDevice final : public Device {
 public:
  CudaDevice() {
    for (auto& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~CudaDevice() override {
    for (auto e : events_) cudaEventDestroy(e);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // The plan uploads its own copy of the graph: only what its passes read (docs/cuda.md,
  // "Device memory"; no edge ids where the edges come in CSR order).
  std::unique_ptr<detail::Builder> builder(const HostGraph& g, const Op& op) override {
    validate(g);  // what a Graph's constructor checks before the portable builder reads it
    return detail::native_builder(g, nullptr, nullptr, nullptr, nullptr, op, nullptr);
  }
  void place(Call& call) const override { call.stream = nullptr; }
  void mark(int i) override { check(cudaEventRecord(events_[i]), "cudaEventRecord"); }
  double elapsed(int from, int to) override {
    check(cudaEventSynchronize(events_[to]), "attention");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, events_[from], events_[to]), "cudaEventElapsedTime");
    return ms;
  }

  std::string name() const override {
    int dev = 0;
    cudaDeviceProp prop{};
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    return prop.name;
  }

  // Device-to-device copy of a 1 GiB buffer, bytes read + written (median of 10 after 2).
  double copy_bandwidth() const override {
    const std::size_t bytes = std::size_t(1) << 30;
    const auto a = allocate(bytes), b = allocate(bytes);
    std::vector<float> ms;
    for (int i = 0; i < 12; ++i) {
      cudaEventRecord(events_[0]);
      cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice);
      cudaEventRecord(events_[1]);
      cudaEventSynchronize(events_[1]);
      float t = 0;
      cudaEventElapsedTime(&t, events_[0], events_[1]);
      if (i >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return 2.0 * double(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  }

  double plan_mib(const detail::Executor& executor) const override { return plan_bytes(executor) / (1 << 20); }

  // The plan's memory per edge, and all in use on the device after the calls (nothing is freed
  // during one: its peak).
  void report_memory(const detail::Executor& executor, const char* what) const override {
    check(cudaDeviceSynchronize(), what);
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    const double bytes = plan_bytes(executor), edges = double(executor.op().edges);
    std::printf("%s device memory: plan %.1f MiB (%.1f bytes per edge), %.2f GiB of %.2f GiB in use after the call\n",
                what, bytes / (1 << 20), edges > 0 ? bytes / edges : 0.0, double(total - free) / (1 << 30),
                double(total) / (1 << 30));
  }

 protected:
  std::shared_ptr<void> allocate(std::size_t bytes) const override {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return {p, [](void* q) { cudaFree(q); }};
  }
  void copy_in(void* to, const void* from, std::size_t bytes) const override {
    check(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void copy_out(void* to, const void* from, std::size_t bytes) const override {
    check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  double plan_bytes(const detail::Executor& executor) const {
    return double(dynamic_cast<const cuda::Plan&>(executor).device_bytes());
  }

  cudaEvent_t events_[3] = {};
};

}  // namespace

std::unique_ptr<Device> cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace dfgnn::cli
