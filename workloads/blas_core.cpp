// See blas_core.hpp.
#include "workloads/blas_core.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstdlib>
#include <utility>

#include "core/errors.hpp"

extern "C" char* openblas_get_corename(void);
// OpenBLAS's runtime core selection (driver/others/dynamic.c, builds with DYNAMIC_ARCH, as
// Debian's): quit forgets the chosen core, init chooses again, reading OPENBLAS_CORETYPE.
// Weak: an OpenBLAS built for one core has neither, and then nothing is switched.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace dsgd {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name != nullptr ? std::string(name) : std::string();
}

std::vector<std::string> blas_core_required_features(const std::string& core) {
  // OpenBLAS's x86-64 cores (driver/others/dynamic.c) grouped by the newest instructions
  // their kernels use; the SSE-level cores (Nehalem, Core2, Penryn, Atom, Opteron, ...) need
  // nothing a 64-bit x86 CPU lacks.
  static const std::pair<const char*, std::vector<std::string>> table[] = {
      {"sandybridge", {"avx"}},
      {"bulldozer", {"avx"}},
      {"piledriver", {"avx", "fma"}},
      {"steamroller", {"avx", "fma"}},
      {"excavator", {"avx2", "fma"}},
      {"haswell", {"avx2", "fma"}},
      {"zen", {"avx2", "fma"}},
      {"skylakex", {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}},
      {"cooperlake", {"avx512f", "avx512bw", "avx512vl", "avx512bf16"}},
      {"sapphirerapids", {"avx512f", "avx512bw", "avx512vl", "avx512bf16"}},
  };
  std::string lower = core;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [name, features] : table)
    if (lower == name) return features;
  return {};
}

namespace {

// __builtin_cpu_supports needs a string literal: one call per name the table uses.
bool cpu_has(const std::string& f) {
  __builtin_cpu_init();
  if (f == "avx") return __builtin_cpu_supports("avx") != 0;
  if (f == "avx2") return __builtin_cpu_supports("avx2") != 0;
  if (f == "fma") return __builtin_cpu_supports("fma") != 0;
  if (f == "avx512f") return __builtin_cpu_supports("avx512f") != 0;
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw") != 0;
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl") != 0;
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq") != 0;
  if (f == "avx512cd") return __builtin_cpu_supports("avx512cd") != 0;
  if (f == "avx512bf16") return __builtin_cpu_supports("avx512bf16") != 0;
  return true;  // not a feature this check knows: do not refuse on it
}

}  // namespace

std::vector<std::string> cpu_missing_features(const std::vector<std::string>& features) {
  std::vector<std::string> missing;
  for (const std::string& f : features)
    if (!cpu_has(f)) missing.push_back(f);
  return missing;
}

std::string blas_core_mismatch() {
  const std::string core = blas_core_name();
  const std::vector<std::string> missing = cpu_missing_features(blas_core_required_features(core));
  if (missing.empty()) return {};
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const std::string origin =
      forced != nullptr && *forced != '\0'
          ? fmt::format("the environment sets OPENBLAS_CORETYPE={}", forced)
          : std::string("OpenBLAS chose it without OPENBLAS_CORETYPE (an OpenBLAS detection fault)");
  return fmt::format(
      "OpenBLAS runs its '{}' kernels, which use {}, but this CPU has no {} ({}): the first matrix "
      "product would stop the process with an illegal instruction",
      core, fmt::join(blas_core_required_features(core), "/"), fmt::join(missing, "/"), origin);
}

namespace {

// 3: an AVX-512 core, 2: AVX2, 1: AVX, 0: SSE (and names the table does not know).
int core_level(const std::string& core) {
  const std::vector<std::string> f = blas_core_required_features(core);
  for (const std::string& x : f)
    if (x == "avx512f") return 3;
  for (const std::string& x : f)
    if (x == "avx2") return 2;
  return f.empty() ? 0 : 1;
}

}  // namespace

std::string blas_core_for_cpu() {
  for (const char* core : {"SkylakeX", "Haswell", "Sandybridge"})
    if (cpu_missing_features(blas_core_required_features(core)).empty()) return core;
  return {};
}

std::string blas_core_upgrade() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if ((forced != nullptr && *forced != '\0') || gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr)
    return {};
  const std::string before = blas_core_name(), want = blas_core_for_cpu();
  if (want.empty() || core_level(before) >= core_level(want)) return {};
  ::setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  const std::string after = blas_core_name();
  if (core_level(after) < core_level(want)) {  // this OpenBLAS has no such core: as it chose
    gotoblas_dynamic_quit();
    ::unsetenv("OPENBLAS_CORETYPE");
    gotoblas_dynamic_init();
    return {};
  }
  return before + " -> " + after;
}

std::string blas_core_start() {
  const std::string switched = blas_core_upgrade();
  blas_core_check();
  return "OpenBLAS core " + blas_core_name() + (switched.empty() ? "" : ", chosen for this CPU: " + switched);
}

void blas_core_check() {
  const std::string message = blas_core_mismatch();
  if (!message.empty())
    throw Error(message,
                "unset OPENBLAS_CORETYPE for this command, or set it to a core this CPU can run "
                "(for example OPENBLAS_CORETYPE=Nehalem runs on any x86-64)");
}

}  // namespace dsgd
