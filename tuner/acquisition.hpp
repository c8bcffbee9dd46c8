// Acquisition functions of the tuner's surrogate search (minimisation of log time-to-target).
//
// EI(μ, σ, best) = E[max(best - f, 0)], f ~ N(μ, σ²)
//               = σ h(z),  z = (best - μ) / σ,  h(z) = z Φ(z) + φ(z)
// with Φ(z) = ½ erfc(-z/√2). For z < -2.5 the sum z Φ(z) + φ(z) cancels (it is ≈ φ(z)/z²), so
// there h(-t) = φ(t) C(t) / (t + C(t)), C(t) = 1/(t + 2/(t + 3/(t + ...))) (the Laplace
// continued fraction of the Mills ratio, R(t) = 1/(t + C(t))), which has no cancellation; the
// log form never underflows. σ <= 0 (or σ so small that z overflows) gives max(best - μ, 0).
#pragma once

namespace dsgd {

// Closed-form expected improvement for minimisation: E[max(best - f, 0)] with
// f ~ N(mean, sigma^2); sigma <= 0 gives max(best - mean, 0). Finite arguments.
double acquisition_expected_improvement(double mean, double sigma, double best);

// EI weighted by the probability that the configuration reaches the target at all
// (p_reach in [0,1], from a classifier or the share of reached trials nearby; clamped to it).
double acquisition_weighted_ei(double mean, double sigma, double best, double p_reach);

// log EI, finite wherever sigma > 0 (EI itself underflows to 0 once z < -38): for ranking
// candidates far from the incumbent. -infinity when sigma <= 0 and mean >= best.
double acquisition_log_expected_improvement(double mean, double sigma, double best);

// log of the weighted EI: log EI + log p_reach (-infinity when p_reach <= 0).
double acquisition_log_weighted_ei(double mean, double sigma, double best, double p_reach);

// h(z) = z Φ(z) + φ(z) = EI / σ, and its log; exposed for tests.
double acquisition_ei_h(double z);
double acquisition_ei_log_h(double z);

}  // namespace dsgd
