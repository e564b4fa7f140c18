#pragma once
// The runs of the CLI's commands on host inputs, with host results: a model's forward and, in
// training, its backward (`dfgnn attention`, `dfgnn bench`), and one g-SpMM or g-SDDMM
// (`dfgnn spmm`, `dfgnn sddmm`). This process's runs build their plan through the one factory
// (detail::make_executor, make_message_executor; they apply --backend) and run the generic
// calls (detail::forward / backward, detail::run of a MessageCall), as the C ABI does, on
// tensors in the memory of the backend the factory picked, timed by that backend's clock;
// under mpirun the ranks run a DistributedRun (distributed_run.hpp).

#include "inputs.hpp"

#include <dfgnn/csr.hpp>
#include <dfgnn/detail/factory.hpp>
#include <dfgnn/detail/messages.hpp>
#include <dfgnn/message.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dfgnn::cli {

/// A model run on a graph.
class Run {
 public:
  virtual ~Run() = default;
  /// The resolved strategy and backend of its kernels (never Auto).
  virtual Strategy strategy() const = 0;
  virtual Backend backend() const = 0;
  virtual void forward() = 0;
  /// out [N,H,D] and the attention weights [E,H] (Inputs::weights) of the last forward.
  virtual std::vector<float> output() const = 0;
  virtual std::vector<float> weights() const = 0;
  /// dLoss/dOut [N,H,D] of the backward.
  virtual void set_dout(const std::vector<float>& dout) = 0;
  /// The fused backward after a training forward.
  virtual void backward() = 0;
  /// The gradients, named and ordered as gradient_sizes.
  virtual Gradients gradients() const = 0;
  /// One line on the device memory after the calls, where the backend counts it (CUDA-native).
  virtual void report_memory(const char* what) const { (void)what; }
};

/// This process's run on g (LocalRun), or under mpirun the ranks' (rank 0 gets the whole
/// results, the others empty ones). `training`: the forward keeps what the backward needs and
/// applies the inputs' dropout.
std::unique_ptr<Run> make_run(const HostGraph& g, const Inputs& in, Strategy strategy, Backend backend, bool training);

/// `size` elements of type `dtype` in a Device's memory.
struct Buffer {
  std::shared_ptr<void> data;
  std::size_t size = 0;
  DType dtype = DType::F32;
  void* get() const { return data.get(); }
};

/// Where a backend runs a LocalRun or a g-SpMM / g-SDDMM: its copy of the graph, the run's
/// tensors, and the clock of its timings (each backend's own, so that bench's numbers stay
/// comparable across versions).
/// The portable kernels' on the default Kokkos execution space (run.cpp); the CUDA-native
/// kernels' on the current CUDA device (device_cuda.cpp, built with DFGNN_ENABLE_CUDA only, so
/// that no other file includes CUDA's headers).
class Device {
 public:
  virtual ~Device() = default;
  /// The builder of this backend's plan of `op` over its copy of g (kept as long as the device).
  virtual std::unique_ptr<detail::Builder> builder(const HostGraph& g, const Op& op) = 0;
  /// The same for message passing: its plan over its copy of the square graph g.
  virtual std::unique_ptr<detail::MessageBuilder> message_builder(const HostGraph& g) = 0;
  /// Sets where a Call or a detail::MessageCall runs (their `space` and `stream`).
  template <class C>
  void place(C& call) const {
    call.space = space();
    call.stream = stream();
  }

  /// host's floats as `dtype` elements here (the floats hold dtype's values: Inputs::dtype).
  Buffer upload(const std::vector<float>& host, DType dtype) const;
  /// n zeros of `dtype`.
  Buffer zeros(std::size_t n, DType dtype) const { return upload(std::vector<float>(n), dtype); }
  std::vector<float> download(const Buffer& b) const;
  /// n elements of T at `from`, this device's memory (g-SpMM's winners: edge_t).
  template <class T>
  std::vector<T> download(const void* from, std::size_t n) const {
    std::vector<T> host(n);
    copy_out(host.data(), from, n * sizeof(T));
    return host;
  }

  /// Timing marks 0 to 2: a point in the calls' stream (CUDA events), or the host clock after a
  /// fence (Kokkos); the milliseconds between two.
  virtual void mark(int i) = 0;
  virtual double elapsed(int from, int to) = 0;

  /// The device in bench's header, and its measured copy bandwidth in GB/s (within its memory).
  virtual std::string name() const = 0;
  virtual double copy_bandwidth() = 0;
  /// What `dfgnn study` records of the device (docs/study.md): vendor, name, architecture,
  /// compute units, clocks, caches, memory, driver and runtime, where the device tells them.
  virtual nlohmann::json facts() const = 0;

