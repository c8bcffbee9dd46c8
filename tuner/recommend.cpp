// See recommend.hpp.
#include "tuner/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "algorithms/config_check.hpp"
#include "cluster/backends.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/compute_profile.hpp"
#include "engine/preflight.hpp"
#include "engine/shared_dataset.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/prior.hpp"
#include "tuner/prior_store.hpp"
#include "tuner/proposals.hpp"
#include "tuner/successive_halving.hpp"
#include "tuner/trial.hpp"
#include "tuner/trial_mpi.hpp"
#include "tuner/trial_pool.hpp"
#include "tuner/tune_validate.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

constexpr double kDefaultTrialTimeS = 60;   // R with --trials alone
constexpr double kTrialShareOfBudget = 20;  // R = budget / 20 by default
constexpr double kEvalsPerRung0 = 40;       // evaluations within the first rung's budget (resolution r0/40)
constexpr double kStepMargin = 1.25;        // steps sized for 1.25 R at the estimated step time
// On MPI the step time is the simulator's estimate and real steps vary, so a trial gets 4 R of
// steps and its time limit (R) ends it; successive halving promotes, beside the best 1/eta, the
// trials within 10 % of the last promoted one (about the run-to-run spread of a real step time,
// docs/tuner.md "Validation on MPI").
constexpr double kMpiStepMargin = 4;
constexpr double kMpiPromoteMargin = 0.1;

std::string fmt_s(double s) {
  return fmt::format("{:.4g} s", s);
}

TrialScore score_of(const TrialRow& t) {
  return trial_score(t);
}

}  // namespace

bool tune_objective_better(const TrialScore& a, const TrialScore& b) {
  return objective_better(a, b);
}

std::vector<int64_t> tune_missing_profiles(const TunePlan& plan, const Store& store) {
  if (plan.spec.base.profile_from > 0) return {};
  std::vector<int64_t> batches;
  for (const Candidate& c : plan.space.feasible) batches.push_back(c.batch);
  return compute_profile_missing(store, system_info_read().host, plan.spec.base, batches);
}

TunePlan tune_plan(const TuneSpec& spec, int64_t max_trial_steps) {
  TunePlan plan;
  plan.spec = spec;
  plan.max_trial_steps = max_trial_steps;
  const RunConfig& base = spec.base;
  if (base.backend != "sim" && base.backend != "mpi")
    DSGD_THROW(InputError, "pass --backend sim (simulated workers, the default) or --backend mpi (real ranks)",
               "dsgd-tune runs its trials on --backend sim or mpi; got --backend {}", base.backend);
  if (base.backend == "mpi") {
    // Real ranks on this machine (the tuner owns --hostfile): the run path's oversubscription rule.
    const std::string warning = tune_validate_check_workers(
        base.workers, base.hostfile, "--backend mpi",
        "pass fewer --workers, or --backend sim to simulate them (a virtual clock, the same numerics)");
    if (!warning.empty()) plan.notes.push_back(warning);
    plan.promote_margin = kMpiPromoteMargin;
  }
  if (base.target.empty())
    DSGD_THROW(InputError, "pass e.g. --target acc=0.80 or --target loss=0.5",
               "--target is required: the objective is the time to reach it");
  plan.target = *target_parse(base.target);
  if (base.timing_only)
    DSGD_THROW(InputError, "drop --timing-only",
               "--target {} cannot be measured with --timing-only (no numerics, no evaluations)", base.target);
  if (!(spec.budget_s > 0) && spec.trials <= 0)
    DSGD_THROW(InputError, "pass --budget 5min (evaluation time, virtual seconds) or --trials K",
               "no budget: the search needs --budget or --trials");
  if (max_trial_steps < 1)
    DSGD_THROW(InputError, "pass e.g. --max-trial-steps 20000", "--max-trial-steps must be positive (got {})",
               max_trial_steps);
  {
    RunConfig check = base;
    check.given_keys.clear();
    config_validate(check);
  }
  preflight_check_names(base);

  // The model's size, for the bytes-per-step formula (the dataset is loaded once, shared).
  const auto data = dataset_load_shared(base);
  plan.data = data;
  plan.param_count = workload_create(base, data->train)->param_count();
  plan.space = space_enumerate(spec, plan.param_count, data.get());
  if (plan.space.feasible.empty()) {
    std::string why;
    for (size_t i = 0; i < plan.space.refused.size() && i < 4; ++i)
      why += fmt::format("; {}: {}", candidate_key(plan.space.refused[i].candidate), plan.space.refused[i].reason);
    DSGD_THROW(InputError, "relax the constraint or widen the search space",
               "every one of the {} configurations of the search space is refused{}{}", plan.space.refused.size(), why,
               plan.space.refused.size() > 4 ? fmt::format("; ... ({} more)", plan.space.refused.size() - 4) : "");
  }
  if (plan.target.metric == TargetMetric::target_test_acc && !(data->test.rows > 0))
    DSGD_THROW(InputError, "use a dataset with a test set",
               "--target {}: dataset '{}' has no test set to measure it on", base.target, base.dataset);

  // R and the design: SH with 3 rungs costs about n0 * R / eta * (1 + ...) = n0 R / 3 (eta 3);
  // the race adds (race_top x (race_seeds - 1)) trials of R (its first seed is the top rung's).
  const double eta = spec.eta;
  const double race_extra = static_cast<double>(spec.race_top * (spec.race_seeds - 1));
  if (spec.trial_time_s > 0) {
    plan.trial_time_s = spec.trial_time_s;
    plan.notes.push_back(fmt::format("trial budget R = {} (--trial-time)", fmt_s(plan.trial_time_s)));
  } else if (spec.budget_s > 0) {
    plan.trial_time_s = spec.budget_s / kTrialShareOfBudget;
    plan.notes.push_back(
        fmt::format("trial budget R = budget / {:.0f} = {}", kTrialShareOfBudget, fmt_s(plan.trial_time_s)));
  } else {
    plan.trial_time_s = kDefaultTrialTimeS;
    plan.notes.push_back(
        fmt::format("trial budget R: from a pilot trial (at most {}; leaders it cannot tell apart are "
                    "re-measured at a finer R)",
                    fmt_s(plan.trial_time_s)));
  }
  const int rungs = 3;
  for (int i = rungs - 1; i >= 0; --i) plan.rungs.push_back(plan.trial_time_s / std::pow(eta, i));
  double rung_cost_per_config = 0;  // in trials, and in R
  double rung_time_per_config = 0;
  for (int i = 0; i < rungs; ++i) {
    rung_cost_per_config += 1.0 / std::pow(eta, i);
    rung_time_per_config += plan.rungs[static_cast<size_t>(i)] / std::pow(eta, i);
  }
  double n0 = static_cast<double>(plan.space.feasible.size());
  if (spec.budget_s > 0)
    n0 = std::min(n0, std::floor((spec.budget_s - race_extra * plan.trial_time_s) / rung_time_per_config));
  if (spec.trials > 0)
    n0 = std::min(n0, std::floor((static_cast<double>(spec.trials) - race_extra) / rung_cost_per_config));
  n0 = std::max(n0,
                static_cast<double>(std::min<size_t>(plan.space.feasible.size(), static_cast<size_t>(spec.race_top))));
  plan.initial_design = static_cast<size_t>(n0);
  if (plan.initial_design < plan.space.feasible.size() && plan.initial_design >= 4) {
    // A quarter of the first rung for surrogate proposals once the design has been seen.
    plan.proposals = plan.initial_design / 4;
    plan.initial_design -= plan.proposals;
  }
  int64_t planned = 0;
  double alive = n0;
  for (int i = 0; i < rungs; ++i) {
    planned += static_cast<int64_t>(alive);
    alive = std::ceil(alive / eta);
  }
  plan.planned_trials = planned + static_cast<int64_t>(race_extra);
  plan.notes.push_back(fmt::format(
      "{} configurations feasible ({} refused by formula); initial design {} ({}{}); rungs {}",
      plan.space.feasible.size(), plan.space.refused.size(), plan.initial_design,
      plan.initial_design >= plan.space.feasible.size() ? "all of them"
      : spec.prior ? "the prior's best per algorithm and next best, a third space-filling"
                   : "seeded space-filling sample",
      plan.proposals > 0 ? fmt::format(", then {} proposed by GP + weighted EI after rung 0", plan.proposals)
                         : std::string(),
      spec.trial_time_s > 0 || spec.budget_s > 0 ? fmt::format("{:.4g} s", fmt::join(plan.rungs, " s, "))
                                                 : fmt::format("R/{:.0f}, R/{:.0f}, R", eta * eta, eta)));
  return plan;
}

