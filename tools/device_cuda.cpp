// The CUDA-native kernels' Device (run.hpp): the graph's arrays and a run's tensors in the
// current device's memory, calls on the legacy default stream (Device::stream's default),
// timed by CUDA events there.

#include "platform.hpp"
#include "run.hpp"

#include <dfgnn/cuda.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace dfgnn::cli {

// The microbenchmark kernels (microbench_cuda.cu).
void cuda_gather(void* to, const void* from, const std::int32_t* rows, std::size_t count, std::size_t row_bytes);
cudaError_t cuda_empty_kernel();

namespace {

// "13.0" of a CUDA version number (13000).
std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

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
  std::unique_ptr<detail::MessageBuilder> message_builder(const HostGraph& g) override {
    validate(g);
    return detail::native_message_builder(g, nullptr, nullptr, nullptr, nullptr);
  }
  void mark(int i) override { check(cudaEventRecord(events_[i]), "cudaEventRecord"); }
  double elapsed(int from, int to) override {
    check(cudaEventSynchronize(events_[to]), "the timed calls");
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
  double copy_bandwidth() override { return measure_copy(*this, std::size_t(1) << 30, {2, 10})["gbs"]; }

  // The properties a study compares GPUs by; clocks through attributes, which CUDA 13 keeps
  // while its cudaDeviceProp lost them.
  nlohmann::json facts() const override {
    int dev = 0, driver = 0, runtime = 0;
    cudaDeviceProp prop{};
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    const auto attribute = [&](cudaDeviceAttr a) {
      int v = 0;
      check(cudaDeviceGetAttribute(&v, a, dev), "cudaDeviceGetAttribute");
      return v;
    };
    return {{"vendor", "NVIDIA"},
            {"name", prop.name},
            {"architecture", "sm_" + std::to_string(prop.major) + std::to_string(prop.minor)},
            {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
            {"compute_units", prop.multiProcessorCount},
            {"clock_mhz", attribute(cudaDevAttrClockRate) / 1000.0},
            {"memory_clock_mhz", attribute(cudaDevAttrMemoryClockRate) / 1000.0},
            {"memory_bus_bits", attribute(cudaDevAttrGlobalMemoryBusWidth)},
            {"l2_bytes", prop.l2CacheSize},
            {"shared_memory_per_block_bytes", prop.sharedMemPerBlockOptin},
            {"memory_bytes", double(prop.totalGlobalMem)},
            {"driver", version(driver)},
            {"runtime", version(runtime)}};
  }
  void copy(void* to, const void* from, std::size_t bytes) const override {
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
  }
  void gather(void* to, const void* from, const std::int32_t* rows, std::size_t count,
              std::size_t row_bytes) const override {
    cuda_gather(to, from, rows, count, row_bytes);
    check(cudaGetLastError(), "gather");
  }
  void empty_kernel() const override { check(cuda_empty_kernel(), "empty kernel"); }

  double plan_mib(const detail::Executor& executor) const override { return plan_bytes(executor) / (1 << 20); }

  // The plan's memory per edge, and all in use on the device after the calls (nothing is freed
  // during one: its peak).
  void report_memory(const detail::Executor& executor, const char* what) const override {
    check(cudaDeviceSynchronize(), what);
    const auto [free, total] = free_and_total();
    const double bytes = plan_bytes(executor), edges = double(executor.op().edges);
    std::printf("%s device memory: plan %.1f MiB (%.1f bytes per edge), %.2f GiB of %.2f GiB in use after the call\n",
                what, bytes / (1 << 20), edges > 0 ? bytes / edges : 0.0, double(total - free) / (1 << 30),
                double(total) / (1 << 30));
  }
  // All in use on the device, by any process.
  double used_bytes() const override {
    const auto [free, total] = free_and_total();
    return double(total - free);
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
  // The device's free and total bytes.
  static std::pair<std::size_t, std::size_t> free_and_total() {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return {free, total};
  }
  double plan_bytes(const detail::Executor& executor) const {
    return double(dynamic_cast<const cuda::Plan&>(executor).device_bytes());
  }

  cudaEvent_t events_[3] = {};
};

}  // namespace

std::unique_ptr<Device> cuda_device() { return std::make_unique<CudaDevice>(); }

}  // namespace dfgnn::cli
