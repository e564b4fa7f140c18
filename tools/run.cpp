// This process's runs through the one plan factory and the generic calls, and the portable
// kernels' Device (run.hpp).

#include "run.hpp"

#include "cli_common.hpp"
#include "distributed_run.hpp"
#include "platform.hpp"

#include <dfgnn/detail/dispatch.hpp>
#include <dfgnn/message_passing.hpp>
#include <dfgnn/plan.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace dfgnn::cli {

Buffer Device::upload(const std::vector<float>& host, DType dtype) const {
  Buffer b{memory(host.size() * size_of(dtype)), host.size(), dtype};
  if (dtype == DType::F32) {
    copy_in(b.get(), host.data(), host.size() * sizeof(float));
    return b;
  }
  std::vector<std::uint16_t> bits(host.size());
  std::transform(host.begin(), host.end(), bits.begin(), [&](float x) { return to_bits(dtype, x); });
  copy_in(b.get(), bits.data(), bits.size() * sizeof(std::uint16_t));
  return b;
}

std::vector<float> Device::download(const Buffer& b) const {
  if (b.dtype == DType::F32) return download<float>(b.get(), b.size);
  const std::vector<std::uint16_t> bits = download<std::uint16_t>(b.get(), b.size);
  std::vector<float> host(b.size);
  std::transform(bits.begin(), bits.end(), host.begin(), [&](std::uint16_t x) { return from_bits(b.dtype, x); });
  return host;
}

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

// The microbenchmarks' gather on the portable device (Device::gather), in 4-byte words: the
// portable kernels' loads of feature rows. Outside the Device class: a CUDA lambda may not be
// defined in a class member.
void gather_words(const Exec& exec, float* to, const float* from, const std::int32_t* rows, std::int64_t count,
                  std::int64_t words) {
  Kokkos::parallel_for(
      "dfgnn::cli::gather", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, count * words),
      KOKKOS_LAMBDA(std::int64_t i) { to[i] = from[std::int64_t(rows[i / words]) * words + i % words]; });
}

void empty_kernel_on(const Exec& exec) {
  Kokkos::parallel_for("dfgnn::cli::empty", Kokkos::RangePolicy<Exec>(exec, 0, 1), KOKKOS_LAMBDA(int) {});
  exec.fence();
}

// The portable kernels on the default Kokkos execution space, timed by the host clock after a
// fence.
class KokkosDevice final : public Device {
 public:
  using Mem = Exec::memory_space;

  std::unique_ptr<detail::Builder> builder(const HostGraph& g, const Op& op) override {
    graph_.emplace(g);
    return detail::portable_builder(exec_, *graph_, op);
  }
  std::unique_ptr<detail::MessageBuilder> message_builder(const HostGraph& g) override {
    graph_.emplace(g);
    return detail::portable_message_builder(exec_, *graph_);
  }
  void mark(int i) override {
    exec_.fence();
    marks_[i] = std::chrono::steady_clock::now();
  }
  double elapsed(int from, int to) override {
    return std::chrono::duration<double, std::milli>(marks_[to] - marks_[from]).count();
  }
  std::string name() const override { return std::string("kokkos ") + Exec::name(); }
  // 256 MiB a copy on a host, past its caches; 1 GiB on a GPU, as the CUDA-native Device.
  double copy_bandwidth() override {
    const bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
    return measure_copy(*this, std::size_t(host ? 256 : 1024) << 20, {1, 5})["gbs"];
  }
  // The execution space, and the facts of the device it runs on where known: the host's, or
  // the CUDA device's where the CUDA-native backend is built too (only its Device includes
  // CUDA); elsewhere the space's name names the device.
  nlohmann::json facts() const override {
    nlohmann::json f{{"name", Exec::name()}, {"execution_space", Exec::name()}, {"concurrency", exec_.concurrency()}};
#if defined(KOKKOS_ENABLE_CUDA) && defined(DFGNN_ENABLE_CUDA)
    f.update(cuda_device()->facts());
#else
    if (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) f.update(host_facts());
#endif
    return f;
  }
  void copy(void* to, const void* from, std::size_t bytes) const override {
    Kokkos::deep_copy(exec_, Bytes<Mem, char>(static_cast<char*>(to), bytes),
                      Bytes<Mem, const char>(static_cast<const char*>(from), bytes));
  }
  void gather(void* to, const void* from, const std::int32_t* rows, std::size_t count,
              std::size_t row_bytes) const override {
    gather_words(exec_, static_cast<float*>(to), static_cast<const float*>(from), rows, std::int64_t(count),
                 std::int64_t(row_bytes / 4));
  }
  void empty_kernel() const override { empty_kernel_on(exec_); }

