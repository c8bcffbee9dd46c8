// Errors: one exception type carrying context (where, what went wrong, what to do).
// Thrown by checked wrappers around MPI, SQLite, file I/O and by input validation;
// caught once in main, which prints one clear message and exits non-zero.
// Hot kernels never throw; they only assert.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace dsgd {

class Error : public std::runtime_error {
 public:
  // what: what went wrong, naming the offending thing (file, key, value).
  // hint: what the user should do about it (may be empty).
  Error(const std::string& what, std::string hint = {}) : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// A user-facing input error (bad flag, bad file, bad config). Same as Error but
// main reports it as a usage problem rather than an internal failure.
class InputError : public Error {
 public:
  using Error::Error;
};

}  // namespace dsgd

// DSGD_THROW(Kind, hint, fmt, args...) formats the message and throws Kind.
#define DSGD_THROW(Kind, hint, ...) throw Kind(fmt::format(__VA_ARGS__), hint)
