// See change_points.hpp. The split pass's divergence uses 2-D prefix sums of the window's
// distance matrix, so each (tau, kappa) costs O(1) and a window of w points O(w^2) per
// proposal. The t distribution's tail is the regularised incomplete beta function by its
// continued fraction (modified Lentz): one function, not worth a numerics library whose
// bundled CBLAS would compete with OpenBLAS's symbols at link time.
#include "results/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/errors.hpp"

namespace dsgd {

namespace {

// The continued fraction of I_x(a, b) (converges fast for x < (a + 1) / (a + b + 2)).
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr int kMaxTerms = 500;
  constexpr double kEps = 1e-15, kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxTerms; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));  // the even step
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));  // the odd step
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h;
}

// The regularised incomplete beta function I_x(a, b), a, b > 0.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * incomplete_beta_fraction(a, b, x) / a;
  return 1 - front * incomplete_beta_fraction(b, a, 1 - x) / b;
}

struct Moments {
  double mean = 0, var = 0;  // sample variance (n - 1)
  size_t n = 0;
};

Moments moments(const std::vector<double>& v, size_t begin, size_t end) {
  Moments m;
  m.n = end - begin;
  if (m.n == 0) return m;
  for (size_t i = begin; i < end; ++i) m.mean += v[i];
  m.mean /= static_cast<double>(m.n);
  if (m.n >= 2) {
    for (size_t i = begin; i < end; ++i) m.var += (v[i] - m.mean) * (v[i] - m.mean);
    m.var /= static_cast<double>(m.n - 1);
  }
  return m;
}

double t_test(const Moments& a, const Moments& b) {
  if (a.n == 0 || b.n == 0 || a.n + b.n <= 2) return 1;
  const double df = static_cast<double>(a.n + b.n - 2);
  const double pooled = (static_cast<double>(a.n - 1) * a.var + static_cast<double>(b.n - 1) * b.var) / df;
  const double diff = a.mean - b.mean;
  if (!(pooled > 0)) return diff == 0 ? 1.0 : 0.0;
  const double t = diff / std::sqrt(pooled * (1.0 / static_cast<double>(a.n) + 1.0 / static_cast<double>(b.n)));
  return student_t_two_sided_p(t, df);
}

// The lag-1 autocorrelation of v's residuals about each range's own mean, over [begin, index)
// and [index, end) (pairs within one range only); 0 when fewer than 3 pairs or no variance
// (residuals within rounding of the values: flat segments would otherwise correlate their
// rounding errors to rho = 1 and hide a clean step).
double residual_autocorrelation(const std::vector<double>& v, size_t begin, size_t index, size_t end, const Moments& l,
                                const Moments& r) {
  double num = 0, den = 0;
  size_t pairs = 0;
  for (size_t i = begin; i < end; ++i) {
    const double e = v[i] - (i < index ? l.mean : r.mean);
    den += e * e;
    if (i + 1 < end && i + 1 != index) {
      num += e * (v[i + 1] - (i + 1 < index ? l.mean : r.mean));
      ++pairs;
    }
  }
  const double scale = std::max({std::fabs(l.mean), std::fabs(r.mean), 1e-300});
  const double rounding = 1e-12 * scale;
  return pairs >= 3 && den > static_cast<double>(end - begin) * rounding * rounding ? num / den : 0.0;
}

// Moments whose count is the effective sample size of an AR(1) series with lag-1
// autocorrelation rho > 0: n (1 − rho) / (1 + rho), at least 1 (the variance is kept).
Moments effective(Moments m, double rho) {
  if (rho > 0 && m.n > 1) {
    const double n = static_cast<double>(m.n) * (1 - rho) / (1 + rho);
    m.n = std::max<size_t>(1, static_cast<size_t>(std::floor(n)));
  }
  return m;
}

