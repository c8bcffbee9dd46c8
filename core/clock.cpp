// TSC calibration for clock_now_s() (see clock.hpp): enabled only on x86-64 when the
// kernel's clocksource is "tsc" and DSGD_CLOCK is not "steady".
#include "core/clock.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace dsgd {

namespace {

#if defined(__x86_64__)
// One (steady, tsc) pair, taken from the tightest of a few rdtsc–clock–rdtsc sandwiches.
void paired_read(double& steady, uint64_t& tsc) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = __rdtsc();
    const double s = clock_steady_s();
    const uint64_t b = __rdtsc();
    if (b - a < best) {
      best = b - a;
      steady = s;
      tsc = a + (b - a) / 2;
    }
  }
}
#endif

ClockTsc calibrate() {
  ClockTsc c;
#if defined(__x86_64__)
  const char* env = std::getenv("DSGD_CLOCK");
  if (env && std::strcmp(env, "steady") == 0) return c;
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(in >> source) || source != "tsc") return c;
  double s0 = 0, s1 = 0;
  uint64_t c0 = 0, c1 = 0;
  paired_read(s0, c0);
  while (clock_steady_s() < s0 + 0.02) {
  }
  paired_read(s1, c1);
  if (c1 <= c0 || s1 <= s0) return c;
  c.seconds_per_tick = (s1 - s0) / static_cast<double>(c1 - c0);
  c.tsc0 = c0;
  c.t0 = s0;
  c.enabled = true;
#endif
  return c;
}

}  // namespace

const ClockTsc& clock_tsc() {
  static const ClockTsc c = calibrate();
  return c;
}

}  // namespace dsgd
