// The C ABI of dfgnn_capi.h: graphs, plans, and one forward and one backward for every model
// on the Kokkos host kernels or (built with DFGNN_ENABLE_CUDA) the CUDA-native ones. Each call
// is a Call on bare pointers handed to the dispatch (include/dfgnn/detail/dispatch.hpp), which checks it
// once and runs the plan's executor. Every entry catches everything: exceptions become a
// return code and a thread-local message.

#include "dfgnn_capi.h"

#include <dfgnn/csr.hpp>
#include <dfgnn/detail/dispatch.hpp>
#include <dfgnn/detail/factory.hpp>
#include <dfgnn/plan.hpp>
#include <dfgnn/partition.hpp>
#include <dfgnn/reorder.hpp>

#ifdef DFGNN_ENABLE_CUDA
#include <dfgnn/cuda.hpp>

#include <cuda_runtime_api.h>
#endif

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;
using HostMem = HostExec::memory_space;
using dfgnn::edge_t;
using dfgnn::node_t;

thread_local std::string last_error;

int fail(int code, const char* what) noexcept {
  try {
    last_error = what;
  } catch (...) {
    last_error.clear();  // no memory for the message: the code still tells the kind
  }
  return code;
}

template <class F>
int guarded(F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (const dfgnn::Error& e) {
    return fail(1, e.what());
  } catch (const std::bad_alloc&) {
    return fail(2, "dfgnn: out of host memory");
  } catch (const std::exception& e) {
    return fail(2, e.what());
  } catch (...) {
    return fail(2, "dfgnn: unknown C++ exception");
  }
}

// The host threads Kokkos starts with (dfgnn_set_host_threads; 0: Kokkos' own default).
std::atomic<int> host_threads{0};

// Kokkos is initialised by the first graph, unless the process already did it, with
// host_threads threads; finalised at exit, after Python has released its graphs and plans.
void ensure_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Kokkos::is_initialized()) return;
    const int threads = host_threads.load();
#if KOKKOS_VERSION >= 30700
    Kokkos::InitializationSettings settings;
    if (threads > 0) settings.set_num_threads(threads);
    Kokkos::initialize(settings);
#else
    Kokkos::InitArguments settings;
    if (threads > 0) settings.num_threads = threads;
    Kokkos::initialize(settings);
#endif
    std::atexit([] { Kokkos::finalize(); });
  });
}

node_t checked_nodes(int64_t num_nodes, const char* what) {
  if (num_nodes < 0 || num_nodes >= int64_t(1) << 31)
    throw dfgnn::Error(std::string("graph: ") + what + " must be in [0, 2^31), got " + std::to_string(num_nodes));
  return node_t(num_nodes);
}

// Node ids arrive as int64 (PyTorch's index type); the graph stores them as int32.
std::vector<node_t> node_ids(const int64_t* ids, int64_t count, node_t num_nodes, const char* what) {
  std::vector<node_t> out(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes)
      throw dfgnn::Error(std::string("graph: ") + what + " " + std::to_string(ids[i]) + " of edge " +
                         std::to_string(i) + " is outside [0, " + std::to_string(num_nodes) + ")");
    out[std::size_t(i)] = node_t(ids[i]);
  }
  return out;
}

// The C ABI's model codes are dfgnn::ScoreKind's values (dfgnn_capi.h).
dfgnn::ScoreKind score_kind(int kind) {
  if (kind < 0 || kind >= int(std::size(dfgnn::kModels)))
    throw dfgnn::Error("plan: unknown score kind " + std::to_string(kind));
  return dfgnn::kModels[kind];
}

dfgnn::DType element_type(int dtype) {
  if (dtype < DFGNN_F32 || dtype > DFGNN_F16) throw dfgnn::Error("plan: unknown element type " + std::to_string(dtype));
  return dfgnn::DType(dtype);
}

#ifdef DFGNN_ENABLE_CUDA
void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("dfgnn: ") + what + ": " + cudaGetErrorString(status));
}

// Makes the plan's device current for the call (PyTorch may have another one current).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    cuda_check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  }
  ~DeviceGuard() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_, previous_ = 0;
};
#define DFGNN_ON_DEVICE(plan, ...)        \
  do {                                  \
    DeviceGuard guard((plan)->device);  \
    __VA_ARGS__;                        \
  } while (0)
