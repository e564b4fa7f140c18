#pragma once
/// \file pending.hpp
/// An operation begun and not yet ended: what a transport's start_all_to_all returns
/// (distributed.hpp). wait() ends it and throws the Error its end reports; the destructor ends
/// it too, reporting nothing (a plan that threw midway must not leave an exchange running over
/// buffers it frees).

#include <dfgnn/types.hpp>

#include <functional>
#include <string>
#include <utility>

namespace dfgnn {

class Pending {
 public:
  Pending() = default;
  /// `end` waits for the operation and frees what it holds; it returns a problem, or "".
  explicit Pending(std::function<std::string()> end) : end_(std::move(end)) {}
  Pending(Pending&& o) noexcept : end_(std::exchange(o.end_, nullptr)) {}
  Pending& operator=(Pending&& o) noexcept {
    if (this != &o) {
      finish();
      end_ = std::exchange(o.end_, nullptr);
    }
    return *this;
  }
  ~Pending() { finish(); }

  void wait() {
    const std::string problem = finish();
    if (!problem.empty()) throw Error(problem);
  }

 private:
  std::string finish() noexcept {
    if (!end_) return {};
    std::string problem;
    try {
      problem = std::exchange(end_, nullptr)();
    } catch (...) {
      problem = "ending an exchange failed";
    }
    return problem;
  }
  std::function<std::string()> end_;
};

}  // namespace dfgnn
