// Shared by the libFuzzer targets of tests/fuzz: a parser fed with arbitrary bytes may
// refuse them only with dsgd::Error (InputError included): any other exception, a crash,
// a hang or a leak is a bug. Inputs that need a file are written to a per-process
// temporary file (tmpfs when available).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/errors.hpp"

namespace dsgd_fuzz {

// Runs fn; swallows dsgd::Error (a refusal is the expected outcome for most inputs).
template <typename Fn>
void refuse_ok(Fn&& fn) {
  try {
    fn();
  } catch (const dsgd::Error&) {
  }
}

// A path of this process named by `tag` (tmpfs when available).
inline std::string temp_path(const std::string& tag) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/dsgd_fuzz_" + std::to_string(getpid()) + "_" + tag;
}

// Writes bytes to the file `path` (replacing it).
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
}

// Writes bytes to a file of this process named by `tag` and returns its path.
inline std::string write_temp(const std::string& tag, const uint8_t* data, size_t size) {
  const std::string path = temp_path(tag);
  write_file(path, data, size);
  return path;
}

}  // namespace dsgd_fuzz
