#pragma once
/// \file factory.hpp
/// The one factory of every plan (docs/design.md, "Layers"): the Kokkos API's Plan, the C ABI's
/// plan and the CLI hold what make_executor returns. It applies the backend rule, the element
/// type's rule and Auto once (strategy.hpp), each on the facts of the chosen backend's device,
/// and that backend builds its own plan: the portable kernels their layout (backends/kokkos),
/// the CUDA-native ones theirs (backends/cuda). Kokkos- and CUDA-free.

#include <dfgnn/detail/dispatch.hpp>
#include <dfgnn/detail/strategy.hpp>

#include <memory>
#include <string>

namespace dfgnn::detail {

/// A backend's plan for one graph and op where the calls run, being built: first what the
/// backend's device offers them (the decisions' inputs), then the plan of the resolved
/// strategy. Each is called once, in that order.
class Builder {
 public:
  virtual ~Builder() = default;
  /// The device's facts for this op and graph; `asked` spares the work only Auto, Staged and
  /// Dense read (the CUDA-native backend's batch statistics). Throws Error for an op the
  /// backend cannot run (naming it).
  virtual DeviceFacts facts(Strategy asked) = 0;
  /// The plan for `resolved` (never Auto), one the facts offered.
  virtual std::shared_ptr<const Executor> build(Strategy resolved) = 0;
};

/// Where a plan's calls run: the backends that can build a plan of an op family there (B: its
/// builder type), each bound to the graph as that backend reads it (a Kokkos space's Views, a
/// CUDA device's arrays), and why one cannot.
template <class B>
struct Backends {
  std::unique_ptr<B> portable;
  std::unique_ptr<B> native;
  std::string native_unavailable;    ///< why `native` is null: "needs ..." (resolve_backend's text)
  std::string portable_unavailable;  ///< why `portable` is null, in the same form
};
using Where = Backends<Builder>;

/// The builder of the backend resolve_backend picks for `backend` where `where` says; an Error
/// naming `who` where that backend cannot run.
template <class B>
B& chosen(const char* who, Backend backend, const Backends<B>& where) {
  const Backend b = resolve_backend(who, backend, where.native ? "" : where.native_unavailable);
  if (b == Backend::Portable && !where.portable)
    throw Error(std::string(who) + ": the portable backend " + where.portable_unavailable);
  return b == Backend::Native ? *where.native : *where.portable;
}

/// The CUDA-native backend's builder over a graph already on the current device: `g`'s arrays
/// at those addresses, which must outlive the plan (all null: the plan uploads its own copy of
/// `g`), built on `stream` (a cudaStream_t; null: the legacy stream). `g` is validated (a dfgnn
/// Graph's host copy, or checked by the caller), so it is not checked again. Defined in builds
/// with DFGNN_ENABLE_CUDA only.
std::unique_ptr<Builder> native_builder(const HostGraph& g, const edge_t* row_ptr, const node_t* src,
                                        const node_t* dst, const edge_t* edge_id, const Op& op, void* stream);

/// The plan of `op` on a graph of in-degrees `degrees` where `where` says: the backend
/// resolve_backend picks for `backend`, the strategy resolve_strategy picks for `strategy` on
/// that backend's facts, and the backend's plan for it. Errors name `who`.
std::shared_ptr<const Executor> make_executor(const char* who, const Op& op, const DegreeStats& degrees,
                                              Strategy strategy, Backend backend, Where where);

}  // namespace dfgnn::detail