  /// The kernels of study's microbenchmarks (platform.hpp times them between marks): a copy of
  /// `bytes` from `from` to `to`; a gather of `count` rows of `row_bytes` (a multiple of 4),
  /// row i of `to` from row rows[i] of `from`; a kernel that does nothing. Every pointer is
  /// this device's memory.
  virtual void copy(void* to, const void* from, std::size_t bytes) const = 0;
  virtual void gather(void* to, const void* from, const std::int32_t* rows, std::size_t count,
                      std::size_t row_bytes) const = 0;
  virtual void empty_kernel() const = 0;
  /// `bytes` of this device's memory holding host's bytes (uninitialised when host is null).
  std::shared_ptr<void> memory(std::size_t bytes, const void* host = nullptr) const;
  /// MiB of device memory the plan holds (graph copy, CSC, workspaces; -1: not counted), and a
  /// line on it after a call.
  virtual double plan_mib(const detail::Executor& executor) const {
    (void)executor;
    return -1;
  }
  virtual void report_memory(const detail::Executor& executor, const char* what) const { (void)executor, (void)what; }
  /// Bytes of device memory in use (0: not counted): what a message-passing plan and its
  /// forward add is the difference (spmm's extra_mib).
  virtual double used_bytes() const { return 0; }

 protected:
  /// Where calls run: the Kokkos execution space instance of the portable kernels, the
  /// cudaStream_t of the CUDA-native ones (null: the legacy default stream).
  virtual const void* space() const { return nullptr; }
  virtual void* stream() const { return nullptr; }
  /// At least one byte (no tensor is null), freed with the last copy of the pointer.
  virtual std::shared_ptr<void> allocate(std::size_t bytes) const = 0;
  virtual void copy_in(void* to, const void* from, std::size_t bytes) const = 0;
  virtual void copy_out(void* to, const void* from, std::size_t bytes) const = 0;
};

/// The device of a backend (Portable or Native).
std::unique_ptr<Device> make_device(Backend backend);
#ifdef DFGNN_ENABLE_CUDA
std::unique_ptr<Device> cuda_device();  ///< device_cuda.cpp
#endif

/// The median, minimum and spread of samples (milliseconds): the spread is their interquartile
/// range, which one outlier does not move.
Timing summary(std::vector<double> ms);

/// The timings of timed: the rounds', and the second pass's alone (the backward in training).
struct Timings {
  Timing total, backward;
};

/// warmup + iters rounds of `first` then `second` (where given) on `device`, each pass between
/// two of its marks: the summaries of the last iters.
Timings timed(Device& device, const std::function<void()>& first, const std::function<void()>& second, int warmup,
              int iters);

/// A run in this process: the plan make_executor builds for the backend `backend` asks
/// (resolve_backend's rule), its tensors on that backend's Device.
class LocalRun final : public Run {
 public:
  LocalRun(const HostGraph& g, const Inputs& in, Strategy strategy, Backend backend, bool training);

  Strategy strategy() const override { return executor_->strategy(); }
  Backend backend() const override { return executor_->backend(); }
  void forward() override;
  std::vector<float> output() const override { return device_->download(out_); }
  std::vector<float> weights() const override { return device_->download(weights_); }
  void set_dout(const std::vector<float>& dout) override;
  void backward() override;
  Gradients gradients() const override;
  void report_memory(const char* what) const override { device_->report_memory(*executor_, what); }

  /// warmup + iters forwards, or in training forwards and backwards, each timed by the device's
  /// marks: the summary of the last iters.
  Timings time(int warmup, int iters);

 private:
  // A call of the inputs: the model's arguments, edge values and features, dropout in training.
  Call inputs_call() const;

  const Inputs& in_;
  bool training_;
  std::unique_ptr<Device> device_;
  std::shared_ptr<const detail::Executor> executor_;
  std::vector<Buffer> inputs_, grads_;
  Buffer edge_values_, edge_features_, out_, logsumexp_, weights_, dout_, edge_grad_;
  Call forward_, backward_;
};

/// A host tensor [rows, heads, dim].
struct HostTensor {
  std::vector<float> data;
  std::size_t rows = 0;
  int heads = 0, dim = 0;  ///< heads 0: absent
};

/// One g-SpMM (or, with `sddmm`, one g-SDDMM) on a graph, its inputs in the graph's node order.
struct MessageJob {
  bool sddmm = false;
  Message message;      ///< g-SpMM
  Reduce reduce = Reduce::Sum;
  BinaryOp op = BinaryOp::Add;  ///< g-SDDMM
  int H = 1, D = 1;      ///< out [N,H,D]; g-SDDMM: the op's width (out [E,H,1] for dot)
  HostTensor lhs, rhs;   ///< g-SpMM's operands; g-SDDMM's x and y
  std::vector<float> dout;  ///< dLoss/dout: also run the backward; empty: forward only
  int warmup = 0, iters = 0;  ///< iters > 0: time the calls (median of iters after warmup)
};

/// What a run of a MessageJob returns, in the graph's node order.
struct MessageResult {
  std::vector<float> out;
  std::vector<edge_t> arg;         ///< max/min
  std::vector<float> dlhs, drhs;   ///< with dout: shaped like lhs and rhs
  Timing forward, backward;        ///< with iters
  double extra_mib = 0;            ///< device memory the plan and the forward added (Device::used_bytes)
};

/// The job through the message-passing plan make_message_executor builds for `backend`
/// (resolve_backend's rule), its tensors on that backend's Device, timed by its marks.
MessageResult run_message(const HostGraph& g, const MessageJob& job, Backend backend);

}  // namespace dfgnn::cli
