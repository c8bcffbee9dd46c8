// Monotonic wall clock used by every timer. steady_clock is CLOCK_MONOTONIC on Linux,
// shared by all processes on one host, so timestamps of ranks on one host are comparable;
// across hosts the recorder estimates offsets by ping-pong (engine/clock_sync).
#pragma once

#include <chrono>
#include <thread>

namespace dsgd {

inline double clock_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Blocks until clock_now_s() >= deadline: sleeps while more than 0.5 ms remain (to leave
// the core to other ranks), then spins for precision (sleep overshoots by ~60 us).
inline void clock_hold_until(double deadline) {
  for (;;) {
    const double left = deadline - clock_now_s();
    if (left <= 0) return;
    if (left > 5e-4) std::this_thread::sleep_for(std::chrono::duration<double>(left - 4e-4));
  }
}

}  // namespace dsgd
