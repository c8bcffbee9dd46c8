// The gradient-noise-scale estimators and the steps/examples trade-off (see noise_scale.hpp).
#include "tuner/noise_scale.hpp"

#include <cmath>
#include <limits>

#include "core/errors.hpp"

namespace dsgd {
namespace {

void check_pair(double b_small, double g_small, double b_big, double g_big) {
  if (!(b_small > 0) || !(b_big > b_small) || !std::isfinite(b_big))
    DSGD_THROW(Error, "", "noise scale: batch sizes must satisfy 0 < B_small < B_big, got {} and {}", b_small, b_big);
  if (!(g_small >= 0) || !(g_big >= 0) || !std::isfinite(g_small) || !std::isfinite(g_big))
    DSGD_THROW(Error, "", "noise scale: squared gradient norms must be finite and >= 0, got {} and {}", g_small, g_big);
}

void check_positive(double v, const char* what) {
  if (!(v > 0) || !std::isfinite(v)) DSGD_THROW(Error, "", "noise scale: {} must be finite and > 0, got {}", what, v);
}

}  // namespace

NoiseScaleEstimate noise_scale_from_estimators(double grad_sq, double trace_sigma) {
  NoiseScaleEstimate e;
  e.grad_sq = grad_sq;
  e.trace_sigma = trace_sigma;
  e.b_simple = grad_sq > 0 ? trace_sigma / grad_sq : std::numeric_limits<double>::infinity();
  e.valid = grad_sq > 0 && trace_sigma > 0;
  return e;
}

NoiseScaleEstimate noise_scale_estimate(double b_small, double grad_sq_small, double b_big, double grad_sq_big) {
  check_pair(b_small, grad_sq_small, b_big, grad_sq_big);
  const double grad_sq = (b_big * grad_sq_big - b_small * grad_sq_small) / (b_big - b_small);
  const double trace_sigma = (grad_sq_small - grad_sq_big) / (1.0 / b_small - 1.0 / b_big);
  return noise_scale_from_estimators(grad_sq, trace_sigma);
}

void NoiseScaleAccumulator::add(double b_small, double grad_sq_small, double b_big, double grad_sq_big) {
  const NoiseScaleEstimate e = noise_scale_estimate(b_small, grad_sq_small, b_big, grad_sq_big);
  sum_grad_sq_ += e.grad_sq;
  sum_trace_sigma_ += e.trace_sigma;
  ++count_;
}

void NoiseScaleAccumulator::add_estimate(const NoiseScaleEstimate& e, int64_t count) {
  sum_grad_sq_ += e.grad_sq * static_cast<double>(count);
  sum_trace_sigma_ += e.trace_sigma * static_cast<double>(count);
  count_ += count;
}

NoiseScaleEstimate NoiseScaleAccumulator::estimate() const {
  if (count_ == 0) return {};
  const double n = static_cast<double>(count_);
  return noise_scale_from_estimators(sum_grad_sq_ / n, sum_trace_sigma_ / n);
}

double noise_scale_steps(double s_min, double b_noise, double batch) {
  check_positive(b_noise, "B_noise");
  check_positive(batch, "the batch size");
  return s_min * (1.0 + b_noise / batch);
}

double noise_scale_examples(double e_min, double b_noise, double batch) {
  check_positive(b_noise, "B_noise");
  check_positive(batch, "the batch size");
  return e_min * (1.0 + batch / b_noise);
}

double noise_scale_min_steps(double steps, double b_noise, double batch) {
  check_positive(b_noise, "B_noise");
  check_positive(batch, "the batch size");
  return steps / (1.0 + b_noise / batch);
}

double noise_scale_steps_from_reference(double steps_ref, double batch_ref, double b_noise, double batch) {
  check_positive(batch_ref, "the reference batch size");
  return noise_scale_steps(noise_scale_min_steps(steps_ref, b_noise, batch_ref), b_noise, batch);
}

}  // namespace dsgd