 protected:
  const void* space() const override { return &exec_; }
  std::shared_ptr<void> allocate(std::size_t bytes) const override {
    return {Kokkos::kokkos_malloc<Mem>("dfgnn::cli", std::max<std::size_t>(bytes, 1)),
            [](void* p) { Kokkos::kokkos_free<Mem>(p); }};
  }
  void copy_in(void* to, const void* from, std::size_t bytes) const override {
    Kokkos::deep_copy(Bytes<Mem, char>(static_cast<char*>(to), bytes),
                      Bytes<Kokkos::HostSpace, const char>(static_cast<const char*>(from), bytes));
  }
  void copy_out(void* to, const void* from, std::size_t bytes) const override {
    Kokkos::deep_copy(Bytes<Kokkos::HostSpace, char>(static_cast<char*>(to), bytes),
                      Bytes<Mem, const char>(static_cast<const char*>(from), bytes));
  }

 private:
  template <class Space, class T>
  using Bytes = Kokkos::View<T*, Space, Kokkos::MemoryUnmanaged>;

  Exec exec_;
  std::optional<Graph<Mem>> graph_;
  std::chrono::steady_clock::time_point marks_[3];
};

// A backend's builder B (of an op family: factory.hpp's Builder, messages.hpp's
// MessageBuilder) made when the factory first asks it: the factory asks only the backend it
// picks, so only that backend's device is made and gets a copy of the graph.
template <class B>
class Lazy {
 public:
  explicit Lazy(std::function<std::unique_ptr<B>()> make) : make_(std::move(make)) {}

 protected:
  B& made() {
    if (!made_) made_ = make_();
    return *made_;
  }

 private:
  std::function<std::unique_ptr<B>()> make_;
  std::unique_ptr<B> made_;
};

template <class B>
class Offer;

template <>
class Offer<detail::Builder> final : public detail::Builder, Lazy<detail::Builder> {
 public:
  using Lazy::Lazy;
  detail::DeviceFacts facts(Strategy asked) override { return made().facts(asked); }
  std::shared_ptr<const detail::Executor> build(Strategy resolved) override { return made().build(resolved); }
};

template <>
class Offer<detail::MessageBuilder> final : public detail::MessageBuilder, Lazy<detail::MessageBuilder> {
 public:
  using Lazy::Lazy;
  std::shared_ptr<const detail::MessageExecutor> build() override { return made().build(); }
};

// What a run offers the factory: the portable backend and, where it runs, the CUDA-native one;
// the one picked makes `device` (make_device) and its builder, `builder(*device)`.
template <class B, class Make>
detail::Backends<B> offers(std::unique_ptr<Device>& device, Make builder) {
  const auto offer = [&](Backend b) {
    return std::make_unique<Offer<B>>([&device, b, builder] {
      device = make_device(b);
      return builder(*device);
    });
  };
  detail::Backends<B> where;
  where.portable = offer(Backend::Portable);
  where.native_unavailable = native_unavailable();
  if (where.native_unavailable.empty()) where.native = offer(Backend::Native);
  return where;
}

// An operand of a message call, or its gradient, shaped like `t` as the checks see it: absent
// (no data, no extents) where t is.
detail::Extents operand(const char* name, const Buffer& b, const HostTensor& t) {
  return t.heads ? detail::Extents{name, b.get(), t.rows, std::size_t(t.heads), std::size_t(t.dim)}
                 : detail::Extents{name, nullptr, 0, 0, 0};
}

std::size_t elements(const HostTensor& t) { return t.rows * std::size_t(t.heads) * std::size_t(t.dim); }

}  // namespace

Timings timed(Device& device, const std::function<void()>& first, const std::function<void()>& second, int warmup,
              int iters) {
  std::vector<double> total, second_ms;
  for (int i = 0; i < warmup + iters; ++i) {
    device.mark(0);
    first();
    device.mark(1);
    if (second) second(), device.mark(2);
    if (i < warmup) continue;
    total.push_back(device.elapsed(0, second ? 2 : 1));
    if (second) second_ms.push_back(device.elapsed(1, 2));
  }
  return {summary(total), summary(second_ms)};
}

