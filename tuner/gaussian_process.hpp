// Gaussian-process surrogate of the tuner (DESIGN: search strategy step 4): a GP on the log
// time-to-target over knobs scaled to [0,1], Matérn 5/2 kernel with one length scale per
// knob (ARD), observations standardized, a prior mean function (the theory prior), noise
// variance, hyperparameters fitted by maximising the log marginal likelihood. All linear
// algebra on Eigen (LLT); no matrix code of our own.
//
// The model, exactly (n observations, d knobs):
//   r_i   = y_i - prior_mean_i                          residual of the theory prior
//   m     = mean(r),  s = std(r) (population; 1 when n == 1 or std < 1e-12)
//   z_i   = (r_i - m) / s                               standardized residuals
//   z     ~ GP(0, k) + N(0, noise_variance I)
//   k(a,b) = signal_variance (1 + √5 ρ + 5/3 ρ²) exp(-√5 ρ),  ρ² = Σ_k ((a_k - b_k) / l_k)²
// So far from the data the prediction reverts to prior_mean(x) + m: the theory prior corrected
// by the mean residual (a constant bias of the prior in log time, i.e. a constant factor in
// time, is learnt from the data; its shape is kept).
//
// Fit: maximise the log marginal likelihood of z over θ = (log l_1..log l_d, log
// signal_variance, log noise_variance) inside the box of GpFitOptions, by projected
// quasi-Newton ascent (two-metric projection: bounds whose gradient points outwards are held,
// the other coordinates follow a dense BFGS direction; Armijo backtracking along the projected
// path; a restart from the gradient direction when a search fails) with the analytic gradient
// ½ tr((α αᵀ - K⁻¹) ∂K/∂θ_j), α = K⁻¹ z, from several starts: the median heuristic (every l =
// median pairwise distance of the inputs), a long and a short length-scale start, and
// `random_starts` points drawn from the seed. The best end point wins (the first start on
// exact ties), so a seed fixes the result. K is factorized by Eigen's LLT; when it is not
// numerically positive definite, a jitter of 1e-10 × mean(diag K), then ×10 up to
// 1e-4 × mean(diag K), is added to the diagonal (the jitter used is reported).
// Cost: each LML + gradient is O(n³) (Cholesky + K⁻¹) + O(n² d); meant for n up to a few hundred.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <utility>
#include <vector>

namespace dsgd {

struct GpHyper {
  Eigen::VectorXd length_scales;  // one per input dimension, in scaled units
  double signal_variance = 1.0;   // of the standardized output
  double noise_variance = 1e-4;   // of the standardized output
};

struct GpPrediction {
  double mean = 0;      // in the original (unstandardized) output units
  double variance = 0;  // latent function variance, original units (without noise)
};

// The box and effort of the hyperparameter fit (variances in standardized output units).
struct GpFitOptions {
  double length_scale_min = 0.01;
  double length_scale_max = 10.0;
  double signal_variance_min = 1e-2;
  double signal_variance_max = 1e2;
  double noise_variance_min = 1e-6;
  double noise_variance_max = 2.0;
  int random_starts = 4;     // seeded starts on top of the three fixed ones
  int max_iterations = 200;  // quasi-Newton iterations per start
  double tolerance = 1e-5;   // stop when the projected gradient (∞-norm, per log unit) is below
  // Further starts tried after the three fixed ones and before the random ones, e.g. the previous
  // fit's hyperparameters when the tuner refits after one more trial (a warm start); each needs
  // one length scale per input dimension (others are skipped). Projected onto the box.
  std::vector<GpHyper> extra_starts;
};

class GaussianProcess {
 public:
  GaussianProcess() = default;  // default GpFitOptions (not explicit: `GaussianProcess gp = {};` works)
  explicit GaussianProcess(GpFitOptions options) : options_(std::move(options)) {}

