// Change-point detection in a benchmark's history (`dsgd-bench history`; docs/reports.md,
// "History and change points"): where a series of per-commit values shifts, and whether the
// shift is statistically supported. Deterministic: the same series and options give the same
// points, with no permutations and no random numbers.
//
// The method is E-Divisive means with a Student's t significance test, as Fleming et al.
// describe it for Hunter ("Hunter: Using Change Point Detection to Hunt for Performance
// Regressions", ICPE 2023), after Matteson and James's E-Divisive ("A Nonparametric Approach
// for Multiple Change Point Analysis of Multivariate Data", JASA 2014):
//   1. Split: over windows of `window` points, advanced by half a window, the hierarchical
//      E-Divisive search (alpha = 1) proposes in each interval the split tau (with the end
//      kappa of its right part) that maximises the divergence
//        Q(tau, kappa) = m n / (m + n) * (2/(m n) sum_{i<tau<=j<kappa} |z_i - z_j|
//                          - sum_{i<j<tau} |z_i - z_j| / C(m, 2) - sum_{tau<=i<j<kappa} |z_i - z_j| / C(n, 2)),
//      m = tau - s, n = kappa - tau, over the interval [s, e) it lies in. A proposal becomes a
//      point when a two-sided Student's t test of the interval's values left of tau against
//      those right of it gives p <= the first-pass threshold (weak points: 10 x max_pvalue
//      when max_pvalue < 0.05, else 2 x, capped at max_pvalue when that is >= 0.5); the
//      search then goes on in the new intervals, and stops at the first proposal that fails.
//   2. Merge: every weak point is re-tested between its neighbouring points; the one with the
//      largest p-value above max_pvalue is dropped and its neighbours re-tested, until all
//      pass; then, while two neighbouring points are closer than min_segment values (a
//      transient: one or two outlying commits, not a new level), the less significant of the
//      pair is dropped likewise; then, while the smallest relative change is below
//      min_magnitude, that point is dropped likewise.
// The final p-values allow for serially correlated noise (ChangePointOptions::autocorrelation),
// which Hunter's test does not: on AR(1) noise (phi 0.5) the plain test finds ~9 false points
// per 1,000 stationary commits (bench/bench_change_points.cpp).
// A point needs min_segment values after it before it counts as confirmed (a shift at the
// last commit is reported, marked unconfirmed, and never gates).
#pragma once

#include <cstddef>
#include <vector>

namespace dsgd {

struct ChangePointOptions {
  size_t window = 50;         // points per window of the split pass (>= 2)
  double max_pvalue = 0.001;  // final significance threshold of the t test, in (0, 1]
  double min_magnitude = 0;   // smallest |mean_after / mean_before - 1| kept (0: any)
  size_t min_segment = 3;     // values after a point needed to confirm it (>= 1)
  // The series holds logarithms (of per-commit medians): relative changes are then
  // exp(mean_after - mean_before) - 1, the ratio of geometric means.
  bool log_values = false;
  // For history (results/history.hpp): whether a series of positive values is taken on the log
  // scale (relative changes; the default), or as it is (Apache Otava's convention).
  bool log_when_positive = true;
  // The final test allows for serially correlated noise (a machine that drifts slowly between
  // commits): with the residuals' lag-1 autocorrelation rho > 0, each side counts as
  // n (1 − rho) / (1 + rho) independent values (AR(1)'s effective sample size), so the t
  // test's p-value is not overstated by values that move together. false: the plain t test.
  bool autocorrelation = true;
};

struct ChangePoint {
  size_t index = 0;                        // the first value after the change (0 < index < series length)
  double mean_before = 0, mean_after = 0;  // of the values between the neighbouring points
  double std_before = 0, std_after = 0;    // sample standard deviations, same ranges
  size_t n_before = 0, n_after = 0;
  double pvalue = 1;       // two-sided Student's t test of the two ranges
  bool confirmed = false;  // at least min_segment values after it
  // mean_after / mean_before - 1 (0 when mean_before is 0); with log_values,
  // exp(mean_after - mean_before) - 1.
  double relative_change = 0;
};

// The split pass's relaxed threshold for a final max_pvalue: 10x below 0.05, 2x below 0.5, else
// max_pvalue itself.
double change_points_first_pass_pvalue(double max_pvalue);

// The two-sided p-value of Student's t statistic t with df degrees of freedom (df > 0):
// I_{df/(df+t^2)}(df/2, 1/2), the regularised incomplete beta function.
double student_t_two_sided_p(double t, double df);

// Student's two-sample t test with pooled variance of a[] against b[] (two-sided p-value);
// 1 when either side is empty or both have a single value, 0 when the variances are both 0
// and the means differ.
double student_t_test(const std::vector<double>& a, const std::vector<double>& b);

// The change points of `series`, in index order. Throws InputError for options out of range.
// A series of fewer than 2 values has none.
std::vector<ChangePoint> change_points_detect(const std::vector<double>& series, const ChangePointOptions& options);

}  // namespace dsgd
