#pragma once
/// \file messages.hpp
/// The message-passing op family's plan and dispatch (docs/message_passing.md), as attention's
/// are (factory.hpp, dispatch.hpp): every entry (the Kokkos API's MessagePlan, the CUDA C++
/// API's cuda::MessagePlan) describes its call as a MessageCall, the dispatch checks it once
/// against the plan's graph and hands it to the plan's executor, and every plan comes from
/// make_message_executor. Kokkos- and CUDA-free.

#include <dfgnn/detail/factory.hpp>
#include <dfgnn/message.hpp>

#include <memory>

namespace dfgnn::detail {

/// Which pass a message call runs: g-SpMM, g-SDDMM or GCN's aggregation, forward or backward.
enum class MessagePass { Spmm, SpmmBackward, Sddmm, SddmmBackward, Gcn, GcnBackward };

/// One message-passing call: its pass, the message and reduce (g-SpMM) or operator (g-SDDMM),
/// and its tensors as the checks see them (message.hpp's Extents; an absent one has no data
/// and no extents). g-SDDMM's x and y are lhs and rhs, their gradients dlhs and drhs; GCN's x
/// is lhs, its gradient dlhs. `heads` and `dim`: the full H x D of the pass (its output's, or
/// its gradient's). Where it runs: the Kokkos execution space instance (`space`) of a
/// portable plan, the cudaStream_t (`stream`) of a native one.
struct MessageCall {
  MessagePass pass = MessagePass::Spmm;
  Message message;
  Reduce reduce = Reduce::Sum;
  BinaryOp op = BinaryOp::Add;
  int heads = 0, dim = 0;
  Extents lhs{"lhs", nullptr, 0, 0, 0}, rhs{"rhs", nullptr, 0, 0, 0}, arg{"arg", nullptr, 0, 0, 0, sizeof(edge_t)};
  Extents dout{"dout", nullptr, 0, 0, 0}, out{"out", nullptr, 0, 0, 0};
  Extents dlhs{"dlhs", nullptr, 0, 0, 0}, drhs{"drhs", nullptr, 0, 0, 0};
  const void* space = nullptr;
  void* stream = nullptr;
};

/// A backend's message-passing plan of a square graph: what the dispatch hands a checked call
/// to. It throws only for what only it knows (its kernels' limits) and for device errors.
class MessageExecutor {
 public:
  virtual ~MessageExecutor() = default;
  virtual node_t num_nodes() const = 0;
  virtual edge_t num_edges() const = 0;
  virtual Backend backend() const = 0;
  virtual void run(const MessageCall& call) const = 0;
};

/// Checks `call` against the plan's graph (message.hpp's checks of its pass; every message
/// starts with `who`), then runs it on the executor.
void run(const char* who, const MessageExecutor& executor, const MessageCall& call);

/// A backend's builder of a message-passing plan bound to its graph (backends/kokkos,
/// backends/cuda).
class MessageBuilder {
 public:
  virtual ~MessageBuilder() = default;
  virtual std::shared_ptr<const MessageExecutor> build() = 0;
};
using MessageWhere = Backends<MessageBuilder>;

/// The message-passing plan of the backend resolve_backend picks for `backend` where `where`
/// says. Errors name `who`.
std::shared_ptr<const MessageExecutor> make_message_executor(const char* who, Backend backend, MessageWhere where);

/// The CUDA-native message-passing builder over a square graph already on the current device:
/// `g`'s arrays at those addresses, which must outlive the plan (all null: the plan uploads its
/// own copy of `g`), as factory.hpp's native_builder for attention. Defined in builds with
/// DFGNN_ENABLE_CUDA only.
std::unique_ptr<MessageBuilder> native_message_builder(const HostGraph& g, const edge_t* row_ptr, const node_t* src,
                                                       const node_t* dst, const edge_t* edge_id);

}  // namespace dfgnn::detail
