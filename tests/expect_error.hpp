#pragma once
// Expectations on the dfgnn::Error a call throws: one line, naming what went wrong.

#include <dfgnn/types.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dfgnn::test {

/// The message of the dfgnn::Error thrown by f ("" and a failure when none is thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected dfgnn::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected dfgnn::Error, nothing was thrown";
  return "";
}

/// Expects f to throw a one-line dfgnn::Error containing every fragment.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  const std::string msg = error_of(f);
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const std::string& frag : fragments)
    EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
}

}  // namespace dfgnn::test
