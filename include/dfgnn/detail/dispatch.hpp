#pragma once
/// \file dispatch.hpp
/// The one dispatch layer (docs/design.md, "Layers"): every entry (the Kokkos API, the CUDA
/// C++ API, the C ABI) describes its call as a Call, and forward/backward check it once
/// against the plan's op and hand it to the plan's executor, the portable Kokkos kernels or the
/// CUDA-native ones. Kokkos- and CUDA-free.

#include <dfgnn/csr.hpp>
#include <dfgnn/op.hpp>

#include <memory>

namespace dfgnn::detail {

/// A backend's plan: what the dispatch hands a checked call to. Executors never check
/// arguments again; they throw only for what only they know (a tile a call's alignment
/// does not allow, an order their score lacks) and for device errors.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual const Op& op() const = 0;
  /// The resolved strategy of the kernels calls run (never Auto).
  virtual Strategy strategy() const = 0;
  /// Which kernels calls run (never Auto).
  virtual Backend backend() const = 0;
  virtual void forward(const Call& call) const = 0;
  virtual void backward(const Call& call) const = 0;
  /// Builds now what the first backward call would build (a CUDA-native plan: the transposed
  /// graph, its pieces and the backward's workspaces, on the cudaStream_t `stream`), so that a
  /// training step's preparation can run ahead of the step, e.g. in a data loader's thread.
  /// The portable plans build nothing ahead.
  virtual void prepare_backward(void* stream) const { (void)stream; }
};

/// Throws Error naming `who` unless a plan can be built for `op`: a named model, H and D >= 1,
/// and the bytes of each side's [nodes, H, D] tensor a 64-bit count (the kernels index in 64
/// bits from there).
void check_op(const char* who, const Op& op);

/// Throws Error naming `who` and the argument unless `call` fits `op` for `model`: the plan's
/// kind, a finite scale or slope, every tensor's shape (null only when empty; contiguous), an
/// optional argument left out only where its stand-in serves (and then without a gradient),
/// the edge values, the dropout rate, and no written tensor sharing a byte with a read one or
/// another written one.
void check_forward(const char* who, const Op& op, ScoreKind model, const Call& call);
void check_backward(const char* who, const Op& op, ScoreKind model, const Call& call);

/// A call on bare pointers, shaped as `op` says and of its element type (the CUDA C++ API's
/// and the C ABI's): the model_args(model).count inputs of `model` in order (a HeadVector input
/// has `count` entries; a null optional one is left out), the edge values [E, edge_heads] (null: none), the dropout and the
/// model's edge argument (model_args' edge; null: none) of extents `edge_shape` (row ones).
Call pointer_call(const Op& op, ScoreKind model, const void* const* inputs, std::size_t count,
                  const void* edge_values, int edge_heads, const Dropout& dropout,
                  const void* edge_features = nullptr, EdgeShape edge_shape = {});
/// A pointer call's forward outputs: out, logsumexp in training (float32; null: inference) and
/// the attention weights [E,H] (null: none).
void set_outputs(Call& call, const Op& op, void* out, float* logsumexp, void* weights = nullptr);
/// A pointer call's backward operands: the forward's out and logsumexp, dOut, the gradients
/// of `model`'s inputs in order (a left-out input's null) and that of its edge argument (null:
/// none), shaped as the call's edge argument.
void set_upstream(Call& call, const Op& op, ScoreKind model, const void* out, const float* logsumexp,
                  const void* dout, void* const* grads, void* edge_grad = nullptr);

/// Checks, then runs on the executor, with each left-out argument's stand-in (Call::inputs).
void forward(const char* who, const Executor& executor, ScoreKind model, const Call& call);
void backward(const char* who, const Executor& executor, ScoreKind model, const Call& call);

}  // namespace dfgnn::detail
