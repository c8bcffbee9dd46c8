// The weighted alpha-beta fit (see alpha_beta_fit.hpp). With u_i = 1 / t_i the weighted
// residual is r_i = 1 - alpha u_i - beta x_i u_i, and the normal equations are
//   [ S(u^2)     S(x u^2)   ] [alpha]   [ S(u)   ]
//   [ S(x u^2)   S(x^2 u^2) ] [beta ] = [ S(x u) ]
// solved in scaled units (x / max x, t / min t) so the 2x2 system stays well conditioned
// across eight decades of sizes.
#include "results/alpha_beta_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "core/stats.hpp"

namespace dsgd {

namespace {}  // namespace

AlphaBetaFit alpha_beta_fit(const std::vector<AlphaBetaPoint>& points) {
  double x_max = 0, t_min = std::numeric_limits<double>::infinity();
  for (const AlphaBetaPoint& p : points) {
    if (!std::isfinite(p.time_s) || p.time_s <= 0) {
      DSGD_THROW(Error, "", "alpha-beta fit: time {} s at {} bytes is not a positive number", p.time_s, p.bytes);
    }
    if (!std::isfinite(p.bytes) || p.bytes < 0) {
      DSGD_THROW(Error, "", "alpha-beta fit: size {} bytes is not a non-negative number", p.bytes);
    }
    x_max = std::max(x_max, p.bytes);
    t_min = std::min(t_min, p.time_s);
  }
  size_t distinct = 0;
  {
    std::vector<double> sizes;
    sizes.reserve(points.size());
    for (const AlphaBetaPoint& p : points) sizes.push_back(p.bytes);
    std::sort(sizes.begin(), sizes.end());
    distinct = static_cast<size_t>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
  }
  if (distinct < 2) {
    DSGD_THROW(InputError, "sweep at least two sizes (--min-size below --max-size)",
               "alpha-beta fit needs at least two distinct sizes (got {} point(s), {} size(s))", points.size(),
               distinct);
  }

  // Sums in scaled units: x' = x / x_max, t' = t / t_min, u' = 1 / t'.
  double suu = 0, sxuu = 0, sxxuu = 0, su = 0, sxu = 0;
  for (const AlphaBetaPoint& p : points) {
    const double x = p.bytes / x_max;
    const double u = t_min / p.time_s;
    suu += u * u;
    sxuu += x * u * u;
    sxxuu += x * x * u * u;
    su += u;
    sxu += x * u;
  }
  double alpha = 0, beta = 0;  // scaled
  AlphaBetaFit fit;
  const double det = suu * sxxuu - sxuu * sxuu;
  if (det > 0) {
    alpha = (su * sxxuu - sxu * sxuu) / det;
    beta = (suu * sxu - sxuu * su) / det;
  } else {
    alpha = -1;  // cannot happen with two distinct sizes; fall through to a one-parameter fit
  }
  if (alpha < 0) {  // latency cannot be negative: bandwidth-only fit through the origin
    fit.alpha_clamped = true;
    alpha = 0;
    beta = sxu / sxxuu;
  }
  if (!(beta > 0)) {  // no size dependence: latency-only fit
    fit.beta_clamped = true;
    beta = 0;
    alpha = su / suu;
  }
  fit.alpha_s = alpha * t_min;
  fit.beta_s_per_byte = beta * t_min / x_max;
  fit.bandwidth_bytes_per_s =
      fit.beta_s_per_byte > 0 ? 1.0 / fit.beta_s_per_byte : std::numeric_limits<double>::infinity();

  std::vector<double> errors;
  errors.reserve(points.size());
  for (const AlphaBetaPoint& p : points) {
    errors.push_back(std::abs(alpha_beta_predict(fit, p.bytes) - p.time_s) / p.time_s);
  }
  fit.rel_error = stats_median(std::move(errors));
  return fit;
}

double alpha_beta_predict(const AlphaBetaFit& fit, double bytes) {
  return fit.alpha_s + fit.beta_s_per_byte * bytes;
}

}  // namespace dsgd
