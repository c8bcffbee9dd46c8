// Monotonic wall clock used by every timer. steady_clock is CLOCK_MONOTONIC on Linux,
// shared by all processes on one host, so timestamps of ranks on one host are comparable;
// across hosts the recorder estimates offsets by ping-pong (engine/clock_sync).
#pragma once

#include <chrono>

namespace dsgd {

inline double clock_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace dsgd
