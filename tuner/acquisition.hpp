// Acquisition functions of the tuner's surrogate search (minimisation of log time-to-target).
#pragma once

namespace dsgd {

// Closed-form expected improvement for minimisation: E[max(best - f, 0)] with
// f ~ N(mean, sigma^2); sigma <= 0 gives max(best - mean, 0).
double acquisition_expected_improvement(double mean, double sigma, double best);

// EI weighted by the probability that the configuration reaches the target at all
// (p_reach in [0,1], from a classifier or the share of reached trials nearby).
double acquisition_weighted_ei(double mean, double sigma, double best, double p_reach);

}  // namespace dsgd