#else
#define DFGNN_ON_DEVICE(plan, ...) throw std::logic_error("dfgnn: a CUDA plan in a build without CUDA")
#endif

}  // namespace

// A graph on the host, or one built on a CUDA device (`device` >= 0), whose host copy is made
// by the first entry that reads it (csr, reorder, a host plan).
struct dfgnn_graph {
  explicit dfgnn_graph(dfgnn::HostGraph g) : host_graph(std::make_unique<dfgnn::Graph<HostMem>>(std::move(g))) {}
#ifdef DFGNN_ENABLE_CUDA
  dfgnn_graph(int d, dfgnn::cuda::Graph g) : device(d), on_device(std::make_shared<dfgnn::cuda::Graph>(std::move(g))) {}
#endif
  const dfgnn::Graph<HostMem>& host() const;

  int device = -1;
#ifdef DFGNN_ENABLE_CUDA
  std::shared_ptr<const dfgnn::cuda::Graph> on_device;  // shared with the plans that read it
#endif

 private:
  mutable std::once_flag copied;
  mutable std::unique_ptr<dfgnn::Graph<HostMem>> host_graph;
};

const dfgnn::Graph<HostMem>& dfgnn_graph::host() const {
#ifdef DFGNN_ENABLE_CUDA
  if (on_device)
    std::call_once(copied, [&] {
      DeviceGuard guard(device);
      host_graph = std::make_unique<dfgnn::Graph<HostMem>>(on_device->host());
    });
#endif
  return *host_graph;
}

struct dfgnn_plan {
  std::shared_ptr<const void> graph;  // a graph built on the device, which the native plan reads (freed last)
  std::shared_ptr<const dfgnn::detail::Executor> executor;  // what make_executor built
  int device = -1;  // the CUDA device of a native plan, or -1: a host plan (Kokkos)
  const char* strategy = "";
  const dfgnn::edge_t* dropout_ids = nullptr;  // the calls' dropout counter (dfgnn_plan_set_dropout_ids)
};

namespace {

using dfgnn::Call;

constexpr const char* kForward = "attention";
constexpr const char* kBackward = "attention_backward";

const dfgnn_plan& checked(const dfgnn_plan* plan) {
  if (!plan) throw dfgnn::Error("dfgnn: null plan");
  return *plan;
}

// The Call of c through p: the model is the one p was made for.
Call call_of(const dfgnn_plan& p, const dfgnn_call* c) {
  if (!c) throw dfgnn::Error("dfgnn: null call");
  const dfgnn::Op& op = p.executor->op();
  Call call = dfgnn::detail::pointer_call(op, op.kind, c->inputs, std::size_t(std::max<int64_t>(0, c->count)),
                                          c->edge_values, c->edge_heads, dfgnn::Dropout{c->dropout, c->seed, p.dropout_ids, c->seed_at},
                                          c->edge_features, {c->edge_features_heads, c->edge_features_width});
  call.param = c->param;
  return call;
}

// Runs `dispatch` on the plan's executor: a host plan on a host execution space, waited for
// (the caller's memory is only borrowed for the call); a CUDA plan on `stream`, on its device.
template <class Dispatch>
void run(const dfgnn_plan& p, Call c, intptr_t stream, const Dispatch& dispatch) {
  if (p.device < 0) {
    const HostExec exec;
    c.space = &exec;
    dispatch(c);
    exec.fence();
  } else {
    c.stream = reinterpret_cast<void*>(stream);
    DFGNN_ON_DEVICE(&p, dispatch(c));
  }
}

// The backends where `w` says: the portable kernels on the host, the CUDA-native ones on a
// device (over the graph built there, kept alive by the plan, or the caller's arrays).
dfgnn::detail::Where where_of(const dfgnn_graph& graph, const dfgnn_where& w, const dfgnn::Op& op, dfgnn_plan& p) {
  dfgnn::detail::Where where;
  if (w.device < 0) {
    where.portable = dfgnn::detail::portable_builder(HostExec(), graph.host(), op);
    where.native_unavailable = "runs CUDA tensors, not host ones";
    return where;
  }
#ifdef DFGNN_ENABLE_CUDA
  where.portable_unavailable = "runs host tensors only in this build, not CUDA ones";
  if (graph.on_device) {
    if (graph.device != w.device)
      throw dfgnn::Error("plan: the graph was built on CUDA device " + std::to_string(graph.device) +
                         ", the tensors are on device " + std::to_string(w.device));
    where.native = dfgnn::cuda::detail::builder(*graph.on_device, op, reinterpret_cast<cudaStream_t>(w.stream));
    p.graph = graph.on_device;
  } else {  // the caller's device copy of the CSR: row_ptr, and the edge arrays where there are edges
    if (!w.row_ptr || (op.edges > 0 && (!w.src || !w.dst || !w.edge_id)))
      throw dfgnn::Error("plan: null CSR arrays (a CUDA plan on a graph built on the host reads the caller's device "
                         "copy of them)");
    where.native = dfgnn::detail::native_builder(graph.host().host(), w.row_ptr, w.src, w.dst, w.edge_id, op, nullptr);
  }
#else
  where.portable_unavailable = "runs host tensors only: dfgnn was built without CUDA (DFGNN_ENABLE_CUDA=OFF)";
  where.native_unavailable = "needs dfgnn built with DFGNN_ENABLE_CUDA";
#endif
  return where;
}

// The op of a plan on `graph`, whichever side holds it.
dfgnn::Op op_of(const dfgnn_graph& graph, int kind, int heads, int dim, int dtype) {
#ifdef DFGNN_ENABLE_CUDA
  if (const auto& g = graph.on_device)
    return {score_kind(kind), element_type(dtype), heads, dim, g->num_src_nodes(), g->num_nodes(), g->num_edges()};
#endif
  const dfgnn::Graph<HostMem>& g = graph.host();
  return {score_kind(kind), element_type(dtype), heads, dim, g.num_src_nodes(), g.num_nodes(), g.num_edges()};
}

const dfgnn::DegreeStats& degrees_of(const dfgnn_graph& graph) {
#ifdef DFGNN_ENABLE_CUDA
  if (graph.on_device) return graph.on_device->stats();
#endif
  return graph.host().stats();
}

}  // namespace