namespace {

// One trial to decide: run, take from the store, or answer from a shorter trial.
struct TrialRequest {
  Candidate candidate;
  uint64_t seed = 0;
  double budget = 0;
  std::string phase;
};

// What a pool task hands back (written by the task's thread, read by the coordinator after
// TrialPool::wait_any).
struct TrialJob {
  int64_t ticket = -1;
  std::optional<std::pair<int64_t, int64_t>> schedule;  // (steps, eval_every), probed when not cached
  std::string config_json;
  TrialOutcome outcome;
  std::string error;  // the step-time probe failed: the configuration cannot run
  double wall_s = 0;
};

struct Runner {
  const TunePlan& plan;
  Store* store;  // the session's database (live search); null against an evaluator
  int64_t session_id;
  const std::function<void(const TuneProgress&)>& progress;
  TuneResult& result;
  TrialPool* pool;                         // the live search: trials run here, up to pool->jobs() at a time
  TrialEvaluator* serial;                  // or: every trial asked of this evaluator, one after another (replay)
  std::map<std::string, TrialRow> stored;  // this session's trials by key
  std::map<std::string, std::vector<TrialRow>> by_config;          // config key|seed -> its trials
  std::map<std::string, std::pair<int64_t, int64_t>> steps_cache;  // config -> (steps, eval_every)
  std::set<std::string> counted;                                   // keys counted against the budget in this invocation
  int64_t trials_counted = 0;
  std::string best_text = "none reached yet";
  TrialScore best_score{false, 0, -1e300};
  bool exhausted = false;

  bool budget_allows(double budget) const {
    if (plan.spec.budget_s > 0 && result.used_s + budget > plan.spec.budget_s * (1 + 1e-9)) return false;
    if (plan.spec.trials > 0 && trials_counted + 1 > plan.spec.trials) return false;
    return true;
  }

  void note_best(const std::string& key, const TrialRow& t) {
    const TrialScore s = score_of(t);
    if (s.reached && (!best_score.reached || tune_objective_better(s, best_score))) {
      best_score = s;
      best_text = fmt::format("{}: {}", key, fmt_s(s.time_s));
    }
  }

  void report(const std::string& current) {
    if (!progress) return;
    TuneProgress p;
    p.trial = trials_counted;
    p.planned = plan.planned_trials;
    p.used_s = result.used_s;
    p.budget_s = plan.spec.budget_s;
    p.best = best_text;
    p.current = current;
    progress(p);
  }

  // Steps and evaluation interval of a candidate: fixed per (candidate, R), so every rung and
  // seed trains the same schedule and a shorter trial is a prefix of a longer one. Reads only
  // `read` (a pool slot's database): runs inside a pool task.
  std::pair<int64_t, int64_t> schedule_probe(const Candidate& c, Store& read) const {
    const RunConfig cfg = candidate_config(plan.spec, c, plan.spec.base.seed);
    const double step_s = trial_step_time_estimate(cfg, read);
    const double R = plan.trial_time_s;
    int64_t steps = plan.max_trial_steps;
    int64_t every = 1;
    if (step_s > 0) {
      const double margin = plan.spec.base.backend == "mpi" ? kMpiStepMargin : kStepMargin;
      steps = static_cast<int64_t>(std::ceil(R * margin / step_s)) + cfg.warmup + 1;
      every = std::max<int64_t>(1, static_cast<int64_t>(std::floor(plan.rungs.front() / kEvalsPerRung0 / step_s)));
    }
    steps = std::min(steps, plan.max_trial_steps);
    every = std::min(every, steps);
    return {steps, every};
  }

