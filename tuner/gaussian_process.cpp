// Gaussian process: Matérn 5/2 ARD kernel, LML with its analytic gradient, the seeded
// multi-start spectral projected gradient fit, prediction. See gaussian_process.hpp.
#include "tuner/gaussian_process.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {
namespace {

constexpr double kSqrt5 = 2.23606797749978969640;
constexpr double kLog2Pi = 1.83787706640934548356;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The pairwise squared differences per input dimension, computed once per fit: sqdiff[k](i, j)
// = (X(i,k) - X(j,k))². Every LML evaluation rebuilds K from them in O(n² d).
struct GpWorkspace {
  const Eigen::MatrixXd& X;
  const Eigen::VectorXd& z;
  std::vector<Eigen::MatrixXd> sqdiff;
  Eigen::MatrixXd rho, expo, K, Kinv;  // ρ_ij, exp(-√5 ρ_ij), K, K⁻¹ of the last factorization
  Eigen::LLT<Eigen::MatrixXd> chol;
  Eigen::VectorXd alpha;
  double jitter = 0;
  int evaluations = 0;  // lml() calls

  GpWorkspace(const Eigen::MatrixXd& X_, const Eigen::VectorXd& z_) : X(X_), z(z_) {
    const Eigen::Index n = X.rows();
    sqdiff.resize(static_cast<size_t>(X.cols()));
    for (Eigen::Index k = 0; k < X.cols(); ++k) {
      Eigen::MatrixXd& D = sqdiff[static_cast<size_t>(k)];
      D.resize(n, n);
      for (Eigen::Index j = 0; j < n; ++j)
        for (Eigen::Index i = 0; i < n; ++i) {
          const double t = X(i, k) - X(j, k);
          D(i, j) = t * t;
        }
    }
  }

  // K = Kf + noise I, factorized with jitter escalation. False when never positive definite.
  bool factorize(const GpHyper& h) {
    const Eigen::Index n = X.rows();
    Eigen::MatrixXd r2 = Eigen::MatrixXd::Zero(n, n);
    for (size_t k = 0; k < sqdiff.size(); ++k) {
      const double l = h.length_scales[static_cast<Eigen::Index>(k)];
      r2 += sqdiff[k] / (l * l);
    }
    rho = r2.cwiseSqrt();
    expo = (-kSqrt5 * rho.array()).exp().matrix();
    K = (h.signal_variance * (1.0 + kSqrt5 * rho.array() + (5.0 / 3.0) * r2.array()) * expo.array()).matrix();
    K.diagonal().array() += h.noise_variance;
    const double mean_diag = K.diagonal().mean();
    jitter = 0;
    chol.compute(K);
    if (positive_definite()) return true;
    for (double j = 1e-10 * mean_diag; j <= 1.0001e-4 * mean_diag; j *= 10.0) {
      Eigen::MatrixXd Kj = K;
      Kj.diagonal().array() += j;
      chol.compute(Kj);
      if (positive_definite()) {
        jitter = j;
        K = std::move(Kj);
        return true;
      }
    }
    return false;
  }

  bool positive_definite() const {
    return chol.info() == Eigen::Success && (chol.matrixLLT().diagonal().array() > 0).all() &&
           chol.matrixLLT().diagonal().allFinite();
  }

  // LML of z at h; fills the gradient in θ when asked. -inf when not positive definite.
  double lml(const GpHyper& h, Eigen::VectorXd* grad) {
    ++evaluations;
    if (!factorize(h)) return kNegInf;
    const Eigen::Index n = X.rows();
    alpha = chol.solve(z);
    const double log_det_half = chol.matrixLLT().diagonal().array().log().sum();
    const double value = -0.5 * z.dot(alpha) - log_det_half - 0.5 * static_cast<double>(n) * kLog2Pi;
    if (!std::isfinite(value)) return kNegInf;
    if (grad != nullptr) gradient(h, *grad);
    return value;
  }