  // X: n x d, inputs in [0,1]; y: n observations; prior_mean: n values of the prior mean at X
  // (the GP models y - prior_mean). Fits the hyperparameters (seeded multi-start, deterministic
  // for a given seed) unless `fixed` is given. Throws dsgd::Error on n == 0 or shape mismatch,
  // non-finite values, or when no start gives a positive definite covariance.
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& prior_mean, uint64_t seed,
           const GpHyper* fixed = nullptr);
  // x: one point (d); prior_mean_at_x: the prior mean there. O(n d + n²).
  GpPrediction predict(const Eigen::VectorXd& x, double prior_mean_at_x) const;
  // Many points at once: Xs is m x d, prior_mean has m values; fills mean and variance (m each).
  void predict_many(const Eigen::MatrixXd& Xs, const Eigen::VectorXd& prior_mean, Eigen::VectorXd& mean,
                    Eigen::VectorXd& variance) const;
  const GpHyper& hyper() const { return hyper_; }
  // log p(y | X, hyper) of the observations in original units (the standardized model's LML
  // minus n·log s), at the fitted (or fixed) hyperparameters.
  double log_marginal_likelihood() const { return lml_; }
  // The standardization: prediction mean = prior + y_offset() + y_scale() · (GP mean of z).
  double y_offset() const { return y_mean_; }
  double y_scale() const { return y_scale_; }
  double jitter() const { return jitter_; }             // added to diag K at the final factorization
  int fit_starts() const { return starts_; }            // starts run by the last fit (0 with `fixed`)
  int fit_evaluations() const { return evaluations_; }  // LML evaluations of the last fit
  bool fitted() const { return alpha_.size() > 0; }
  const GpFitOptions& options() const { return options_; }
  void set_options(const GpFitOptions& options) { options_ = options; }

 private:
  GpFitOptions options_;
  Eigen::MatrixXd X_;
  Eigen::VectorXd alpha_;  // K^-1 (z), z standardized residuals
  Eigen::LLT<Eigen::MatrixXd> chol_;
  GpHyper hyper_;
  double y_mean_ = 0, y_scale_ = 1, lml_ = 0, jitter_ = 0;
  int starts_ = 0, evaluations_ = 0;
};

// Matérn 5/2 covariance of two scaled points under `h` (signal variance included).
double gp_matern52(const Eigen::VectorXd& a, const Eigen::VectorXd& b, const GpHyper& h);

// P(reach the target) at x for EI weighting (acquisition_weighted_ei): the kernel-weighted share
// of reached trials nearby with a Beta(prior_reached, prior_not) prior,
//   p = (a + Σ w_i [reached_i]) / (a + b + Σ w_i),   w_i = Matérn 5/2 correlation of x and X_i
// under `length_scales` (e.g. the fitted GP's), so it is the prior mean a/(a+b) far from every
// trial and the local share of reached ones among close trials. X: n x d (all trials, reached or
// not), reached: n flags. Throws dsgd::Error on a shape mismatch or a prior <= 0.
double gp_reach_probability(const Eigen::MatrixXd& X, const std::vector<bool>& reached, const Eigen::VectorXd& x,
                            const Eigen::VectorXd& length_scales, double prior_reached = 1.0, double prior_not = 1.0);

// θ = (log l_1..log l_d, log signal_variance, log noise_variance) and back.
Eigen::VectorXd gp_pack_log_params(const GpHyper& h);
GpHyper gp_unpack_log_params(const Eigen::VectorXd& theta);

// Log marginal likelihood of standardized targets z (n) at inputs X (n x d) under h:
//   -½ zᵀ K⁻¹ z - ½ log det K - n/2 log 2π,   K = [k(x_i, x_j)] + (noise_variance + jitter) I.
// When grad is given it receives ∂LML/∂θ (θ as gp_pack_log_params; d + 2 values, the jitter held
// constant). Returns -infinity when K is not positive definite even with the largest jitter.
double gp_log_marginal_likelihood(const Eigen::MatrixXd& X, const Eigen::VectorXd& z, const GpHyper& h,
                                  Eigen::VectorXd* grad = nullptr);

}  // namespace dsgd