  // The pool task of a request: the schedule (cached, or probed here) and the trial, both on
  // the slot's database.
  void launch(const TrialRequest& q, TrialJob& job) {
    std::optional<std::pair<int64_t, int64_t>> cached;
    if (auto it = steps_cache.find(candidate_key(q.candidate)); it != steps_cache.end()) cached = it->second;
    job.ticket = pool->submit([this, q, cached, &job](Store& slot) {
      RunConfig cfg = candidate_config(plan.spec, q.candidate, q.seed);
      const double t0 = clock_now_s();
      try {
        job.schedule = cached ? *cached : schedule_probe(q.candidate, slot);
        cfg.steps = job.schedule->first;
        cfg.eval_every = job.schedule->second;
        cfg.tag = fmt::format("tune-session={}", session_id);
        cfg.backend = plan.spec.base.backend;  // the schedule's probe is a sim estimate either way
        job.config_json = run_config_to_json(cfg).dump();
        job.outcome = cfg.backend == "mpi" ? trial_run_mpi(cfg, q.budget, plan.target, slot)
                                           : trial_run(cfg, q.budget, plan.target, slot);
      } catch (const std::exception& e) {  // the step-time estimate failed: the configuration cannot run
        job.config_json = run_config_to_json(cfg).dump();
        job.error = e.what();
      }
      job.wall_s = clock_now_s() - t0;
    });
  }

  // A stored trial (resume) or one answered by a shorter trial that stopped for a reason a
  // longer budget would not change (same schedule: a longer trial would stop there too).
  std::optional<TrialRow> answered(const TrialRequest& q, bool count) {
    const std::string ck = candidate_key(q.candidate);
    const std::string key = trial_key(ck, q.seed, q.budget);
    if (auto it = stored.find(key); it != stored.end()) {
      if (count && counted.insert(key).second) {  // stored before this invocation (resume): count it once
        ++result.trials_resumed;
        ++trials_counted;
        result.used_s += trial_cost_s(it->second);
        note_best(ck, it->second);
        by_config[ck + "|" + std::to_string(q.seed)].push_back(it->second);
        report(ck);
      }
      return it->second;
    }
    for (const TrialRow& t : by_config[ck + "|" + std::to_string(q.seed)]) {
      // Stopped for a reason a longer budget would not change (not "budget: ...").
      const bool final_stop = t.reached || t.status == "failed" || t.stop_reason.rfind("budget", 0) != 0;
      if (t.budget_s < q.budget && final_stop) {
        if (count) ++result.trials_reused;
        return t;
      }
    }
    return std::nullopt;
  }

  // The finished job of q as a stored trial row (its run copied into the session database).
  TrialRow record(const TrialRequest& q, const TrialJob& job) {
    const std::string ck = candidate_key(q.candidate);
    TrialRow row;
    row.session_id = session_id;
    row.trial_key = trial_key(ck, q.seed, q.budget);
    row.phase = q.phase;
    row.config_key = ck;
    row.seed = q.seed;
    row.budget_s = q.budget;
    row.config_json = job.config_json;
    if (job.schedule) steps_cache[ck] = *job.schedule;
    if (!job.error.empty()) {
      row.status = "failed";
      row.stop_reason = fmt::format("error: {}", job.error);
      row.progress = -1e30;
    } else {
      const TrialOutcome& o = job.outcome;
      row.run_id = o.run_id > 0 ? pool->copy_run(job.ticket, o.run_id) : 0;
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
    }
    result.trial_wall_s += job.wall_s;
    tune_trial_insert(*store, row);
    account(ck, q.seed, row);
    return row;
  }

  // The bookkeeping of a trial run in this invocation, on the pool or by the evaluator.
  void account(const std::string& ck, uint64_t seed, const TrialRow& row) {
    stored[row.trial_key] = row;
    counted.insert(row.trial_key);
    by_config[ck + "|" + std::to_string(seed)].push_back(row);
    ++result.trials_run;
    ++trials_counted;
    result.used_s += trial_cost_s(row);
    note_best(ck, row);
  }

  // The requests' trials, in order, each exactly as if they were decided one after another
  // (stored, answered by a shorter trial, run, or nullopt once the budget does not allow a new
  // one). Up to pool->jobs() run at the same time: a request is started ahead when the budget
  // left after the decided ones allows it, and its result is dropped if the requests before it
  // used up the budget meanwhile. Trial rows and runs are written in request order. Against an
  // evaluator (`serial`), each request is decided the same way and evaluated in turn.
  // With stop_at_missing, the first nullopt ends the list (the requests after it are not decided).
  std::vector<std::optional<TrialRow>> trials(const std::vector<TrialRequest>& reqs, bool stop_at_missing) {
    const size_t n = reqs.size();
    std::vector<std::optional<TrialRow>> out(n);
    std::vector<std::unique_ptr<TrialJob>> jobs(n);
    // The tasks write into jobs: wait for every started one before they go, also on an error.
    struct WaitAll {
      TrialPool* pool;  // null against an evaluator: nothing started
      std::vector<std::unique_ptr<TrialJob>>& jobs;
      ~WaitAll() {
        for (const auto& j : jobs)
          while (j && !pool->done(j->ticket)) try {
              pool->wait_any();
            } catch (...) {
            }
      }
    } wait_all{pool, jobs};
    size_t next_launch = 0;
    auto running = [&] {
      std::vector<std::string> names;
      for (size_t i = 0; i < n; ++i)
        if (jobs[i] && !pool->done(jobs[i]->ticket)) names.push_back(candidate_key(reqs[i].candidate));
      return fmt::format("{}", fmt::join(names, " | "));
    };
    auto launch_ahead = [&](size_t from) {
      next_launch = std::max(next_launch, from);
      while (next_launch < n && pool->has_free_slot() && !exhausted) {
        const TrialRequest& q = reqs[next_launch];
        if (!answered(q, false)) {
          if (!budget_allows(q.budget)) break;  // may still fit once the decided ones are known: wait
          jobs[next_launch] = std::make_unique<TrialJob>();
          launch(q, *jobs[next_launch]);
        }
        ++next_launch;
      }
      report(running());
    };
    for (size_t i = 0; i < n; ++i) {
      if (pool) launch_ahead(i);
      const TrialRequest& q = reqs[i];
      if (auto t = answered(q, true)) {
        out[i] = t;
        continue;
      }
      if (exhausted || !budget_allows(q.budget)) {
        exhausted = true;
        if (stop_at_missing) break;
        continue;
      }
      if (serial) {
        const std::string ck = candidate_key(q.candidate);
        report(ck);
        out[i] = serial->evaluate(q.candidate, q.seed, q.budget, q.phase);
        account(ck, q.seed, *out[i]);
        report(ck);
        continue;
      }
      if (!jobs[i]) {  // not started ahead: start it now
        while (!pool->has_free_slot()) pool->wait_any();
        jobs[i] = std::make_unique<TrialJob>();
        launch(q, *jobs[i]);
        report(running());
      }
      while (!pool->done(jobs[i]->ticket)) pool->wait_any();
      out[i] = record(q, *jobs[i]);
      report(candidate_key(q.candidate));
    }
    // Tasks started ahead whose requests were not run (the budget ran out): waited for (WaitAll),
    // dropped — neither their trial rows nor their runs are stored.
    for (size_t i = 0; i < n; ++i)
      if (jobs[i] && !out[i]) ++result.trials_dropped;
    return out;
  }
};

}  // namespace