  // ∂LML/∂θ at the point of the last successful lml() call (its factorization and α).
  void gradient(const GpHyper& h, Eigen::VectorXd& grad) {
    const Eigen::Index n = X.rows(), d = X.cols();
    grad.resize(d + 2);
    Kinv = chol.solve(Eigen::MatrixXd::Identity(n, n));
    // W = α αᵀ - K⁻¹; ∂LML/∂θ_j = ½ Σ_ij W_ij ∂K_ij/∂θ_j.
    const Eigen::MatrixXd W = alpha * alpha.transpose() - Kinv;
    // ∂k/∂log l_k = 5/3 σ² (1 + √5 ρ) exp(-√5 ρ) (Δ_k / l_k)²  (finite at ρ = 0).
    const Eigen::MatrixXd WG =
        W.cwiseProduct(((5.0 / 3.0) * h.signal_variance * (1.0 + kSqrt5 * rho.array()) * expo.array()).matrix());
    for (Eigen::Index k = 0; k < d; ++k) {
      const double l = h.length_scales[k];
      grad[k] = 0.5 * WG.cwiseProduct(sqdiff[static_cast<size_t>(k)]).sum() / (l * l);
    }
    // ∂K/∂log σ² = Kf = K - (noise + jitter) I.
    const double diag_extra = h.noise_variance + jitter;
    grad[d] = 0.5 * (W.cwiseProduct(K).sum() - diag_extra * W.trace());
    // ∂K/∂log σn² = σn² I.
    grad[d + 1] = 0.5 * h.noise_variance * W.trace();
  }
};

double median_pairwise_distance(const Eigen::MatrixXd& X) {
  std::vector<double> dist;
  const Eigen::Index n = X.rows();
  dist.reserve(static_cast<size_t>(n * (n - 1) / 2));
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = i + 1; j < n; ++j) dist.push_back((X.row(i) - X.row(j)).norm());
  if (dist.empty()) return 0.5;
  const size_t mid = dist.size() / 2;
  std::nth_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(mid), dist.end());
  double med = dist[mid];
  if (dist.size() % 2 == 0) {
    const double lower = *std::max_element(dist.begin(), dist.begin() + static_cast<std::ptrdiff_t>(mid));
    med = 0.5 * (med + lower);
  }
  return med > 0 ? med : 0.5;
}

struct Box {
  Eigen::VectorXd lo, hi;
  Eigen::VectorXd project(const Eigen::VectorXd& t) const { return t.cwiseMax(lo).cwiseMin(hi); }
};

Box make_box(const GpFitOptions& o, Eigen::Index d) {
  Box b;
  b.lo.resize(d + 2);
  b.hi.resize(d + 2);
  b.lo.head(d).setConstant(std::log(o.length_scale_min));
  b.hi.head(d).setConstant(std::log(o.length_scale_max));
  b.lo[d] = std::log(o.signal_variance_min);
  b.hi[d] = std::log(o.signal_variance_max);
  b.lo[d + 1] = std::log(o.noise_variance_min);
  b.hi[d + 1] = std::log(o.noise_variance_max);
  return b;
}

