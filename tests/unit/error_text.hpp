// Test helper: the message of the exception fn throws ("" when it throws none), so a test can
// check that a refusal names the flag, the value and what to do.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace dsgd::testing {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace dsgd::testing
