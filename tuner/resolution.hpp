// The ranking's resolution (internal to tuner/recommend.cpp): a ranked configuration from its
// trials, the evaluation interval that limits the top, the verdict line, R from a pilot trial
// when the user gave only --trials, and the re-measurement of leaders the interval cannot tell
// apart (docs/tuner.md, steps 2 and 6).
#pragma once

#include <vector>

#include "tuner/recommend.hpp"
#include "tuner/trial_runner.hpp"

namespace dsgd::tune_detail {

// A ranked configuration from its trials at the largest budget it ran at: the median in the
// censored order (of an even count, the worse of the middle two) and the spread of its times.
RankedConfig ranked_make(const TunePlan& plan, const Candidate& c, std::vector<TrialRow> trials, double fidelity_s,
                         bool raced);

// The evaluation interval that limits the ranking's top (0 when the top is resolved).
double resolution_limit_s(const TuneResult& result);

// The one-line verdict: the recommendation and how sure.
void verdict_make(const TunePlan& plan, TuneResult& result);

// R from a pilot trial with --trials alone; returns the plan to search with.
TunePlan pilot_trial_time(const TunePlan& plan, Runner& runner, TuneResult& result);

// Re-measures the leaders of a resolution-limited ranking at a finer evaluation interval.
void refine_resolution(const TunePlan& plan, Runner& runner, TuneResult& result);

}  // namespace dsgd::tune_detail
