// LTTB downsampling (see html_downsample.hpp).
#include "results/html_downsample.hpp"

#include <cmath>

namespace dsgd {

std::vector<size_t> lttb_indices(const std::vector<double>& x, const std::vector<double>& y, size_t max_points) {
  std::vector<size_t> finite;
  finite.reserve(x.size());
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) finite.push_back(i);
  const size_t n = finite.size();
  if (n <= max_points || n <= 2) return finite;
  if (max_points < 3) return {finite.front(), finite.back()};

  std::vector<size_t> kept;
  kept.reserve(max_points);
  kept.push_back(finite.front());
  // Buckets over the inner points finite[1 .. n-2], (max_points - 2) of them.
  const double bucket = static_cast<double>(n - 2) / static_cast<double>(max_points - 2);
  size_t previous = finite.front();
  for (size_t b = 0; b < max_points - 2; ++b) {
    const size_t begin = 1 + static_cast<size_t>(std::floor(b * bucket));
    const size_t end = std::min(n - 1, 1 + static_cast<size_t>(std::floor((b + 1) * bucket)));
    // Mean of the next bucket (the last point for the last bucket).
    const size_t next_begin = end;
    const size_t next_end = std::min(n, 1 + static_cast<size_t>(std::floor((b + 2) * bucket)));
    double mean_x = 0, mean_y = 0;
    size_t count = 0;
    for (size_t k = next_begin; k < std::max(next_end, next_begin + 1) && k < n; ++k, ++count) {
      mean_x += x[finite[k]];
      mean_y += y[finite[k]];
    }
    mean_x /= static_cast<double>(count);
    mean_y /= static_cast<double>(count);
    const double ax = x[previous], ay = y[previous];
    double best_area = -1;
    size_t best = finite[begin];
    for (size_t k = begin; k < end; ++k) {
      const size_t i = finite[k];
      const double area = std::fabs((ax - mean_x) * (y[i] - ay) - (ax - x[i]) * (mean_y - ay));
      if (area > best_area) {
        best_area = area;
        best = i;
      }
    }
    kept.push_back(best);
    previous = best;
  }
  kept.push_back(finite.back());
  return kept;
}

}  // namespace dsgd
