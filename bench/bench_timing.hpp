// Timing helpers shared by the benchmark programs: a monotonic clock in seconds and the
// median of a sample.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace dsgd::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace dsgd::bench
