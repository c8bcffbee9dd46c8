// Summaries of repeated measurements, one definition for the library, the CLI and the
// benchmarks: the median (mean of the two middle values for an even count; NaN when empty),
// quantiles (linear interpolation between order statistics) and the relative spread.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dsgd {

inline double stats_median(std::vector<double> v) {
  const size_t n = v.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The q-quantile (0 <= q <= 1) with linear interpolation between the order statistics (the
// "type 7" of R and numpy's default); NaN when empty. Censored values may be +infinity (the
// tuner's "not reached"): a quantile between a finite value and an infinite one is infinite,
// and one that falls exactly on a finite value is that value.
inline double stats_quantile(std::vector<double> v, double q) {
  const size_t n = v.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double h = std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1);
  const auto lo = static_cast<size_t>(h);
  const size_t hi = std::min(lo + 1, n - 1);
  const double w = h - static_cast<double>(lo);
  if (w == 0 || v[lo] == v[hi]) return v[lo];
  if (std::isinf(v[hi])) return v[hi];
  return v[lo] + w * (v[hi] - v[lo]);
}

// How far apart two measurements of one thing are: |a − b| over the smaller (a move to twice
// or to half is 100 % either way). Both positive.
inline double stats_relative_gap(double a, double b) {
  return std::abs(a - b) / std::min(a, b);
}

// Interquartile range / median: how widely repeated measurements of one thing spread (0 for
// identical values). NaN when empty or when the median is not positive.
inline double stats_relative_iqr(const std::vector<double>& v) {
  const double median = stats_median(v);
  if (!(median > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (stats_quantile(v, 0.75) - stats_quantile(v, 0.25)) / median;
}

}  // namespace dsgd