namespace {

// A ranked configuration from its trials at the largest budget it ran at: the median in the
// censored order (of an even count, the worse of the middle two) and the spread of its times.
RankedConfig ranked_make(const TunePlan& plan, const Candidate& c, std::vector<TrialRow> trials, double fidelity_s,
                         bool raced) {
  RankedConfig rc;
  rc.candidate = c;
  rc.key = candidate_key(c);
  for (size_t f = 0; f < plan.space.feasible.size(); ++f)
    if (candidate_key(plan.space.feasible[f]) == rc.key) rc.bytes_per_step = plan.space.bytes_per_step[f];
  rc.raced = raced;
  rc.trials = std::move(trials);
  rc.fidelity_s = fidelity_s;
  std::vector<TrialRow> sorted = rc.trials;
  std::sort(sorted.begin(), sorted.end(),
            [](const TrialRow& a, const TrialRow& b) { return tune_objective_better(score_of(a), score_of(b)); });
  rc.representative = sorted[sorted.size() / 2];
  rc.median = score_of(rc.representative);
  std::vector<double> times;
  for (const TrialRow& t : rc.trials) {
    times.push_back(t.time_s);
    if (!t.reached) rc.spread_censored = true;
  }
  rc.spread_lo = *std::min_element(times.begin(), times.end());
  rc.spread_hi = *std::max_element(times.begin(), times.end());
  return rc;
}

// The evaluation interval of a ranked configuration's representative trial, in evaluation
// seconds (0 when unknown).
double eval_interval_s(const RankedConfig& rc) {
  const TrialRow& t = rc.representative;
  const auto cfg = nlohmann::json::parse(t.config_json, nullptr, false);
  const int64_t every = cfg.is_object() ? cfg.value("eval-every", int64_t(0)) : 0;
  if (every <= 0 || t.steps <= 0) return 0;
  return t.time_s * static_cast<double>(every) / static_cast<double>(t.steps);
}

// When the winner reached the target within its first two evaluations, the evaluation
// interval, not the configurations, decided the top: that interval; else 0.
double resolution_limit_s(const TuneResult& result) {
  if (result.ranking.empty() || !result.ranking.front().median.reached) return 0;
  const RankedConfig& w = result.ranking.front();
  const double interval = eval_interval_s(w);
  return interval > 0 && w.median.time_s <= 2.0 * interval * (1 + 1e-9) ? interval : 0;
}

// The verdict line (and top_two_overlap) of the ranking as it stands.
void verdict_make(const TunePlan& plan, TuneResult& result) {
  result.top_two_overlap = false;
  if (result.ranking.empty() || !result.ranking.front().median.reached) {
    result.verdict = fmt::format(
        "no configuration reached {} within its budget: no recommendation (raise --budget or "
        "--trial-time, or lower the target)",
        target_format(plan.target));
    return;
  }
  const RankedConfig& w = result.ranking.front();
  result.verdict = fmt::format("recommended: {} (median time-to-target {} over {} seed{})", w.key,
                               fmt_s(w.median.time_s), w.trials.size(), w.trials.size() == 1 ? "" : "s");
  if (result.ranking.size() > 1 && result.ranking[1].raced) {
    const RankedConfig& r = result.ranking[1];
    const double r_lo = r.spread_lo;
    const double w_hi = w.spread_censored ? std::numeric_limits<double>::infinity() : w.spread_hi;
    const double r_hi = r.spread_censored ? std::numeric_limits<double>::infinity() : r.spread_hi;
    result.top_two_overlap = r.median.reached && w_hi >= r_lo && r_hi >= w.spread_lo;
    if (result.top_two_overlap)
      result.verdict += fmt::format(
          "; the runner-up {} cannot be told apart: their spreads over seeds overlap ({:.4g}-{:.4g} s vs "
          "{:.4g}-{:.4g} s)",
          r.key, w.spread_lo, w.spread_hi, r.spread_lo, r.spread_hi);
    else
      result.verdict += fmt::format("; ahead of {} beyond the seed-to-seed spread", r.key);
  }
}

// Re-measures the leaders of a resolution-limited ranking at a finer evaluation interval: the
// configurations that reached the target within two of the winner's evaluation intervals (at
// most kRefineLeaders), at R' = 10 x the winner's time (its evaluations then come R'/360
// apart: about 36 before the winner's old time). Each leader runs once (the base seed); the
// best race_top of them then run over race_seeds seeds, and their medians re-rank them ahead
// of the other leaders, then the rest. Up to kRefineRounds rounds while the top stays
// limited, and only when the tuner chose R itself (not with --trial-time). The trials count
// against --budget; with --trials they come on top, at most kRefineLeaders + race_top x
// (race_seeds - 1) a round.
constexpr int kRefineRounds = 3;
constexpr size_t kRefineLeaders = 16;

void refine_resolution(const TunePlan& plan, Runner& runner, TuneResult& result) {
  const TuneSpec& spec = plan.spec;
  if (spec.trial_time_s > 0) return;
  for (int round = 0; round < kRefineRounds; ++round) {
    const double interval = resolution_limit_s(result);
    if (interval <= 0) return;
    const double fine_r = std::max(result.ranking.front().median.time_s * 10, 1e-6);
    if (fine_r >= plan.trial_time_s * (1 - 1e-9)) return;  // not finer than what ran
    std::vector<size_t> leaders;
    for (size_t k = 0; k < result.ranking.size() && leaders.size() < kRefineLeaders; ++k) {
      const RankedConfig& rc = result.ranking[k];
      if (rc.median.reached && rc.median.time_s <= 2.0 * interval * (1 + 1e-9)) leaders.push_back(k);
    }
    const size_t top = std::min(leaders.size(), static_cast<size_t>(spec.race_top));
    // The plan at R': its schedules (steps, evaluation interval) follow R' (Runner::schedule_probe).
    TunePlan fine = plan;
    fine.trial_time_s = fine_r;
    for (size_t i = 0; i < fine.rungs.size(); ++i)
      fine.rungs[i] = fine_r / std::pow(spec.eta, static_cast<double>(fine.rungs.size() - 1 - i));
    if (spec.trials > 0)
      fine.spec.trials = static_cast<int64_t>(leaders.size() + top * static_cast<size_t>(spec.race_seeds - 1));
    // Stored trials answer only requests of the same key (resume); earlier trials at coarser
    // schedules must not answer them (no by_config).
    Runner fine_runner{fine,
                       runner.store,
                       runner.session_id,
                       runner.progress,
                       result,
                       runner.pool,
                       runner.serial,
                       runner.stored,
                       {},
                       {},
                       {}};
    auto run = [&](const std::vector<size_t>& which, int64_t seeds) {
      std::vector<TrialRequest> reqs;
      std::vector<size_t> of;
      for (int64_t sd = 0; sd < seeds; ++sd)
        for (size_t k : which) {
          reqs.push_back({result.ranking[k].candidate, spec.base.seed + static_cast<uint64_t>(sd), fine_r, "refine"});
          of.push_back(k);
        }
      std::map<size_t, std::vector<TrialRow>> got;
      const auto rows = fine_runner.trials(reqs, false);
      for (size_t q = 0; q < reqs.size(); ++q)
        if (rows[q]) got[of[q]].push_back(*rows[q]);
      return got;
    };
    // Stage 1: every leader once; stage 2: the best `top` of them over the race's seeds.
    const auto once = run(leaders, 1);
    const auto better = [](const RankedConfig& a, const RankedConfig& b) {
      return tune_objective_better(a.median, b.median);
    };
    // Each leader's single trial, by its index in the ranking; the best `top` are raced.
    std::vector<std::pair<size_t, RankedConfig>> single;
    for (const auto& [k, trials] : once)
      single.emplace_back(k, ranked_make(plan, result.ranking[k].candidate, trials, fine_r, false));
    std::stable_sort(single.begin(), single.end(),
                     [&](const auto& a, const auto& b) { return better(a.second, b.second); });
    std::vector<size_t> raced;
    for (size_t i = 0; i < single.size() && raced.size() < top; ++i) raced.push_back(single[i].first);
    const auto seeded = run(raced, spec.race_seeds);
    for (const auto& [key, t] : fine_runner.stored) runner.stored[key] = t;
    if (once.size() < leaders.size() || seeded.size() < raced.size()) {
      result.notes.push_back(fmt::format("resolution: the budget did not allow re-measuring the {} leaders at R = {}",
                                         leaders.size(), fmt_s(fine_r)));
      return;
    }
    // The raced leaders by their medians, then the other leaders by their single trial (already
    // in order), then the rest as they stood.
    std::vector<RankedConfig> first, rest;
    for (size_t k = 0; k < result.ranking.size(); ++k) {
      if (auto it = seeded.find(k); it != seeded.end())
        first.push_back(ranked_make(plan, result.ranking[k].candidate, it->second, fine_r, true));
      else if (once.find(k) == once.end())
        rest.push_back(std::move(result.ranking[k]));
    }
    std::stable_sort(first.begin(), first.end(), better);
    result.ranking = std::move(first);
    for (auto& [k, rc] : single)
      if (seeded.find(k) == seeded.end()) result.ranking.push_back(std::move(rc));
    for (RankedConfig& rc : rest) result.ranking.push_back(std::move(rc));
    result.notes.push_back(fmt::format(
        "resolution: {} configurations reached the target within two evaluations ({:.3g} s apart); re-measured at "
        "R = {} (each once, the best {} over {} seed{})",
        leaders.size(), interval, fmt_s(fine_r), raced.size(), spec.race_seeds, spec.race_seeds == 1 ? "" : "s"));
    verdict_make(plan, result);
  }
}

// R from a pilot when the user gave only --trials (neither --trial-time nor --budget): one
// configuration of the space (the middle one of its enumeration, base seed) runs at the
// default R; when it reaches the target at its first evaluation (its time only bounded from
// above), it runs again at R' = 10 x that time, up to kPilotRounds runs. R is then
// kPilotFactor x its time to the target (a configuration more than that much slower than it
// cannot be the winner), at most the default. The pilot's trials come on top of --trials.
// When it does not reach the target, R stays the default. Returns the plan to search with.
constexpr int kPilotRounds = 3;
constexpr double kPilotFactor = 10;

TunePlan pilot_trial_time(const TunePlan& plan, Runner& runner, TuneResult& result) {
  const TuneSpec& spec = plan.spec;
  if (spec.trial_time_s > 0 || spec.budget_s > 0 || plan.space.feasible.empty()) return plan;
  const Candidate& pilot = plan.space.feasible[plan.space.feasible.size() / 2];
  const std::string key = candidate_key(pilot);
  auto with_r = [&](double r) {
    TunePlan p = plan;
    p.trial_time_s = r;
    for (size_t i = 0; i < p.rungs.size(); ++i)
      p.rungs[i] = r / std::pow(spec.eta, static_cast<double>(p.rungs.size() - 1 - i));
    p.spec.trials = kPilotRounds;
    return p;
  };
  double r = plan.trial_time_s;
  std::optional<TrialRow> last;
  std::vector<std::string> runs;
  for (int round = 0; round < kPilotRounds; ++round) {
    const TunePlan at = with_r(r);
    Runner pilot_runner{
        at, runner.store, runner.session_id, runner.progress, result, runner.pool, runner.serial, runner.stored, {}, {},
        {}};
    const auto rows = pilot_runner.trials({{pilot, spec.base.seed, r, "pilot"}}, false);
    for (const auto& [k, t] : pilot_runner.stored) runner.stored[k] = t;
    runner.counted.insert(pilot_runner.counted.begin(), pilot_runner.counted.end());
    if (!rows[0]) break;
    last = rows[0];
    const auto sched = pilot_runner.steps_cache.find(key);
    const int64_t every = sched == pilot_runner.steps_cache.end() ? 0 : sched->second.second;
    runs.push_back(last->reached ? fmt::format("{} at R = {} (step {})", fmt_s(last->time_s), fmt_s(r), last->steps)
                                 : fmt::format("not reached at R = {} ({})", fmt_s(r), last->stop_reason));
    if (!last->reached || every <= 0 || last->steps > every) break;  // resolved (or not reached)
    const double finer = std::max(last->time_s * kPilotFactor, 1e-6);
    if (finer >= r * (1 - 1e-9)) break;
    r = finer;
  }
  if (!last || !last->reached) {
    result.notes.push_back(fmt::format("pilot {}: {}; R stays {}", key,
                                       runs.empty() ? std::string("not run") : fmt::format("{}", fmt::join(runs, "; ")),
                                       fmt_s(plan.trial_time_s)));
    return plan;
  }
  const double chosen = std::min(plan.trial_time_s, std::max(last->time_s * kPilotFactor, 1e-6));
  TunePlan out = with_r(chosen);
  out.spec.trials = plan.spec.trials;
  result.notes.push_back(fmt::format("pilot {}: target reached in {}; R = {:.0f} x that = {}", key,
                                     fmt::join(runs, ", then "), kPilotFactor, fmt_s(chosen)));
  return out;
}

// The search (successive halving, GP proposals, the final race, the ranking and the verdict)
// through `runner`: the live pool or an evaluator. `data`: the base seed's dataset, held (null
// against an evaluator).
void search(const TunePlan& plan, Runner& runner, TuneResult& result, const std::shared_ptr<const DatasetPair>& data) {
  const TuneSpec& spec = plan.spec;
  const std::vector<Candidate>& all = plan.space.feasible;
  std::vector<size_t> alive = plan.prior_log_time.empty()
                                  ? space_fill_sample(all, plan.initial_design, spec.base.seed)
                                  : prior_design(all, plan.prior_log_time, plan.initial_design, spec.base.seed);
  const uint64_t seed0 = spec.base.seed;
  // Best standing per candidate: (rung index reached, its trial).
  std::map<size_t, std::pair<int, TrialRow>> standing;
  auto order = [&](size_t a, size_t b) {
    const auto& sa = standing.at(a);
    const auto& sb = standing.at(b);
    if (sa.first != sb.first) return sa.first > sb.first;
    const TrialScore x = score_of(sa.second), y = score_of(sb.second);
    if (tune_objective_better(x, y)) return true;
    if (tune_objective_better(y, x)) return false;
    return a < b;
  };
  for (size_t rung = 0; rung < plan.rungs.size() && !alive.empty(); ++rung) {
    const double budget = plan.rungs[rung];
    std::vector<size_t> ran;
    {
      std::vector<TrialRequest> reqs;
      reqs.reserve(alive.size());
      for (size_t i : alive) reqs.push_back({all[i], seed0, budget, fmt::format("rung {}", rung)});
      const auto got = runner.trials(reqs, true);
      for (size_t k = 0; k < alive.size() && got[k]; ++k) {
        standing[alive[k]] = {static_cast<int>(rung), *got[k]};
        ran.push_back(alive[k]);
      }
    }
    if (rung == 0 && plan.proposals > 0 && !runner.exhausted && ran.size() == alive.size()) {
      std::vector<std::pair<size_t, TrialScore>> observed;
      observed.reserve(ran.size());
      for (size_t i : ran) observed.emplace_back(i, score_of(standing.at(i).second));
      const std::set<size_t> tried(ran.begin(), ran.end());
      std::vector<Proposal> props;
      try {
        props = proposals_weighted_ei(all, observed, tried, plan.proposals, seed0, plan.prior_log_time);
      } catch (const Error& e) {
        result.notes.push_back(fmt::format("GP proposals skipped: {}", e.what()));
      }
      std::vector<std::string> names;
      std::vector<TrialRequest> reqs;
      reqs.reserve(props.size());
      for (const Proposal& p : props) reqs.push_back({all[p.index], seed0, budget, "rung 0 ei"});
      const auto got = runner.trials(reqs, true);
      for (size_t k = 0; k < props.size() && got[k]; ++k) {
        const Proposal& p = props[k];
        standing[p.index] = {0, *got[k]};
        ran.push_back(p.index);
        names.push_back(fmt::format("{} (P(reach) {:.2f}, predicted {:.3g} s)", candidate_key(all[p.index]), p.p_reach,
                                    std::exp(p.mean_log_time)));
      }
      if (!names.empty())
        result.notes.push_back(fmt::format("GP + weighted EI after rung 0 proposed: {}", fmt::join(names, "; ")));
      else if (props.empty())
        result.notes.push_back("GP + weighted EI after rung 0: fewer than 2 trials reached the target, no proposals");
      alive = ran;
    }
    if (ran.size() < alive.size())
      result.notes.push_back(
          fmt::format("the budget ran out in rung {} after {} of {} configurations", rung, ran.size(), alive.size()));
    std::sort(ran.begin(), ran.end(), order);
    if (rung + 1 == plan.rungs.size() || runner.exhausted) break;
    // successive_halving_promote: the best ceil(n/eta) in the censored order (and those within the
    // plan's margin of the last of them: 0 on sim, where a trial is deterministic), and at
    // least race_top so the final race has its candidates at the full budget.
    std::vector<RungEntry> entries;
    for (size_t i : ran) {
      const TrialScore sc = score_of(standing.at(i).second);
      entries.push_back({static_cast<int64_t>(i), sc.reached, sc.time_s, sc.progress});
    }
    std::vector<size_t> next;
    for (int64_t id : successive_halving_promote(entries, spec.eta, plan.promote_margin))
      next.push_back(static_cast<size_t>(id));
    for (size_t i : ran)
      if (next.size() < std::min<size_t>(ran.size(), static_cast<size_t>(spec.race_top)) &&
          std::find(next.begin(), next.end(), i) == next.end())
        next.push_back(i);
    alive = next;
  }

  // Final race: the top race_top over race_seeds seeds at the full budget R.
  std::vector<size_t> ranked;
  ranked.reserve(standing.size());
  for (const auto& [i, s] : standing) ranked.push_back(i);
  std::sort(ranked.begin(), ranked.end(), order);
  const size_t top = std::min<size_t>(ranked.size(), static_cast<size_t>(spec.race_top));
  const double R = plan.trial_time_s;
  std::map<size_t, std::vector<TrialRow>> race;
  runner.exhausted = false;  // the race may use what successive halving left
  // Seed by seed, as one list of independent trials; every seed's dataset held meanwhile (one
  // copy for all of them unless the dataset is generated from the seed).
  {
    std::vector<std::shared_ptr<const DatasetPair>> seed_data{data};  // empty against an evaluator
    std::vector<TrialRequest> reqs;
    std::vector<size_t> which;
    for (int64_t s = 0; s < spec.race_seeds; ++s) {
      RunConfig seeded = spec.base;
      seeded.seed = seed0 + static_cast<uint64_t>(s);
      if (s > 0 && runner.serial) runner.serial->begin_seed(seeded.seed);
      if (s > 0 && !runner.serial) seed_data.push_back(dataset_load_shared(seeded));
      for (size_t k = 0; k < top; ++k) {
        reqs.push_back({all[ranked[k]], seeded.seed, R, "race"});
        which.push_back(ranked[k]);
      }
    }
    const auto got = runner.trials(reqs, false);
    for (size_t k = 0; k < reqs.size(); ++k)
      if (got[k]) race[which[k]].push_back(*got[k]);
  }
  if (runner.exhausted) result.notes.push_back("the budget ran out during the final race: some seeds are missing");

  // The ranking: raced configurations by median, then the others by their best standing.
  for (size_t k = 0; k < ranked.size(); ++k) {
    const size_t i = ranked[k];
    auto it = race.find(i);
    if (it != race.end() && !it->second.empty())
      result.ranking.push_back(ranked_make(plan, all[i], it->second, R, true));
    else
      result.ranking.push_back(
          ranked_make(plan, all[i], {standing.at(i).second}, standing.at(i).second.budget_s, false));
  }
  std::stable_sort(result.ranking.begin(), result.ranking.end(), [&](const RankedConfig& a, const RankedConfig& b) {
    if (a.raced != b.raced) return a.raced;
    if (a.fidelity_s != b.fidelity_s) return a.fidelity_s > b.fidelity_s;
    return tune_objective_better(a.median, b.median);
  });

  verdict_make(plan, result);
  refine_resolution(plan, runner, result);
  // Still limited (R given by --trial-time, the budget spent, or no finer R possible): say so.
  if (const double interval = resolution_limit_s(result); interval > 0) {
    const RankedConfig& w = result.ranking.front();
    result.notes.push_back(fmt::format(
        "resolution: the winner reached the target at its evaluation {} (one every {:.3g} s of virtual time); "
        "configurations reaching it sooner are not told apart: rerun with --trial-time {:.3g}s for a finer "
        "measurement",
        static_cast<int64_t>(std::llround(w.median.time_s / interval)), interval,
        std::max(w.median.time_s * 10, 1e-3)));
  }
}

}  // namespace

