// The one factory of every plan (include/dfgnn/detail/factory.hpp, messages.hpp).

#include <dfgnn/detail/factory.hpp>
#include <dfgnn/detail/messages.hpp>

namespace dfgnn::detail {

std::shared_ptr<const Executor> make_executor(const char* who, const Op& op, const DegreeStats& degrees,
                                              Strategy strategy, Backend backend, Where where) {
  check_op(who, op);
  Builder& builder = chosen(who, backend, where);
  return builder.build(resolve_strategy(who, strategy, op, degrees, builder.facts(strategy)));
}

std::shared_ptr<const MessageExecutor> make_message_executor(const char* who, Backend backend, MessageWhere where) {
  return chosen(who, backend, where).build();
}

}  // namespace dfgnn::detail