// Projected quasi-Newton ascent on the box (a two-metric projection method, Bertsekas 1982,
// with a dense BFGS inverse Hessian: θ has only d + 2 entries). Variables at a bound whose
// gradient points outwards are held; the others move along H g restricted to them; the step
// follows the projected path with Armijo backtracking. A failed search restarts from H = I
// once (a projected gradient step); a second failure ends the start.
double maximize_pbfgs(GpWorkspace& ws, const Box& box, Eigen::VectorXd& theta, const GpFitOptions& o) {
  constexpr double kGamma = 1e-4;
  const Eigen::Index m = theta.size();
  theta = box.project(theta);
  Eigen::VectorXd g;
  double f = ws.lml(gp_unpack_log_params(theta), &g);
  if (!std::isfinite(f)) return kNegInf;
  Eigen::MatrixXd H = Eigen::MatrixXd::Identity(m, m);  // inverse Hessian of -LML
  bool fresh = true;                                    // H is the identity (no curvature yet)
  double f_window = f;
  Eigen::VectorXd g_new, theta_new;
  for (int it = 0; it < o.max_iterations; ++it) {
    const Eigen::VectorXd pg = box.project(theta + g) - theta;
    if (pg.lpNorm<Eigen::Infinity>() < o.tolerance) break;
    if (it % 10 == 9) {  // 10 iterations that gained nothing measurable
      if (f - f_window < 1e-10 * (1 + std::abs(f))) break;
      f_window = f;
    }
    // Held: at a bound with the gradient pointing out of the box.
    Eigen::VectorXd dir = Eigen::VectorXd::Zero(m);
    std::vector<Eigen::Index> free_idx;
    for (Eigen::Index i = 0; i < m; ++i) {
      const bool at_lo = theta[i] <= box.lo[i] && g[i] < 0, at_hi = theta[i] >= box.hi[i] && g[i] > 0;
      if (!at_lo && !at_hi) free_idx.push_back(i);
    }
    if (free_idx.empty()) break;
    for (Eigen::Index a : free_idx)
      for (Eigen::Index b : free_idx) dir[a] += H(a, b) * g[b];
    if (fresh) dir /= std::max(1.0, dir.lpNorm<Eigen::Infinity>());  // first step: at most 1 log unit
    double step = 1.0, f_new = kNegInf;
    bool accepted = false;
    for (int k = 0; k < 40; ++k, step *= 0.5) {
      theta_new = box.project(theta + step * dir);
      const double gain = g.dot(theta_new - theta);
      if (!(gain > 0)) continue;
      f_new = ws.lml(gp_unpack_log_params(theta_new), nullptr);
      if (std::isfinite(f_new) && f_new >= f + kGamma * gain) {
        accepted = true;
        break;
      }
    }
    if (!accepted) {
      if (fresh) break;  // not even a gradient step improves: converged as far as doubles tell
      H.setIdentity();
      fresh = true;
      continue;
    }
    ws.gradient(gp_unpack_log_params(theta_new), g_new);
    const Eigen::VectorXd s = theta_new - theta;
    const Eigen::VectorXd y = g - g_new;  // change of the gradient of -LML
    const double sy = s.dot(y);
    if (sy > 1e-10 * s.norm() * y.norm()) {
      if (fresh) H *= sy / y.squaredNorm();  // Shanno-Phua scaling of the first matrix
      const double rho = 1.0 / sy;
      const Eigen::MatrixXd V = Eigen::MatrixXd::Identity(m, m) - rho * s * y.transpose();
      H = V * H * V.transpose() + rho * s * s.transpose();
      fresh = false;
    }
    theta = theta_new;
    g = g_new;
    f = f_new;
  }
  return f;
}

void check_finite(const Eigen::MatrixXd& m, const char* what) {
  if (!m.allFinite())
    DSGD_THROW(Error, "the tuner passed a non-finite value", "GaussianProcess::fit: {} has a non-finite value", what);
}

}  // namespace

double gp_matern52(const Eigen::VectorXd& a, const Eigen::VectorXd& b, const GpHyper& h) {
  const double rho = (a - b).cwiseQuotient(h.length_scales).norm();
  return h.signal_variance * (1.0 + kSqrt5 * rho + (5.0 / 3.0) * rho * rho) * std::exp(-kSqrt5 * rho);
}

double gp_reach_probability(const Eigen::MatrixXd& X, const std::vector<bool>& reached, const Eigen::VectorXd& x,
                            const Eigen::VectorXd& length_scales, double prior_reached, double prior_not) {
  if (static_cast<size_t>(X.rows()) != reached.size() || x.size() != X.cols() || length_scales.size() != X.cols())
    DSGD_THROW(Error, "", "gp_reach_probability: X is {}x{}, {} flags, a point of {}, {} length scales", X.rows(),
               X.cols(), reached.size(), x.size(), length_scales.size());
  if (!(prior_reached > 0) || !(prior_not > 0))
    DSGD_THROW(Error, "", "gp_reach_probability: the Beta prior needs a, b > 0, got {} and {}", prior_reached,
               prior_not);
  GpHyper unit;
  unit.length_scales = length_scales;
  unit.signal_variance = 1.0;
  double hits = prior_reached, total = prior_reached + prior_not;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const double w = gp_matern52(X.row(i).transpose(), x, unit);
    total += w;
    if (reached[static_cast<size_t>(i)]) hits += w;
  }
  return hits / total;
}