Timing summary(std::vector<double> ms) {
  if (ms.empty()) return {};
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return {ms[n / 2], ms.front(), ms[3 * n / 4] - ms[n / 4]};  // nearest-rank quartiles
}

std::shared_ptr<void> Device::memory(std::size_t bytes, const void* host) const {
  std::shared_ptr<void> p = allocate(bytes);
  if (host) copy_in(p.get(), host, bytes);
  return p;
}

std::unique_ptr<Device> make_device(Backend backend) {
#ifdef DFGNN_ENABLE_CUDA
  if (backend == Backend::Native) return cuda_device();
#endif
  (void)backend;
  return std::make_unique<KokkosDevice>();
}

std::unique_ptr<Run> make_run(const HostGraph& g, const Inputs& in, Strategy strategy, Backend backend, bool training) {
#ifdef DFGNN_ENABLE_MPI
  if (ranks() > 1) return std::make_unique<DistributedRun>(g, in, strategy, training);
#endif
  return std::make_unique<LocalRun>(g, in, strategy, backend, training);
}

LocalRun::LocalRun(const HostGraph& g, const Inputs& in, Strategy strategy, Backend backend, bool training)
    : in_(in), training_(training) {
  const Op op{in.kind, in.dtype, int(in.H), int(in.D), g.num_src_nodes, g.num_nodes, g.num_edges()};
  executor_ = detail::make_executor("plan", op, g.stats, strategy, backend,
                                    offers<detail::Builder>(device_, [&g, op](Device& d) { return d.builder(g, op); }));

  const DType t = in.dtype;
  for (int i = 0; i < in.args().count; ++i)  // a left-out argument stays null
    inputs_.push_back(in.given(i) ? device_->upload(in.tensors[std::size_t(i)], t) : Buffer{});
  if (in.edge_value_heads) edge_values_ = device_->upload(in.edge_values, t);
  if (in.edges()) edge_features_ = device_->upload(in.edge_features, t);
  out_ = device_->zeros(in.out_size(), t);
  if (training || in.weights) logsumexp_ = device_->zeros(in.N * in.H, DType::F32);  // the weights need it
  if (in.weights) weights_ = device_->zeros(in.E * in.H, t);
  forward_ = inputs_call();
  detail::set_outputs(forward_, op, out_.get(), static_cast<float*>(logsumexp_.get()), weights_.get());
}

Call LocalRun::inputs_call() const {
  std::vector<const void*> inputs;
  for (const Buffer& b : inputs_) inputs.push_back(b.get());
  Call c = detail::pointer_call(executor_->op(), in_.kind, inputs.data(), in_.count(), edge_values_.get(),
                                in_.edge_value_heads, training_ ? in_.dropout : Dropout{}, edge_features_.get());
  c.param = in_.param;
  device_->place(c);
  return c;
}

void LocalRun::forward() { detail::forward("attention", *executor_, in_.kind, forward_); }

void LocalRun::set_dout(const std::vector<float>& dout) {
  dout_ = device_->upload(dout, in_.dtype);
  grads_.clear();
  std::vector<void*> grads;
  for (std::size_t i = 0; i < inputs_.size(); ++i)
    grads.push_back(grads_.emplace_back(inputs_[i].get() ? device_->zeros(inputs_[i].size, in_.dtype) : Buffer{}).get());
  if (in_.edges()) edge_grad_ = device_->zeros(edge_features_.size, in_.dtype);
  backward_ = inputs_call();
  detail::set_upstream(backward_, executor_->op(), in_.kind, out_.get(), static_cast<const float*>(logsumexp_.get()),
                       dout_.get(), grads.data(), edge_grad_.get());
}

void LocalRun::backward() { detail::backward("attention_backward", *executor_, in_.kind, backward_); }

Gradients LocalRun::gradients() const {
  const auto names = gradient_sizes(in_);
  const auto args = gradient_arguments(in_);
  Gradients r;
  for (std::size_t i = 0; i < names.size(); ++i)
    r.emplace_back(names[i].first, device_->download(args[i] < in_.args().count ? grads_[std::size_t(args[i])] : edge_grad_));
  return r;
}