namespace {

void note_leftovers(const TrialPool& pool, TuneResult& result) {
  if (pool.leftovers_removed() > 0)
    result.notes.push_back(fmt::format(
        "removed {} private trial database{} that a killed earlier run of this session left in the temporary "
        "directory",
        pool.leftovers_removed(), pool.leftovers_removed() == 1 ? "" : "s"));
}

}  // namespace

double tune_profiles_measure(const TunePlan& plan, Store& store, int64_t session_id, std::vector<std::string>& notes) {
  const TuneSpec& spec = plan.spec;
  const ComputeProfileFill fill = compute_profile_fill_missing(store, spec.base, plan.missing_profiles,
                                                               fmt::format("dsgd-tune session {}", session_id));
  if (!fill.batches.empty())
    notes.push_back(fmt::format(
        "no compute profile of {} on {} for batch {} on this host: measured it ({} iterations, {:.2g} s) and "
        "stored it as calibration {}",
        workload_profile_key(spec.base), spec.base.dataset, fmt::join(fill.batches, ", "), fill.iters, fill.wall_s,
        fill.calibration_id));
  return fill.wall_s;
}

TuneResult tune_run(const TunePlan& plan, Store& store, int64_t session_id,
                    const std::function<void(const TuneProgress&)>& progress) {
  TuneResult result;
  result.session_id = session_id;
  const TuneSpec& spec = plan.spec;
  // Held: every trial of this seed shares it (tune_plan loaded it; the same copy).
  const auto data = plan.data ? plan.data : dataset_load_shared(spec.base);

  if (!plan.missing_profiles.empty())
    result.profile_wall_s = tune_profiles_measure(plan, store, session_id, result.notes);
  if (spec.base.backend == "sim" && spec.base.profile_from <= 0) {
    std::vector<int64_t> batches;
    for (const Candidate& c : plan.space.feasible) batches.push_back(c.batch);
    result.profile_warnings = compute_profile_warnings_stored(store, system_info_read().host, spec.base, batches);
  }

  // The theory prior (--prior on): its probe run once per session (stored; --resume reads it),
  // its cost charged to the budget like a trial's.
  TunePlan searched = plan;
  if (spec.prior) {
    std::optional<PriorProbe> probe = prior_probe_load(store, session_id);
    try {
      if (!probe) {
        probe = prior_probe_run(plan, store, spec.base.seed);
        prior_probe_store(store, session_id, *probe);
        result.probe_wall_s = probe->wall_s;
      } else {
        result.notes.push_back("prior: the probe stored with the session (not run again)");
      }
      const TunePrior prior = prior_build(plan, store, *probe);
      searched.prior_log_time = prior.log_time;
      result.probe_s = probe->cost_s;
      result.used_s += probe->cost_s;
      for (const std::string& n : prior_describe(plan, prior)) result.notes.push_back(n);
    } catch (const Error& e) {  // the probe's synchronous run failed: search without the prior
      result.notes.push_back(fmt::format("prior skipped (the search goes on without it): {}", e.what()));
    }
  }

  TrialPool pool(store, std::max(1, plan.jobs), session_id);  // after the profiles: the slots copy them
  note_leftovers(pool, result);
  Runner runner{searched, &store, session_id, progress, result, &pool, nullptr, {}, {}, {}, {}};
  for (const TrialRow& t : tune_trials_get(store, session_id)) runner.stored[t.trial_key] = t;
  const TunePlan piloted = pilot_trial_time(searched, runner, result);
  Runner search_runner{piloted, &store,        session_id, progress, result,        &pool,
                       nullptr, runner.stored, {},         {},       runner.counted};
  result.trial_time_s = piloted.trial_time_s;
  result.rungs_s = piloted.rungs;

  search(piloted, search_runner, result, data);
  result.busy_wall_s = pool.busy_s();
  result.jobs = pool.jobs();
  std::vector<ExplainRanked> explain_ranking;
  for (const RankedConfig& rc : result.ranking)
    explain_ranking.push_back({rc.candidate, rc.representative, rc.bytes_per_step, rc.raced});
  std::vector<TrialRow> session_trials;
  for (const auto& [key, t] : search_runner.stored) session_trials.push_back(t);
  result.explanation = tune_explain(spec, plan.space.feasible, explain_ranking, session_trials);
  return result;
}