// A point's statistics from the values of [begin, index) and [index, end).
ChangePoint point_make(const std::vector<double>& v, size_t begin, size_t index, size_t end,
                       const ChangePointOptions& o) {
  const Moments l = moments(v, begin, index), r = moments(v, index, end);
  ChangePoint cp;
  cp.index = index;
  cp.mean_before = l.mean;
  cp.mean_after = r.mean;
  cp.std_before = std::sqrt(l.var);
  cp.std_after = std::sqrt(r.var);
  cp.n_before = l.n;
  cp.n_after = r.n;
  if (o.autocorrelation) {
    const double rho = residual_autocorrelation(v, begin, index, end, l, r);
    cp.pvalue = t_test(effective(l, rho), effective(r, rho));
  } else {
    cp.pvalue = t_test(l, r);
  }
  cp.confirmed = v.size() - index >= o.min_segment;
  if (o.log_values)
    cp.relative_change = std::expm1(r.mean - l.mean);
  else
    cp.relative_change = l.mean != 0 ? r.mean / l.mean - 1 : 0.0;
  return cp;
}

// E-Divisive's divergence over one window: prefix sums of |z_i - z_j|.
class Divergence {
 public:
  Divergence(const std::vector<double>& v, size_t begin, size_t end) : begin_(begin), n_(end - begin) {
    sums_.assign((n_ + 1) * (n_ + 1), 0.0);
    for (size_t i = 0; i < n_; ++i)
      for (size_t j = 0; j < n_; ++j)
        at(i + 1, j + 1) = std::fabs(v[begin + i] - v[begin + j]) + at(i, j + 1) + at(i + 1, j) - at(i, j);
  }

  // The best split of [s, e) (absolute indices inside the window): the tau with the largest
  // Q(tau, kappa) over kappa in (tau, e]; nullopt when the interval has fewer than 2 points.
  std::optional<std::pair<size_t, double>> best(size_t s, size_t e) const {
    std::optional<std::pair<size_t, double>> out;
    for (size_t tau = s + 1; tau < e; ++tau)
      for (size_t kappa = tau + 1; kappa <= e; ++kappa) {
        const double q = divergence(s, tau, kappa);
        if (!out || q > out->second) out = std::make_pair(tau, q);
      }
    return out;
  }

 private:
  double& at(size_t i, size_t j) { return sums_[i * (n_ + 1) + j]; }
  double at(size_t i, size_t j) const { return sums_[i * (n_ + 1) + j]; }
  // Sum of |z_i - z_j| over i in [r0, r1), j in [c0, c1) (absolute indices).
  double block(size_t r0, size_t r1, size_t c0, size_t c1) const {
    r0 -= begin_, r1 -= begin_, c0 -= begin_, c1 -= begin_;
    return at(r1, c1) - at(r0, c1) - at(r1, c0) + at(r0, c0);
  }
  double divergence(size_t s, size_t tau, size_t kappa) const {
    const double m = static_cast<double>(tau - s), n = static_cast<double>(kappa - tau);
    const double between = block(s, tau, tau, kappa);
    const double left = m >= 2 ? block(s, tau, s, tau) / 2 / (m * (m - 1) / 2) : 0.0;
    const double right = n >= 2 ? block(tau, kappa, tau, kappa) / 2 / (n * (n - 1) / 2) : 0.0;
    return m * n / (m + n) * (2 * between / (m * n) - left - right);
  }

  size_t begin_, n_;
  std::vector<double> sums_;
};

// The intervals between sorted points over [begin, end).
std::vector<std::pair<size_t, size_t>> intervals_of(const std::vector<size_t>& points, size_t begin, size_t end) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t from = begin;
  for (size_t p : points) {
    if (p > from) out.emplace_back(from, p);
    from = p;
  }
  if (end > from) out.emplace_back(from, end);
  return out;
}

// A transient: two neighbouring points closer than min_segment values (one or two outlying
// commits, not a new level). Returns the less significant of the first such pair, or
// cps.size() when there is none.
size_t transient_point(const std::vector<ChangePoint>& cps, size_t min_segment) {
  for (size_t k = 0; k + 1 < cps.size(); ++k)
    if (cps[k + 1].index - cps[k].index < min_segment) return cps[k + 1].pvalue > cps[k].pvalue ? k + 1 : k;
  return cps.size();
}

// The hierarchical E-Divisive search over [begin, end) at significance `pvalue`: absolute
// indices of the points found, sorted.
std::vector<size_t> detect_window(const std::vector<double>& v, size_t begin, size_t end, double pvalue) {
  const Divergence div(v, begin, end);
  std::vector<size_t> points;
  for (;;) {
    std::optional<std::pair<size_t, double>> best;
    std::pair<size_t, size_t> where;
    for (const auto& [s, e] : intervals_of(points, begin, end))
      if (auto b = div.best(s, e); b && (!best || b->second > best->second)) {
        best = b;
        where = {s, e};
      }
    if (!best) break;
    const double p = t_test(moments(v, where.first, best->first), moments(v, best->first, where.second));
    if (p > pvalue) break;
    points.insert(std::upper_bound(points.begin(), points.end(), best->first), best->first);
  }
  return points;
}

}  // namespace

