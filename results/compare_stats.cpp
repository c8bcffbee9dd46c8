// Mann-Whitney U test (see compare_stats.hpp).
#include "results/compare_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dsgd {

namespace {

// Counts of orderings giving each U in [0, n1 n2] for sizes (n1, n2), by the recurrence
// f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u), f(0, n, 0) = f(m, 0, 0) = 1. Doubles: the
// largest count, C(100, 50) ~ 1e29, keeps ~16 significant digits.
std::vector<double> u_counts(size_t n1, size_t n2) {
  // table[m][n] as vectors of length m n + 1, built row by row over m.
  std::vector<std::vector<double>> previous(n2 + 1), current(n2 + 1);
  for (size_t n = 0; n <= n2; ++n) previous[n] = {1.0};  // m = 0
  for (size_t m = 1; m <= n1; ++m) {
    current[0] = {1.0};
    for (size_t n = 1; n <= n2; ++n) {
      std::vector<double> f(m * n + 1, 0.0);
      const std::vector<double>& a = previous[n];     // f(m-1, n, .)
      const std::vector<double>& b = current[n - 1];  // f(m, n-1, .)
      for (size_t u = 0; u < f.size(); ++u) {
        if (u >= n && u - n < a.size()) f[u] += a[u - n];
        if (u < b.size()) f[u] += b[u];
      }
      current[n] = std::move(f);
    }
    std::swap(previous, current);
  }
  return previous[n2];
}

double binomial(size_t n, size_t k) {
  double result = 1;
  for (size_t i = 1; i <= k; ++i) result = result * static_cast<double>(n - k + i) / static_cast<double>(i);
  return result;
}

}  // namespace

double mann_whitney_min_p(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1.0;
  return std::min(1.0, 2.0 / binomial(n1 + n2, std::min(n1, n2)));
}

MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  MannWhitneyResult result;
  const size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return result;

  // Pooled ranks with ties at their mean rank.
  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  pooled.reserve(n);
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_x += mean_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  result.u = rank_sum_x - dn1 * (dn1 + 1) / 2.0;

  if (!ties && n <= 100) {
    const std::vector<double> counts = u_counts(n1, n2);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const auto u = static_cast<size_t>(std::llround(result.u));
    double below = 0, above = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      if (k <= u) below += counts[k];
      if (k >= u) above += counts[k];
    }
    result.p_value = std::min(1.0, 2.0 * std::min(below, above) / total);
    result.exact = true;
    return result;
  }
  const double mu = dn1 * dn2 / 2.0;
  const double variance = dn1 * dn2 / 12.0 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (!(variance > 0)) {
    result.p_value = 1.0;
    return result;
  }
  const double z = std::max(0.0, std::fabs(result.u - mu) - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

}  // namespace dsgd