std::vector<TrialRow> tune_trials_run(const TunePlan& plan, Store& store, int64_t session_id,
                                      const std::vector<TuneTrialRequest>& requests,
                                      const std::function<void(const TuneProgress&)>& progress, TuneResult& result) {
  TrialPool pool(store, std::max(1, plan.jobs), session_id);
  note_leftovers(pool, result);
  Runner runner{plan, &store, session_id, progress, result, &pool, nullptr, {}, {}, {}, {}};
  for (const TrialRow& t : tune_trials_get(store, session_id)) runner.stored[t.trial_key] = t;
  std::vector<TrialRequest> reqs;
  reqs.reserve(requests.size());
  for (const TuneTrialRequest& r : requests) reqs.push_back({r.candidate, r.seed, r.budget_s, r.phase});
  std::vector<TrialRow> out;
  for (const auto& t : runner.trials(reqs, false))
    if (t) out.push_back(*t);
  result.busy_wall_s += pool.busy_s();
  result.jobs = pool.jobs();
  return out;
}

void tune_search(const TunePlan& plan, TrialEvaluator& eval, const std::vector<TrialRow>& stored,
                 const std::function<void(const TuneProgress&)>& progress, TuneResult& result) {
  Runner runner{plan, nullptr, 0, progress, result, nullptr, &eval, {}, {}, {}, {}};
  for (const TrialRow& t : stored) runner.stored[t.trial_key] = t;
  search(plan, runner, result, nullptr);
}

