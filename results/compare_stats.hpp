// The Mann-Whitney U test (two-sided) used by `dsgd-bench compare`, as Google Benchmark's
// compare.py uses it to tell a change from noise across repetitions.
// U is the statistic of the first sample: U1 = R1 - n1(n1+1)/2, R1 the sum of its ranks in
// the pooled sample (ties get their mean rank). The p-value is
// - exact when there are no ties and n1 + n2 <= 100: the null distribution of U1 is counted
//   by the recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u) over the C(n1+n2, n1)
//   equally likely orderings, p = min(1, 2 min(P(U <= U1), P(U >= U1)));
// - otherwise the normal approximation with tie correction and continuity correction:
//   mu = n1 n2 / 2, sigma^2 = n1 n2 / 12 ((n+1) - sum(t^3 - t) / (n(n-1))) over tie groups
//   of size t, z = (|U1 - mu| - 1/2) / sigma, p = erfc(z / sqrt 2) (1 when sigma = 0).
// These are the definitions of scipy.stats.mannwhitneyu (method exact / asymptotic,
// use_continuity=True); tests/unit/test_compare.cpp checks values published for both.
#pragma once

#include <cstddef>
#include <vector>

namespace dsgd {

struct MannWhitneyResult {
  double u = 0;        // U1, the statistic of the first sample
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (no ties, small samples) or normal approximation
};

// Two-sided test of samples x and y (each non-empty; NaNs are not allowed).
MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

// The smallest two-sided p-value any outcome can reach with n1 and n2 samples and no
// ties: 2 / C(n1+n2, n1) (capped at 1). Below alpha only from 4 vs 4 repetitions on
// (2/70 = 0.029 < 0.05); 3 vs 3 gives at best 0.1.
double mann_whitney_min_p(size_t n1, size_t n2);

}  // namespace dsgd
