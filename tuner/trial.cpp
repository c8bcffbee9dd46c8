// See trial.hpp.
#include "tuner/trial.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>

#include "algorithms/variant.hpp"
#include "cluster/sim_timing.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "engine/sim_run.hpp"
#include "engine/trainer.hpp"
#include "results/report_rows.hpp"

namespace dsgd {

namespace {

constexpr int64_t kPilotSteps = 20;

// Thrown from the rank-0 worker's evaluation callback to end the simulated run there; the
// simulator wakes the other workers and rethrows it from sim_run.
struct TrialStop {
  TrialStopReason reason;
};

}  // namespace

double trial_step_time_estimate(const RunConfig& base, Store& store, std::vector<std::string>* warnings) {
  RunConfig cfg = base;
  // At least 4 sync periods, so a periodic average is in the mean (H = 64: 256 steps).
  const int64_t steps = std::max<int64_t>(kPilotSteps, variant_uses_period(cfg.algo) ? 4 * cfg.period : 0);
  cfg.warmup = 0;
  cfg.steps = steps;
  cfg.eval_every = steps;
  cfg.target.clear();
  cfg.timing_only = variant_timing_supported(cfg);
  TrainerCallbacks callbacks;
  if (warnings)
    callbacks.on_start = [warnings](const RunRecord& record) {
      for (std::string& w : report_prediction_warnings(nlohmann::json::parse(record.config_json, nullptr, false)))
        if (std::find(warnings->begin(), warnings->end(), w) == warnings->end()) warnings->push_back(std::move(w));
    };
  const TrainResult r = sim_run_unstored(cfg, store, callbacks);
  return r.timed_wall_s / static_cast<double>(steps);
}

std::optional<TrialStopReason> TrialWatch::see(const EvalRow& row) {
  last_time = row.time_s;
  last_step = row.step;
  const double metric = target.metric == TargetMetric::target_test_acc ? row.test_acc : -row.test_loss;
  if (std::isfinite(metric) && (!any_progress || metric > out.progress)) {
    out.progress = metric;
    any_progress = true;
  }
  if (target_reached(target, row)) {
    out.reached = true;
    out.time_s = row.time_s;
    return TrialStopReason{StopKind::stop_target, fmt::format("target {} reached at {:.4g} s (step {})",
                                                              target_format(target), row.time_s, row.step)};
  }
  if (row.step > 0 && (!std::isfinite(row.train_loss) || !std::isfinite(row.test_loss)))
    return TrialStopReason{StopKind::stop_diverged, fmt::format("diverged: non-finite loss at step {}", row.step)};
  if (row.time_s >= budget_s)
    return TrialStopReason{StopKind::stop_budget, fmt::format("budget of {:.4g} s reached at {:.4g} s (step {})",
                                                              budget_s, row.time_s, row.step)};
  return std::nullopt;
}

void TrialWatch::finish(const std::optional<TrialStopReason>& stopped, int64_t planned_steps, int64_t run_id,
                        Store& store) {
  out.run_id = run_id;
  out.stop_kind = stopped ? stopped->kind : StopKind::stop_end_of_steps;
  switch (out.stop_kind) {
    case StopKind::stop_target: out.stop_reason = "target: " + stopped->text; break;
    case StopKind::stop_budget: out.stop_reason = "budget: " + stopped->text; break;
    case StopKind::stop_diverged: out.stop_reason = stopped->text; break;  // starts with "diverged: "
    default:
      out.stop_reason =
          fmt::format("end-of-steps: the last of {} steps, before the target and the budget", planned_steps);
  }
  out.status = TrialStatus::trial_completed;
  // A diverged run is stored as the trainer stores one ('diverged'); a run the tuner stopped
  // at its target or budget as 'stopped', with why (nobody interrupted it).
  const bool diverged = out.stop_kind == StopKind::stop_diverged;
  if (stopped && run_id > 0)
    store.run_finish(run_id, diverged ? RunStatus::run_diverged : RunStatus::run_stopped,
                     diverged ? stopped->text : "stopped by dsgd-tune: " + stopped->text);
  if (!out.reached) out.time_s = last_time;
  out.steps = last_step;
  if (run_id > 0) {
    const RunWithSummary run = store.run_get(run_id);
    // A run the trainer itself ended as diverged (or anything but completed/stopped) is not a
    // success, whatever its last evaluation says.
    const RunStatus ended = run.run.status;
    if (ended != RunStatus::run_completed && ended != RunStatus::run_stopped &&
        !(diverged && ended == RunStatus::run_diverged)) {
      out.reached = false;
      out.stop_kind = ended == RunStatus::run_diverged ? StopKind::stop_diverged : StopKind::stop_run_ended;
      out.stop_reason = fmt::format("{}: the run ended as '{}'", run_status_text(ended), run_status_text(ended));
      out.time_s = last_time;
    }
    if (run.summary) {
      const Summary& s = *run.summary;
      out.step_s = s.step_time_s;
      out.compute_s = s.compute_s;
      out.comm_s = s.comm_s;
      out.wait_s = s.wait_s;
      out.bytes_per_step = s.bytes_sent_per_step;
    }
  }
  if (!any_progress) out.progress = -1e30;  // finite: stored and printed as a number
}

TrialOutcome trial_run(const RunConfig& cfg, double budget_s, const Target& target, Store& store) {
  TrialOutcome out;
  TrialWatch watch{target, budget_s, out};
  const double started = clock_now_s();
  int64_t run_id = 0;
  TrainerCallbacks callbacks;
  callbacks.on_start = [&](const RunRecord& record) { run_id = record.id; };
  callbacks.on_eval = [&](const EvalRow& row) {
    if (std::optional<TrialStopReason> stop = watch.see(row)) throw TrialStop{*stop};
  };
  std::optional<TrialStopReason> stopped;
  try {
    sim_run(cfg, &store, callbacks);
  } catch (const TrialStop& stop) {
    stopped = stop.reason;
  } catch (const std::exception& e) {
    out.status = TrialStatus::trial_failed;
    out.stop_kind = StopKind::stop_error;
    out.stop_reason = fmt::format("error: {}", e.what());
    if (run_id > 0) {
      try {
        store.run_finish(run_id, RunStatus::run_failed, e.what());
      } catch (...) {
      }
    }
    out.run_id = run_id;
    out.wall_s = clock_now_s() - started;
    return out;
  }
  watch.finish(stopped, cfg.steps, run_id, store);
  out.wall_s = clock_now_s() - started;
  return out;
}

}  // namespace dsgd