nlohmann::json tune_result_json(const TunePlan& plan, const TuneResult& result) {
  nlohmann::json ranking = nlohmann::json::array();
  for (size_t k = 0; k < result.ranking.size(); ++k) {
    const RankedConfig& rc = result.ranking[k];
    nlohmann::json seeds = nlohmann::json::array();
    for (const TrialRow& t : rc.trials)
      seeds.push_back({{"seed", t.seed},
                       {"run_id", t.run_id},
                       {"reached", t.reached},
                       {"time_s", t.time_s},
                       {"stop_reason", t.stop_reason}});
    const TrialRow& t = rc.representative;
    ranking.push_back({{"rank", k + 1},
                       {"config", rc.key},
                       {"algo", rc.candidate.algo},
                       {"period", rc.candidate.period},
                       {"batch", rc.candidate.batch},
                       {"topology", rc.candidate.topology},
                       {"lr_scaling", rc.candidate.lr_scaling},
                       {"raced", rc.raced},
                       {"fidelity_s", rc.fidelity_s},
                       {"reached", rc.median.reached},
                       {"time_to_target_s", rc.median.reached ? nlohmann::json(rc.median.time_s) : nlohmann::json()},
                       {"censored_at_s", rc.median.reached ? nlohmann::json() : nlohmann::json(rc.median.time_s)},
                       {"spread_s", {rc.spread_lo, rc.spread_hi}},
                       {"spread_censored", rc.spread_censored},
                       {"step_s", t.step_s},
                       {"compute_s", t.compute_s},
                       {"comm_s", t.comm_s},
                       {"wait_s", t.wait_s},
                       {"bytes_per_step", t.bytes_per_step},
                       {"bytes_per_step_formula", rc.bytes_per_step},
                       {"run_id", t.run_id},
                       {"seeds", seeds}});
  }
  nlohmann::json refused = nlohmann::json::array();
  for (const Refusal& r : plan.space.refused)
    refused.push_back({{"config", candidate_key(r.candidate)}, {"reason", r.reason}});
  return {{"session", result.session_id},
          {"target", target_format(plan.target)},
          {"budget_s", plan.spec.budget_s},
          {"trials_max", plan.spec.trials},
          {"trial_time_s", result.trial_time_s > 0 ? result.trial_time_s : plan.trial_time_s},
          {"rungs_s", result.rungs_s.empty() ? plan.rungs : result.rungs_s},
          {"initial_design", plan.initial_design},
          {"feasible", plan.space.feasible.size()},
          {"used_s", result.used_s},
          {"trials_run", result.trials_run},
          {"trials_resumed", result.trials_resumed},
          {"trials_reused", result.trials_reused},
          {"trials_dropped", result.trials_dropped},
          {"backend", plan.spec.base.backend},
          {"verdict", result.verdict},
          {"top_two_overlap", result.top_two_overlap},
          {"notes", result.notes},
          {"profile_warnings", result.profile_warnings},
          {"ranking", ranking},
          {"explanation", explain_json(result.explanation)},
          {"refused", refused}};
}

}  // namespace dsgd
