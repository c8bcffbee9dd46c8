// The tuner's objective: wall-clock time to the target (virtual seconds on the sim),
// censored when a trial stops before reaching it: a censored trial counts as "at least its
// elapsed time" and never ranks above a reached trial with a smaller time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsgd {

struct TrialScore {
  bool reached = false;
  double time_s = 0;    // time-to-target if reached, else elapsed evaluation time (lower bound)
  double progress = 0;  // for censored trials: best target-metric value reached, larger = closer
};

// Strict weak order, "a is better than b":
//   1. reached before censored (whatever the times: a censored trial is only "at least its
//      elapsed time", so it never ranks above any reached one);
//   2. among reached, smaller time_s;
//   3. among censored, larger progress, then smaller elapsed time_s: at equal progress the
//      trial that got as far in less time is ahead (docs/tuner_math.md gives the argument).
// A NaN time counts as +infinity (the worst, reached or censored) and a NaN progress as
// -infinity, so the order stays strict weak. Equal on all keys → neither is better (callers
// break ties, e.g. by trial id).
bool objective_better(const TrialScore& a, const TrialScore& b);

// Indices 0..n-1 of `scores`, best first by objective_better, ties by index (stable).
std::vector<std::size_t> objective_rank(const std::vector<TrialScore>& scores);

}  // namespace dsgd
