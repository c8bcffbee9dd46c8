// Monotonic wall clock used by every timer, in seconds on CLOCK_MONOTONIC's epoch.
// Where the kernel itself trusts the TSC (clocksource "tsc": invariant, synchronised
// across cores), it is read with rdtsc (~13 ns here) instead of clock_gettime (~41 ns on
// this VM) and scaled by a frequency measured against CLOCK_MONOTONIC over 20 ms at the
// first call: that halves the cost the recorder adds to every collective. The scale's
// error (~1e-6) makes processes drift apart by microseconds per second; the recorder
// measures rank offsets by ping-pong at every flush and interpolates, which removes such
// linear drift (engine/clock_sync). DSGD_CLOCK=steady forces clock_gettime.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace dsgd {

inline double clock_steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct ClockTsc {
  bool enabled = false;
  uint64_t tsc0 = 0;
  double t0 = 0;  // clock_steady_s() at tsc0
  double seconds_per_tick = 0;
};

// Measured once per process (core/clock.cpp).
const ClockTsc& clock_tsc();

inline double clock_now_s() {
#if defined(__x86_64__)
  static const ClockTsc& tsc = clock_tsc();
  if (tsc.enabled)
    return tsc.t0 + static_cast<double>(static_cast<int64_t>(__rdtsc() - tsc.tsc0)) * tsc.seconds_per_tick;
#endif
  return clock_steady_s();
}

// Blocks until clock_now_s() >= deadline. With may_sleep, sleeps while more than 0.5 ms
// remain (to leave the core to other ranks when there are more ranks than cores), then
// spins for precision (sleep overshoots by ~60 us); without, spins throughout, as a rank
// waiting inside MPI does (MPICH polls): its core stays awake and its caches its own.
inline void clock_hold_until(double deadline, bool may_sleep = true) {
  for (;;) {
    const double left = deadline - clock_now_s();
    if (left <= 0) return;
    if (may_sleep && left > 5e-4) std::this_thread::sleep_for(std::chrono::duration<double>(left - 4e-4));
  }
}

}  // namespace dsgd
