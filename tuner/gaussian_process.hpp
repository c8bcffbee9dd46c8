// Gaussian-process surrogate of the tuner (DESIGN: search strategy step 4): a GP on the log
// time-to-target over knobs scaled to [0,1], Matérn 5/2 kernel with one length scale per
// knob (ARD), observations standardized, a prior mean function (the theory prior), noise
// variance, hyperparameters fitted by maximising the log marginal likelihood. All linear
// algebra on Eigen (LLT); no matrix code of our own.
#pragma once

#include <Eigen/Dense>
#include <cstdint>

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

class GaussianProcess {
 public:
  // X: n x d, inputs in [0,1]; y: n observations; prior_mean: n values of the prior mean at X
  // (the GP models y - prior_mean). Fits the hyperparameters (seeded multi-start, deterministic
  // for a given seed) unless `fixed` is given. Throws dsgd::Error on n == 0 or shape mismatch.
  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& prior_mean, uint64_t seed,
           const GpHyper* fixed = nullptr);
  // x: one point (d); prior_mean_at_x: the prior mean there.
  GpPrediction predict(const Eigen::VectorXd& x, double prior_mean_at_x) const;
  const GpHyper& hyper() const { return hyper_; }
  double log_marginal_likelihood() const { return lml_; }

 private:
  Eigen::MatrixXd X_;
  Eigen::VectorXd alpha_;               // K^-1 (z), z standardized residuals
  Eigen::LLT<Eigen::MatrixXd> chol_;
  GpHyper hyper_;
  double y_mean_ = 0, y_scale_ = 1, lml_ = 0;
};

// Matérn 5/2 covariance of two scaled points under `h` (signal variance included).
double gp_matern52(const Eigen::VectorXd& a, const Eigen::VectorXd& b, const GpHyper& h);

}  // namespace dsgd
