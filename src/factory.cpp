// The one factory of every plan (include/dfgnn/detail/factory.hpp).

#include <dfgnn/detail/factory.hpp>

namespace dfgnn::detail {

std::shared_ptr<const Executor> make_executor(const char* who, const Op& op, const DegreeStats& degrees,
                                              Strategy strategy, Backend backend, Where where) {
  check_named(who, strategy, op.kind, backend);
  check_op(who, op);
  const Backend chosen = resolve_backend(who, backend, where.native ? "" : where.native_unavailable);
  if (chosen == Backend::Portable && !where.portable)
    throw Error(std::string(who) + ": the portable backend " + where.portable_unavailable);
  Builder& builder = chosen == Backend::Native ? *where.native : *where.portable;
  return builder.build(resolve_strategy(who, strategy, op, degrees, builder.facts(strategy)));
}

}  // namespace dfgnn::detail
