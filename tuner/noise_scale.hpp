// The gradient noise scale of McCandlish, Kaplan, Amodei et al., "An Empirical Model of
// Large-Batch Training" (2018), for the tuner's steps-to-target prior (DESIGN §8, step 2).
// Pure functions of measured squared gradient norms; no model code.
//
// G: the true gradient, Σ: the per-example gradient covariance, G_B: the mean gradient of a
// batch of B examples. E[|G_B|²] = |G|² + tr(Σ)/B. From |G_B|² measured at two batch sizes
// B_small < B_big the unbiased estimators of their appendix A.1 are
//   |G|²   ≈ (B_big |G_Bbig|² - B_small |G_Bsmall|²) / (B_big - B_small)
//   tr(Σ)  ≈ (|G_Bsmall|² - |G_Bbig|²) / (1/B_small - 1/B_big)
// and the simple noise scale B_simple = tr(Σ) / |G|² (B_noise when the Hessian is a multiple
// of the identity; used as B_noise here). In data-parallel training both norms come for free:
// B_small = the per-worker batch (the local gradient, before the all-reduce), B_big = workers ×
// per-worker batch (the averaged gradient). The ratio of two unbiased estimators is biased and
// each is noisy, so average each estimator over many steps (NoiseScaleAccumulator) and only then
// divide, as the paper does with exponential moving averages.
//
// Steps and examples to a fixed target at batch B (their eq. 2.11, 2.12):
//   S(B) = S_min (1 + B_noise / B),   E(B) = E_min (1 + B / B_noise),   E_min = S_min · B_noise,
// so (S/S_min - 1)(E/E_min - 1) = 1 and the critical batch B_crit = E_min / S_min = B_noise.
#pragma once

#include <cstdint>

namespace dsgd {

struct NoiseScaleEstimate {
  double grad_sq = 0;      // estimate of |G|² (may come out <= 0 when noise dominates)
  double trace_sigma = 0;  // estimate of tr(Σ) (may come out <= 0 for very few samples)
  double b_simple = 0;     // trace_sigma / grad_sq; +infinity when grad_sq <= 0
  bool valid = false;      // both estimates > 0 (b_simple finite and positive)
};

// One pair of measurements: |G_B|² at B_small and at B_big. Throws dsgd::Error unless
// 0 < b_small < b_big and both norms are finite and >= 0.
NoiseScaleEstimate noise_scale_estimate(double b_small, double grad_sq_small, double b_big, double grad_sq_big);

// The estimate of the estimators |G|² and tr(Σ): B_simple = tr(Σ)/|G|² (+inf when |G|² <= 0).
NoiseScaleEstimate noise_scale_from_estimators(double grad_sq, double trace_sigma);

// Averages the two unbiased estimators over many pairs before taking the ratio.
class NoiseScaleAccumulator {
 public:
  void add(double b_small, double grad_sq_small, double b_big, double grad_sq_big);
  // `count` pairs whose averaged estimators are e's (another accumulator's estimate()).
  void add_estimate(const NoiseScaleEstimate& e, int64_t count);
  int64_t count() const { return count_; }
  NoiseScaleEstimate estimate() const;  // of the means; valid == false when count() == 0

 private:
  double sum_grad_sq_ = 0, sum_trace_sigma_ = 0;
  int64_t count_ = 0;
};

// S(B) = s_min (1 + b_noise / batch).
double noise_scale_steps(double s_min, double b_noise, double batch);
// E(B) = e_min (1 + batch / b_noise).
double noise_scale_examples(double e_min, double b_noise, double batch);
// S_min from steps measured at one batch: steps / (1 + b_noise / batch).
double noise_scale_min_steps(double steps, double b_noise, double batch);
// Steps at `batch` predicted from `steps_ref` measured at `batch_ref`:
//   steps_ref (1 + b_noise / batch) / (1 + b_noise / batch_ref).
double noise_scale_steps_from_reference(double steps_ref, double batch_ref, double b_noise, double batch);

}  // namespace dsgd