Timings LocalRun::time(int warmup, int iters) {
  const std::function<void()> step = [this] { backward(); };
  Timings t = timed(*device_, [this] { forward(); }, training_ ? step : nullptr, warmup, iters);
  t.total.plan_mib = t.backward.plan_mib = device_->plan_mib(*executor_);
  return t;
}

MessageResult run_message(const HostGraph& g, const MessageJob& job, Backend backend) {
  const std::size_t N = std::size_t(g.num_nodes), rows = job.sddmm ? std::size_t(g.num_edges()) : N;
  const std::size_t H = std::size_t(job.H), D = std::size_t(job.D);
  const std::size_t width = job.sddmm && job.op == BinaryOp::Dot ? 1 : D;  // out [rows, H, width]
  // Max/min record their winners only for the backward, which needs them.
  const bool winners = !job.sddmm && (job.reduce == Reduce::Max || job.reduce == Reduce::Min) && !job.dout.empty();
  std::unique_ptr<Device> device;
  Buffer lhs, rhs, out;
  std::shared_ptr<void> arg;
  double before = 0;
  // The forward's tensors go to the picked backend's device before its plan, so that
  // extra_mib counts the plan's memory and the forward's workspace alone.
  const auto executor = detail::make_message_executor(
      "message plan", backend, offers<detail::MessageBuilder>(device, [&](Device& d) {
        lhs = d.upload(job.lhs.data, DType::F32);
        if (job.rhs.heads) rhs = d.upload(job.rhs.data, DType::F32);
        out = d.zeros(rows * H * width, DType::F32);
        if (winners) arg = d.memory(N * H * D * sizeof(edge_t), std::vector<edge_t>(N * H * D).data());
        before = d.used_bytes();
        return d.message_builder(g);
      }));

  // What both passes read, as the Kokkos API's entries describe it (message_passing.hpp).
  detail::MessageCall c;
  c.message = job.message, c.reduce = job.reduce, c.op = job.op;
  c.heads = job.H, c.dim = job.sddmm && job.op == BinaryOp::Dot ? std::max(job.lhs.dim, job.rhs.dim) : job.D;
  c.lhs = operand(job.sddmm ? "x" : "lhs", lhs, job.lhs), c.rhs = operand(job.sddmm ? "y" : "rhs", rhs, job.rhs);
  if (winners) c.arg = {"arg", arg.get(), N, H, D, sizeof(edge_t)};
  device->place(c);
  // Without --iters one untimed run.
  const auto time = [&](const char* who, const detail::MessageCall& call) {
    const std::function<void()> pass = [&] { detail::run(who, *executor, call); };
    if (job.iters > 0) return timed(*device, pass, nullptr, job.warmup, job.iters).total;
    pass();
    return Timing{};
  };
  detail::MessageCall forward = c;
  forward.pass = job.sddmm ? detail::MessagePass::Sddmm : detail::MessagePass::Spmm;
  forward.out = {"out", out.get(), rows, H, width};
  MessageResult r;
  r.forward = time(job.sddmm ? "gsddmm" : "gspmm", forward);
  r.extra_mib = (device->used_bytes() - before) / (1 << 20);
  r.out = device->download(out);
  if (winners) r.arg = device->download<edge_t>(arg.get(), N * H * D);
  if (job.dout.empty()) return r;

  const Buffer dout = device->upload(job.dout, DType::F32), dlhs = device->zeros(elements(job.lhs), DType::F32);
  const Buffer drhs = job.rhs.heads ? device->zeros(elements(job.rhs), DType::F32) : Buffer{};
  detail::MessageCall backward = c;
  backward.pass = job.sddmm ? detail::MessagePass::SddmmBackward : detail::MessagePass::SpmmBackward;
  backward.dout = {"dout", dout.get(), rows, H, width};
  backward.dlhs = operand(job.sddmm ? "dx" : "dlhs", dlhs, job.lhs);
  backward.drhs = operand(job.sddmm ? "dy" : "drhs", drhs, job.rhs);
  r.backward = time(job.sddmm ? "gsddmm_backward" : "gspmm_backward", backward);
  r.dlhs = device->download(dlhs);
  if (job.rhs.heads) r.drhs = device->download(drhs);
  return r;
}

}  // namespace dfgnn::cli
