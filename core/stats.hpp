// Summaries of repeated measurements, one definition for the library, the CLI and the
// benchmarks: the median (mean of the two middle values for an even count; NaN when empty).
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

namespace dsgd {

inline double stats_median(std::vector<double> v) {
  const size_t n = v.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace dsgd
