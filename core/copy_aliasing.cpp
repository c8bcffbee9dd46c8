// See copy_aliasing.hpp.
#include "core/copy_aliasing.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/stats.hpp"

namespace dsgd {

namespace {

constexpr std::string_view kTunable = "glibc.cpu.x86_rep_movsb_threshold";
// Above any copy's size: glibc then never copies with `rep movsb` (its vector loops up to the
// non-temporal threshold, non-temporal stores above it, as before).
constexpr std::string_view kTunableValue = "0x1000000000000";
constexpr const char* kBeforeVariable = "DSGD_COPY_ALIASING_BEFORE";  // "aliased_s,clean_s" across the restart
constexpr const char* kOffVariable = "DSGD_COPY_ALIASING";            // "0": no restart

CopyAliasing& found() {
  static CopyAliasing c;
  return c;
}

#if defined(__x86_64__) && defined(__GLIBC__)
constexpr bool kApplicable = true;
#else
constexpr bool kApplicable = false;
#endif

// Through a volatile pointer: the compiler cannot replace the library's copy with its own.
void* (*volatile copy_function)(void*, const void*, size_t) = std::memcpy;

double time_copy(char* dst, const char* src) {
  const double t0 = clock_now_s();
  copy_function(dst, src, kCopyAliasingBytes);
  asm volatile("" ::: "memory");
  return clock_now_s() - t0;
}

bool tunable_set(const char* tunables) {
  return tunables != nullptr && std::string_view(tunables).find(kTunable) != std::string_view::npos;
}

}  // namespace

void copy_aliasing_measure(double& aliased_s, double& clean_s) {
  aliased_s = clean_s = 0;
  if (!kApplicable) return;
  constexpr size_t kPage = 4096;
  const size_t dst_at = kCopyAliasingBytes + kPage;  // past the source, at a page boundary
  const size_t bytes = dst_at + kCopyAliasingBytes + 2 * kPage;
  char* base = static_cast<char*>(std::aligned_alloc(kPage, bytes));
  if (base == nullptr) return;
  std::memset(base, 1, bytes);
  char* aliased = base + dst_at + 16;  // destination − source ≡ 16 (mod 4096)
  char* clean = base + dst_at + 64;
  time_copy(aliased, base);
  time_copy(clean, base);
  std::vector<double> a, c;
  for (int rep = 0; rep < 9; ++rep) {
    a.push_back(time_copy(aliased, base));
    c.push_back(time_copy(clean, base));
  }
  std::free(base);
  aliased_s = stats_median(a);
  clean_s = stats_median(c);
}

void copy_aliasing_start(char** argv) {
  CopyAliasing& c = found();
  if (!kApplicable) return;
  copy_aliasing_measure(c.aliased_s, c.clean_s);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunable_set(tunables)) {
    const char* before = std::getenv(kBeforeVariable);
    if (before != nullptr && std::sscanf(before, "%lf,%lf", &c.before_aliased_s, &c.before_clean_s) == 2) {
      c.state = "avoided";
    } else {
      c.before_aliased_s = c.before_clean_s = 0;
      c.state = "set by the environment";
    }
    return;
  }
  if (!(c.aliased_s >= kCopyAliasingSlowRatio * c.clean_s) || !(c.clean_s > 0)) {
    c.state = "none";
    return;
  }
  c.state = "slow";
  if (const char* off = std::getenv(kOffVariable); off != nullptr && std::string_view(off) == "0") {
    c.why = fmt::format("{}=0", kOffVariable);
    return;
  }
  const std::string value = copy_aliasing_tunables(tunables);
  const std::string before = fmt::format("{:.9g},{:.9g}", c.aliased_s, c.clean_s);
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0 || ::setenv(kBeforeVariable, before.c_str(), 1) != 0) {
    c.why = "the environment could not be set";
    return;
  }
  ::execv("/proc/self/exe", argv);  // returns only on failure
  c.why = fmt::format("restarting the program failed: {}", std::strerror(errno));
  if (tunables != nullptr)
    ::setenv("GLIBC_TUNABLES", tunables, 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
  ::unsetenv(kBeforeVariable);
}

std::string copy_aliasing_tunables(const char* existing) {
  const std::string ours = fmt::format("{}={}", kTunable, kTunableValue);
  return existing != nullptr && *existing != '\0' ? std::string(existing) + ":" + ours : ours;
}

const CopyAliasing& copy_aliasing() {
  return found();
}

}  // namespace dsgd
