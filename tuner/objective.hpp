// The tuner's objective: wall-clock time to the target (virtual seconds on the sim),
// censored when a trial stops before reaching it: a censored trial counts as "at least its
// elapsed time" and never ranks above a reached trial with a smaller time.
#pragma once

#include <cstdint>
#include <vector>

namespace dsgd {

struct TrialScore {
  bool reached = false;
  double time_s = 0;    // time-to-target if reached, else elapsed evaluation time (lower bound)
  double progress = 0;  // for censored trials: best target-metric value reached, larger = closer
};

// Strict weak order, "a is better than b": reached before censored; among reached, smaller
// time; among censored, larger progress, then larger elapsed time (it was allowed to run longer
// without reaching... a longer censored time bounds it higher: ties by progress first).
bool objective_better(const TrialScore& a, const TrialScore& b);

}  // namespace dsgd