extern "C" {

const char* dfgnn_last_error(void) { return last_error.c_str(); }

int dfgnn_set_device_allocator(void* (*allocate)(size_t bytes), void (*deallocate)(void* p)) {
  return guarded([&] {
#ifdef DFGNN_ENABLE_CUDA
    dfgnn::cuda::set_device_allocator({allocate, deallocate});
#else
    (void)allocate, (void)deallocate;
#endif
  });
}

const char* dfgnn_model_name(int kind) {
  if (kind < 0 || kind >= int(std::size(dfgnn::kModels))) return nullptr;
  return dfgnn::to_string(dfgnn::kModels[kind]);
}

int dfgnn_set_host_threads(int threads) {
  return guarded([&] {
    if (threads < 0) throw dfgnn::Error("host threads must be >= 0, got " + std::to_string(threads));
    host_threads = threads;
    dfgnn::set_preprocessing_threads(unsigned(threads));
  });
}

int dfgnn_host_concurrency(void) {
  ensure_kokkos();
  return int(HostExec().concurrency());
}

const char* dfgnn_host_space(void) { return HostExec::name(); }

int dfgnn_has_cuda(void) {
#ifdef DFGNN_ENABLE_CUDA
  return 1;
#else
  return 0;
#endif
}

// A square graph's one count is num_nodes in messages.
const char* src_count_name(int64_t num_src_nodes, int64_t num_dst_nodes) {
  return num_src_nodes == num_dst_nodes ? "num_nodes" : "num_src_nodes";
}

int dfgnn_graph_from_coo(int device, intptr_t stream, int64_t num_src_nodes, int64_t num_dst_nodes,
                         int64_t num_edges, const int64_t* src, const int64_t* dst, const int64_t* batch,
                         int64_t num_graphs, dfgnn_graph** graph) {
  return guarded([&] {
    const node_t ns = checked_nodes(num_src_nodes, src_count_name(num_src_nodes, num_dst_nodes)),
                 n = checked_nodes(num_dst_nodes, "num_dst_nodes");
    if (num_edges < 0) throw dfgnn::Error("graph: num_edges must be >= 0");
    if (num_edges > 0 && (!src || !dst)) throw dfgnn::Error("graph: null edge arrays");
    if (!graph) throw dfgnn::Error("graph: null result pointer");
    if (batch && (num_graphs < 0 || num_graphs >= int64_t(1) << 31))
      throw dfgnn::Error("graph: the batch has " + std::to_string(num_graphs) + " graphs, outside [0, 2^31)");
    ensure_kokkos();
    if (device >= 0) {
#ifdef DFGNN_ENABLE_CUDA
      const DeviceGuard guard(device);
      *graph = new dfgnn_graph(device, dfgnn::cuda::Graph(reinterpret_cast<cudaStream_t>(stream), ns, n, num_edges,
                                                          src, dst, batch, num_graphs));
      return;
#else
      (void)stream;
      throw dfgnn::Error("dfgnn was built without CUDA (DFGNN_ENABLE_CUDA=OFF): CUDA tensors are not supported");
#endif
    }
    dfgnn::HostGraph g = dfgnn::graph_from_edges(ns, n, node_ids(src, num_edges, ns, "source"),
                                                 node_ids(dst, num_edges, n, "destination"));
    if (batch) {
      for (int64_t j = 0; j <= num_graphs; ++j)
        if (batch[j] < 0 || batch[j] > n)
          throw dfgnn::Error("graph: graph offset " + std::to_string(j) + " is " + std::to_string(batch[j]) +
                             ", outside [0, " + std::to_string(n) + "]");
      g.graph_ptr.assign(batch, batch + num_graphs + 1);
    }
    *graph = new dfgnn_graph(std::move(g));  // Graph validates the offsets
  });
}

int dfgnn_graph_from_csr(int64_t num_src_nodes, int64_t num_dst_nodes, const int64_t* row_ptr, const int64_t* col,
                         dfgnn_graph** graph) {
  return guarded([&] {
    const node_t ns = checked_nodes(num_src_nodes, src_count_name(num_src_nodes, num_dst_nodes)),
                 n = checked_nodes(num_dst_nodes, "num_dst_nodes");
    if (!row_ptr) throw dfgnn::Error("graph: null row_ptr");
    const int64_t num_edges = row_ptr[n];
    if (num_edges < 0) throw dfgnn::Error("graph: row_ptr[N] must be >= 0");
    if (num_edges > 0 && !col) throw dfgnn::Error("graph: null col");
    if (!graph) throw dfgnn::Error("graph: null result pointer");
    ensure_kokkos();
    *graph = new dfgnn_graph(
        dfgnn::graph_from_csr(ns, n, std::vector<edge_t>(row_ptr, row_ptr + n + 1), node_ids(col, num_edges, ns, "source")));
  });
}

void dfgnn_graph_free(dfgnn_graph* graph) { delete graph; }

int dfgnn_graph_info(const dfgnn_graph* graph, int64_t* num_src_nodes, int64_t* num_dst_nodes, int64_t* num_edges,
                     int64_t* max_in_degree) {
  return guarded([&] {
    if (!graph || !num_src_nodes || !num_dst_nodes || !num_edges || !max_in_degree)
      throw dfgnn::Error("graph info: null argument");
#ifdef DFGNN_ENABLE_CUDA
    if (const auto& g = graph->on_device) {
      *num_src_nodes = g->num_src_nodes(), *num_dst_nodes = g->num_nodes(), *num_edges = g->num_edges();
      *max_in_degree = g->stats().max;
      return;
    }
#endif
    const dfgnn::Graph<HostMem>& g = graph->host();
    *num_src_nodes = g.num_src_nodes();
    *num_dst_nodes = g.num_nodes();
    *num_edges = g.num_edges();
    *max_in_degree = g.stats().max;
  });
}

int dfgnn_graph_csr(const dfgnn_graph* graph, int64_t* row_ptr, int32_t* src, int32_t* dst, int64_t* edge_id) {
  return guarded([&] {
    if (!graph || !row_ptr) throw dfgnn::Error("graph csr: null argument");
    const dfgnn::HostGraph& h = graph->host().host();
    // The edge arrays may be null when there are no edges (an empty tensor's data pointer).
    if (h.num_edges() > 0 && (!src || !dst || !edge_id)) throw dfgnn::Error("graph csr: null argument");
    std::copy(h.row_ptr.begin(), h.row_ptr.end(), row_ptr);
    std::copy(h.src.begin(), h.src.end(), src);
    std::copy(h.dst.begin(), h.dst.end(), dst);
    std::copy(h.edge_id.begin(), h.edge_id.end(), edge_id);
  });
}

int dfgnn_graph_reorder(const dfgnn_graph* graph, const char* ordering, int64_t* order, dfgnn_graph** renumbered) {
  return guarded([&] {
    if (!graph || !ordering || !renumbered) throw dfgnn::Error("graph reorder: null argument");
    const dfgnn::HostGraph& g = graph->host().host();
    if (g.num_nodes > 0 && !order) throw dfgnn::Error("graph reorder: null order");
    dfgnn::Reordered r = dfgnn::reorder(g, dfgnn::parse_ordering(ordering));
    std::copy(r.order.begin(), r.order.end(), order);
    *renumbered = new dfgnn_graph(std::move(r.graph));
  });
}

int dfgnn_graph_partition(const dfgnn_graph* graph, int ranks, int32_t* owner) {
  return guarded([&] {
    if (!graph) throw dfgnn::Error("graph partition: null graph");
    const dfgnn::HostGraph& g = graph->host().host();
    if (g.num_nodes > 0 && !owner) throw dfgnn::Error("graph partition: null owner");
    const dfgnn::Partition p = dfgnn::partition_by_edges(g, ranks);
    std::copy(p.owner.begin(), p.owner.end(), owner);
  });
}

int dfgnn_plan_create(const dfgnn_graph* graph, const dfgnn_where* where, int kind, int heads, int dim, int dtype,
                      dfgnn_plan** plan) {
  return guarded([&] {
    if (!graph) throw dfgnn::Error("plan: null graph");
    if (!where) throw dfgnn::Error("plan: null where");
    if (!plan) throw dfgnn::Error("plan: null result pointer");
    auto p = std::make_unique<dfgnn_plan>();
    p->device = where->device < 0 ? -1 : where->device;
#ifdef DFGNN_ENABLE_CUDA
    std::optional<DeviceGuard> guard;
    if (p->device >= 0) guard.emplace(p->device);
#endif
    const dfgnn::Op op = op_of(*graph, kind, heads, dim, dtype);
    p->executor = dfgnn::detail::make_executor("plan", op, degrees_of(*graph), dfgnn::Strategy::Auto,
                                               dfgnn::Backend::Auto, where_of(*graph, *where, op, *p));
    p->strategy = dfgnn::to_string(p->executor->strategy());
    *plan = p.release();
  });
}

void dfgnn_plan_free(dfgnn_plan* plan) {
#ifdef DFGNN_ENABLE_CUDA
  if (plan && plan->device >= 0) {
    DeviceGuard guard(plan->device);
    delete plan;
    return;
  }
#endif
  delete plan;
}

const char* dfgnn_plan_strategy(const dfgnn_plan* plan) {
  if (!plan) {
    fail(1, "dfgnn: null plan");
    return nullptr;
  }
  return plan->strategy;
}

int dfgnn_plan_prepare_backward(const dfgnn_plan* plan, intptr_t stream) {
  return guarded([&] {
    const dfgnn_plan& p = checked(plan);
    if (p.device >= 0) DFGNN_ON_DEVICE(&p, p.executor->prepare_backward(reinterpret_cast<void*>(stream)));
  });
}

int dfgnn_plan_set_dropout_ids(dfgnn_plan* plan, const int64_t* ids) {
  static_assert(std::is_same_v<dfgnn::edge_t, int64_t>, "dropout ids are the library's edge ids");
  return guarded([&] {
    checked(plan);
    plan->dropout_ids = ids;
  });
}

int dfgnn_forward(const dfgnn_plan* plan, intptr_t stream, const dfgnn_call* call) {
  return guarded([&] {
    const dfgnn_plan& p = checked(plan);
    Call c = call_of(p, call);
    dfgnn::detail::set_outputs(c, p.executor->op(), call->out, call->logsumexp, call->attention_weights);
    run(p, c, stream, [&](const Call& checked_call) {
      dfgnn::detail::forward(kForward, *p.executor, p.executor->op().kind, checked_call);
    });
  });
}

int dfgnn_backward(const dfgnn_plan* plan, intptr_t stream, const dfgnn_call* call) {
  return guarded([&] {
    const dfgnn_plan& p = checked(plan);
    Call c = call_of(p, call);
    dfgnn::detail::set_upstream(c, p.executor->op(), p.executor->op().kind, call->out, call->logsumexp, call->dout,
                                call->grads, call->edge_grad);
    run(p, c, stream, [&](const Call& checked_call) {
      dfgnn::detail::backward(kBackward, *p.executor, p.executor->op().kind, checked_call);
    });
  });
}

}  // extern "C"