double change_points_first_pass_pvalue(double max_pvalue) {
  return max_pvalue < 0.05 ? 10 * max_pvalue : max_pvalue < 0.5 ? 2 * max_pvalue : max_pvalue;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) return 1;
  if (std::isinf(t)) return 0;
  if (std::isnan(t)) return 1;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double student_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  return t_test(moments(a, 0, a.size()), moments(b, 0, b.size()));
}

std::vector<ChangePoint> change_points_detect(const std::vector<double>& series, const ChangePointOptions& o) {
  if (o.window < 2)
    DSGD_THROW(InputError, "pass a window of 2 points or more (e.g. 50)", "change points: window {} is below 2",
               o.window);
  if (!(o.max_pvalue > 0 && o.max_pvalue <= 1))
    DSGD_THROW(InputError, "pass a p-value in (0, 1], e.g. 0.001", "change points: max p-value {} is outside (0, 1]",
               o.max_pvalue);
  if (!(o.min_magnitude >= 0) || !std::isfinite(o.min_magnitude))
    DSGD_THROW(InputError, "pass a relative change >= 0, e.g. 0.05", "change points: minimum magnitude {} is invalid",
               o.min_magnitude);
  if (o.min_segment < 1)
    DSGD_THROW(InputError, "pass 1 or more", "change points: minimum segment {} is below 1", o.min_segment);
  for (double x : series)
    if (!std::isfinite(x))
      DSGD_THROW(InputError, "drop non-finite values before detecting change points",
                 "change points: the series holds a non-finite value ({})", x);
  const size_t n = series.size();
  if (n < 2) return {};

  // 1. Split: weak points over overlapping windows at the relaxed threshold.
  const double weak_p = change_points_first_pass_pvalue(o.max_pvalue);
  const size_t step = o.window / 2;
  std::vector<size_t> weak;
  for (size_t start = 0; start < n;) {
    const size_t end = std::min(start + o.window, n);
    const std::vector<size_t> found = detect_window(series, start, end, weak_p);
    for (size_t p : found)
      if (std::find(weak.begin(), weak.end(), p) == weak.end()) weak.push_back(p);
    start = std::max(found.empty() ? size_t{0} : found.back(), start + step);
  }
  std::sort(weak.begin(), weak.end());

  // Each point's statistics between its neighbours.
  auto stats = [&](const std::vector<size_t>& points, size_t k) {
    const size_t begin = k == 0 ? 0 : points[k - 1];
    const size_t end = k + 1 < points.size() ? points[k + 1] : n;
    return point_make(series, begin, points[k], end, o);
  };
  std::vector<ChangePoint> cps;
  for (size_t k = 0; k < weak.size(); ++k) cps.push_back(stats(weak, k));

  // 2. Merge: drop the least significant point above max_pvalue, then the less significant
  // point of a transient (two points closer than min_segment), then the smallest change below
  // min_magnitude, re-testing its neighbours each time.
  while (!cps.empty()) {
    size_t drop = 0;
    for (size_t k = 1; k < cps.size(); ++k)
      if (cps[k].pvalue > cps[drop].pvalue) drop = k;
    if (cps[drop].pvalue <= o.max_pvalue) drop = transient_point(cps, o.min_segment);
    if (drop == cps.size()) {
      drop = 0;
      for (size_t k = 1; k < cps.size(); ++k)
        if (std::fabs(cps[k].relative_change) < std::fabs(cps[drop].relative_change)) drop = k;
      if (std::fabs(cps[drop].relative_change) >= o.min_magnitude) break;
    }
    cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(drop));
    std::vector<size_t> points;
    for (const ChangePoint& cp : cps) points.push_back(cp.index);
    if (drop > 0) cps[drop - 1] = stats(points, drop - 1);
    if (drop < cps.size()) cps[drop] = stats(points, drop);
  }
  return cps;
}

}  // namespace dsgd
