// Timing helpers shared by the benchmark programs: a monotonic clock in seconds and the
// median of a sample.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/stats.hpp"

namespace dsgd::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  return stats_median(std::move(v));
}

}  // namespace dsgd::bench
