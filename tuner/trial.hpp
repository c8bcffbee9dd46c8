// One trial of the tuner: a run configuration trained on the simulated cluster through the
// same engine path as `dsgd-bench run --backend sim` (engine/sim_run.hpp sim_run), stored in
// the tuner's database, and stopped by the tuner at its first evaluation that reaches the
// target, shows a non-finite loss (diverged), or is at or past the trial's budget of
// evaluation (virtual) seconds. The run row is then finished as `stopped` with the reason
// ("stopped by dsgd-tune: ..."); its summary (step time, compute / comm / wait, bytes per
// step) is computed from the rows stored up to that evaluation, as for any run. A diverged
// run (the trainer leaves NaN test metrics at the evaluation that finds a non-finite loss or
// model) is stored as 'diverged' and is a censored, not-reached trial.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "results/store.hpp"
#include "results/target.hpp"
#include "results/trial_status.hpp"
#include "results/trial_stop.hpp"

namespace dsgd {

struct TrialOutcome {
  int64_t run_id = 0;  // 0 when the run failed before it was stored
  TrialStatus status = TrialStatus::trial_completed;
  std::string stop_reason;                           // target | budget | diverged | end-of-steps | error: ...
  StopKind stop_kind = StopKind::stop_end_of_steps;  // the kind stop_reason starts with
  bool reached = false;
  double time_s = 0;    // time-to-target when reached; else elapsed virtual time (a lower bound)
  double progress = 0;  // best target metric seen, oriented so larger is closer (acc, or -loss)
  int64_t steps = 0;    // steps done at the stop
  double step_s = 0, compute_s = 0, comm_s = 0, wait_s = 0, bytes_per_step = 0;  // run summary (0: none)
  double wall_s = 0;                                                             // real seconds the trial took
};

// Why an evaluation ends a trial: its kind (stop_target, stop_diverged or stop_budget) and the
// account ("target acc=0.8 reached at ...", "diverged: ...", "budget of ...").
struct TrialStopReason {
  StopKind kind = StopKind::stop_budget;
  std::string text;
};

// A trial's view of its evaluations, one at a time (the sim trial's evaluation callback; the MPI
// trial reads its stored run's): the best progress so far, and whether an evaluation ends the
// trial — it reaches the target, shows a non-finite loss (diverged) or is at or past the budget.
struct TrialWatch {
  const Target& target;
  double budget_s;
  TrialOutcome& out;
  double last_time = 0;
  int64_t last_step = 0;
  bool any_progress = false;
  // Why this evaluation ends the trial, else nullopt.
  std::optional<TrialStopReason> see(const EvalRow& row);
  // The outcome after the last evaluation seen: `stopped` the reason see() gave (nullopt: the run
  // did all `planned_steps`). Finishes a stopped run `run_id` of `store` as 'stopped'
  // ("stopped by dsgd-tune: ...") or 'diverged', and reads its summary (step breakdown).
  void finish(const std::optional<TrialStopReason>& stopped, int64_t planned_steps, int64_t run_id, Store& store);
};

// Trains cfg (backend sim; cfg.steps and cfg.eval_every set by the caller) until the target,
// divergence, `budget_s` virtual seconds or the last step. Errors of the configuration or the
// run become a failed outcome with the message (nothing thrown).
TrialOutcome trial_run(const RunConfig& cfg, double budget_s, const Target& target, Store& store);

// Virtual seconds per step of cfg, from a short run (20 steps, at least 4 periods H) without storing: timing-only where
// the simulator models the algorithm (variant_timing_supported), else with numerics. Throws as sim_run.
// With `warnings`: what the simulated run warned of its inputs (a noisy profile or fabric) is
// added to it, each text once.
double trial_step_time_estimate(const RunConfig& cfg, Store& store, std::vector<std::string>* warnings = nullptr);

}  // namespace dsgd