Eigen::VectorXd gp_pack_log_params(const GpHyper& h) {
  const Eigen::Index d = h.length_scales.size();
  Eigen::VectorXd t(d + 2);
  t.head(d) = h.length_scales.array().log().matrix();
  t[d] = std::log(h.signal_variance);
  t[d + 1] = std::log(h.noise_variance);
  return t;
}

GpHyper gp_unpack_log_params(const Eigen::VectorXd& theta) {
  const Eigen::Index d = theta.size() - 2;
  GpHyper h;
  h.length_scales = theta.head(d).array().exp().matrix();
  h.signal_variance = std::exp(theta[d]);
  h.noise_variance = std::exp(theta[d + 1]);
  return h;
}

double gp_log_marginal_likelihood(const Eigen::MatrixXd& X, const Eigen::VectorXd& z, const GpHyper& h,
                                  Eigen::VectorXd* grad) {
  if (X.rows() != z.size() || h.length_scales.size() != X.cols())
    DSGD_THROW(Error, "", "gp_log_marginal_likelihood: X is {}x{}, z has {}, {} length scales", X.rows(), X.cols(),
               z.size(), h.length_scales.size());
  GpWorkspace ws(X, z);
  return ws.lml(h, grad);
}

void GaussianProcess::fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& prior_mean,
                          uint64_t seed, const GpHyper* fixed) {
  const Eigen::Index n = X.rows(), d = X.cols();
  if (n == 0 || d == 0) DSGD_THROW(Error, "", "GaussianProcess::fit: no data ({} points, {} dimensions)", n, d);
  if (y.size() != n || prior_mean.size() != n)
    DSGD_THROW(Error, "", "GaussianProcess::fit: X has {} rows but y has {} and prior_mean {}", n, y.size(),
               prior_mean.size());
  if (fixed != nullptr && fixed->length_scales.size() != d)
    DSGD_THROW(Error, "", "GaussianProcess::fit: {} fixed length scales for {} dimensions", fixed->length_scales.size(),
               d);
  check_finite(X, "X");
  check_finite(y, "y");
  check_finite(prior_mean, "prior_mean");

  const Eigen::VectorXd r = y - prior_mean;
  y_mean_ = r.mean();
  const double sd = std::sqrt((r.array() - y_mean_).square().mean());
  y_scale_ = (n > 1 && sd > 1e-12) ? sd : 1.0;
  const Eigen::VectorXd z = (r.array() - y_mean_).matrix() / y_scale_;

  GpWorkspace ws(X, z);
  starts_ = 0;
  evaluations_ = 0;
  if (fixed != nullptr) {
    hyper_ = *fixed;
  } else {
    const GpFitOptions& o = options_;
    const Box box = make_box(o, d);
    // The starts: the median heuristic, a smooth and a wiggly one, then seeded random points.
    std::vector<Eigen::VectorXd> starts;
    auto start_at = [&](double l, double sf2, double sn2) {
      GpHyper h;
      h.length_scales = Eigen::VectorXd::Constant(d, l);
      h.signal_variance = sf2;
      h.noise_variance = sn2;
      starts.push_back(gp_pack_log_params(h));
    };
    start_at(median_pairwise_distance(X), 1.0, 1e-2);
    start_at(1.0, 1.0, 1e-3);
    start_at(0.1, 1.0, 1e-3);
    for (const GpHyper& h : o.extra_starts)
      if (h.length_scales.size() == d && h.length_scales.allFinite() && h.signal_variance > 0 && h.noise_variance > 0)
        starts.push_back(gp_pack_log_params(h));
    Rng rng(rng_derive_seed(seed, 0x6770u));
    auto log_uniform = [&](double lo, double hi) {
      return std::log(lo) + rng.uniform() * (std::log(hi) - std::log(lo));
    };
    for (int s = 0; s < o.random_starts; ++s) {
      Eigen::VectorXd t(d + 2);
      for (Eigen::Index k = 0; k < d; ++k) t[k] = log_uniform(0.05, 2.0);
      t[d] = log_uniform(0.3, 3.0);
      t[d + 1] = log_uniform(1e-5, 0.3);
      starts.push_back(t);
    }
    double best = kNegInf;
    Eigen::VectorXd best_theta;
    for (Eigen::VectorXd theta : starts) {
      const double f = maximize_pbfgs(ws, box, theta, o);
      ++starts_;
      if (f > best) {
        best = f;
        best_theta = theta;
      }
    }
    if (!std::isfinite(best))
      DSGD_THROW(Error, "check the tuner's inputs for duplicated points with wildly different values",
                 "GaussianProcess::fit: the covariance was not positive definite from any of {} starts", starts_);
    hyper_ = gp_unpack_log_params(best_theta);
  }
  const double lml_z = ws.lml(hyper_, nullptr);
  if (!std::isfinite(lml_z))
    DSGD_THROW(Error, "", "GaussianProcess::fit: the covariance is not positive definite at the given hyperparameters");
  X_ = X;
  chol_ = ws.chol;
  alpha_ = ws.alpha;
  jitter_ = ws.jitter;
  evaluations_ = ws.evaluations;
  lml_ = lml_z - static_cast<double>(n) * std::log(y_scale_);
}

