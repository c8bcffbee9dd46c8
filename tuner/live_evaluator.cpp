// See live_evaluator.hpp.
#include "tuner/live_evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/clock.hpp"
#include "engine/shared_dataset.hpp"
#include "tuner/trial.hpp"

namespace dsgd {

namespace {

constexpr double kEvalsPerRung0 = 40;  // evaluations within the first rung's budget (resolution r0/40)
constexpr double kStepMargin = 1.25;   // steps sized for 1.25 R at the estimated step time

}  // namespace

void LiveTrialEvaluator::begin_seed(uint64_t seed) {
  RunConfig seeded = plan_.spec.base;
  seeded.seed = seed;
  seed_data_ = dataset_load_shared(seeded);
}

// Steps and evaluation interval of a candidate: fixed per (candidate, R), so every rung and
// seed trains the same schedule and a shorter trial is a prefix of a longer one.
std::pair<int64_t, int64_t> LiveTrialEvaluator::steps_of(const Candidate& c, const std::string& key) {
  auto it = steps_cache_.find(key);
  if (it != steps_cache_.end()) return it->second;
  const RunConfig cfg = candidate_config(plan_.spec, c, plan_.spec.base.seed);
  const double step_s = trial_step_time_estimate(cfg, store_);
  const double R = plan_.trial_time_s;
  int64_t steps = plan_.max_trial_steps;
  int64_t every = 1;
  if (step_s > 0) {
    steps = static_cast<int64_t>(std::ceil(R * kStepMargin / step_s)) + cfg.warmup + 1;
    every = std::max<int64_t>(1, static_cast<int64_t>(std::floor(plan_.rungs.front() / kEvalsPerRung0 / step_s)));
  }
  steps = std::min(steps, plan_.max_trial_steps);
  every = std::min(every, steps);
  return steps_cache_[key] = {steps, every};
}

TrialRow LiveTrialEvaluator::evaluate(const Candidate& c, uint64_t seed, double budget, const std::string& phase) {
  const std::string ck = candidate_key(c);
  TrialRow row;
  row.session_id = session_id_;
  row.trial_key = trial_key(ck, seed, budget);
  row.phase = phase;
  row.config_key = ck;
  row.seed = seed;
  row.budget_s = budget;
  RunConfig cfg = candidate_config(plan_.spec, c, seed);
  try {
    const auto [steps, every] = steps_of(c, ck);
    cfg.steps = steps;
    cfg.eval_every = every;
    cfg.tag = fmt::format("tune-session={}", session_id_);
    row.config_json = run_config_to_json(cfg).dump();
    const double t0 = clock_now_s();
    const TrialOutcome o = trial_run(cfg, budget, plan_.target, store_);
    trial_wall_s_ += clock_now_s() - t0;
    row.run_id = o.run_id;
    row.status = o.status;
    row.stop_reason = o.stop_reason;
    row.reached = o.reached;
    row.time_s = o.time_s;
    row.progress = o.progress;
    row.steps = o.steps;
    row.step_s = o.step_s;
    row.compute_s = o.compute_s;
    row.comm_s = o.comm_s;
    row.wait_s = o.wait_s;
    row.bytes_per_step = o.bytes_per_step;
    row.wall_s = o.wall_s;
  } catch (const std::exception& e) {  // the step-time estimate failed: the configuration cannot run
    row.config_json = run_config_to_json(cfg).dump();
    row.status = "failed";
    row.stop_reason = fmt::format("error: {}", e.what());
    row.progress = -1e30;
  }
  tune_trial_insert(store_, row);
  return row;
}

}  // namespace dsgd
