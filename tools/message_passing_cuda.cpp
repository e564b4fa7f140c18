// `dfgnn spmm|sddmm --backend cuda`: the job on the CUDA-native kernels, timed with CUDA events.

#include "message_passing_cli.hpp"

#include <dfgnn/cuda_message_passing.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dfgnn::cli {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// A device array of n T's, optionally filled from the host.
template <class T>
class Device {
 public:
  explicit Device(std::size_t n) : n_(n) { check(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  explicit Device(const std::vector<T>& h) : Device(h.size()) {
    check(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { cudaFree(p_); }
  T* get() const { return static_cast<T*>(p_); }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    check(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return h;
  }

 private:
  void* p_ = nullptr;
  std::size_t n_;
};

/// Runs f(stream) once, or warmup + iters times with CUDA events around each: median, minimum.
template <class F>
Timing timed(cudaStream_t stream, const F& f, int warmup, int iters) {
  if (iters <= 0) {
    f(stream);
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return {};
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    f(stream);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= warmup) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

Operand on(const Device<float>& d, const HostTensor& t) { return t.heads ? Operand{d.get(), t.heads, t.dim} : Operand{}; }

std::size_t used_bytes() {
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}

}  // namespace

MessageResult run_message_cuda(const HostGraph& g, const MessageJob& job) {
  const cudaStream_t stream = nullptr;
  const Device<float> lhs(job.lhs.data), rhs(job.rhs.data);
  const Operand L = on(lhs, job.lhs), R = on(rhs, job.rhs);
  // Max/min record their winners only for the backward, which needs them.
  const bool winners = !job.sddmm && (job.reduce == Reduce::Max || job.reduce == Reduce::Min) && !job.dout.empty();
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  const std::size_t outs = job.sddmm ? E * job.H * (job.op == BinaryOp::Dot ? 1 : job.D) : N * job.H * job.D;
  const Device<float> out(outs);
  const Device<edge_t> arg(winners ? N * job.H * job.D : 0);
  const std::size_t before = used_bytes();  // the plan and its workspace come on top
  const cuda::MessagePlan plan(g);
  MessageResult r;
  r.forward = timed(
      stream,
      [&](cudaStream_t s) {
        if (job.sddmm)
          cuda::gsddmm(s, plan, job.op, job.H, job.D, L, R, out.get());
        else
          cuda::gspmm(s, plan, job.message, job.reduce, job.H, job.D, L, R, out.get(), winners ? arg.get() : nullptr);
      },
      job.warmup, job.iters);
  r.extra_mib = double(used_bytes() - before) / (1 << 20);
  r.out = out.host();
  if (winners) r.arg = arg.host();
  if (job.dout.empty()) return r;
  const Device<float> dout(job.dout);
  const Device<float> dl(job.lhs.rows * job.lhs.heads * job.lhs.dim), dr(job.rhs.rows * job.rhs.heads * job.rhs.dim);
  float* drhs = job.rhs.heads ? dr.get() : nullptr;
  r.backward = timed(
      stream,
      [&](cudaStream_t s) {
        if (job.sddmm)
          cuda::gsddmm_backward(s, plan, job.op, job.H, job.D, L, R, dout.get(), dl.get(), drhs);
        else
          cuda::gspmm_backward(s, plan, job.message, job.reduce, job.H, job.D, L, R, winners ? arg.get() : nullptr,
                               dout.get(), dl.get(), drhs);
      },
      job.warmup, job.iters);
  r.dlhs = dl.host();
  if (drhs) r.drhs = dr.host();
  return r;
}

}  // namespace dfgnn::cli