GpPrediction GaussianProcess::predict(const Eigen::VectorXd& x, double prior_mean_at_x) const {
  if (!fitted()) DSGD_THROW(Error, "", "GaussianProcess::predict before fit");
  if (x.size() != X_.cols())
    DSGD_THROW(Error, "", "GaussianProcess::predict: a point of {} dimensions, fitted on {}", x.size(), X_.cols());
  const Eigen::Index n = X_.rows();
  Eigen::VectorXd kstar(n);
  for (Eigen::Index i = 0; i < n; ++i) kstar[i] = gp_matern52(X_.row(i).transpose(), x, hyper_);
  const Eigen::VectorXd v = chol_.matrixL().solve(kstar);
  GpPrediction p;
  p.mean = prior_mean_at_x + y_mean_ + y_scale_ * kstar.dot(alpha_);
  p.variance = y_scale_ * y_scale_ * std::max(hyper_.signal_variance - v.squaredNorm(), 0.0);
  return p;
}

void GaussianProcess::predict_many(const Eigen::MatrixXd& Xs, const Eigen::VectorXd& prior_mean, Eigen::VectorXd& mean,
                                   Eigen::VectorXd& variance) const {
  if (!fitted()) DSGD_THROW(Error, "", "GaussianProcess::predict_many before fit");
  if (Xs.cols() != X_.cols() || prior_mean.size() != Xs.rows())
    DSGD_THROW(Error, "", "GaussianProcess::predict_many: {}x{} points with {} prior means, fitted on {} dimensions",
               Xs.rows(), Xs.cols(), prior_mean.size(), X_.cols());
  const Eigen::Index n = X_.rows(), m = Xs.rows();
  Eigen::MatrixXd Kstar(n, m);  // Kstar(i, j) = k(X_i, Xs_j)
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i)
      Kstar(i, j) = gp_matern52(X_.row(i).transpose(), Xs.row(j).transpose(), hyper_);
  mean = (prior_mean.array() + y_mean_ + y_scale_ * (Kstar.transpose() * alpha_).array()).matrix();
  const Eigen::MatrixXd V = chol_.matrixL().solve(Kstar);
  variance =
      (y_scale_ * y_scale_ * (hyper_.signal_variance - V.colwise().squaredNorm().transpose().array()).cwiseMax(0.0))
          .matrix();
}

}  // namespace dsgd
