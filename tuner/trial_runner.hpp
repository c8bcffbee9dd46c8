// The tuner's trial runner (internal to tuner/recommend.cpp and tuner/resolution.cpp): decides
// each trial the search asks for, in request order, as stored (resume), answered by another
// trial of it that stopped within this one's budget for a reason a longer budget would not
// change (the target reached, a divergence, its last step), or run, on the live pool
// (TrialPool, up to its jobs at a time, each run copied into the session's database) or by an
// evaluator (a stored grid's replay). It keeps the budget's bookkeeping (trials and evaluation
// seconds counted, the best so far for the progress line) and each candidate's schedule
// (steps and evaluation interval for a given R, from a timing-only probe).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "results/report_rows.hpp"
#include "results/tune_store.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/recommend.hpp"
#include "tuner/trial.hpp"
#include "tuner/trial_mpi.hpp"
#include "tuner/trial_pool.hpp"

namespace dsgd::tune_detail {

inline constexpr double kEvalsPerRung0 = 40;  // evaluations within the first rung's budget (resolution r0/40)
inline constexpr double kStepMargin = 1.25;   // steps sized for 1.25 R at the estimated step time
// On MPI the step time is the simulator's estimate and real steps vary, so a trial gets 4 R of
// steps and its time limit (R) ends it (docs/tuner.md "Validation on MPI").
inline constexpr double kMpiStepMargin = 4;

inline std::string fmt_s(double s) {
  return fmt::format("{:.4g} s", s);
}

inline TrialScore score_of(const TrialRow& t) {
  return trial_score(t);
}

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
      const double margin = plan.backend == TrialBackend::trial_mpi ? kMpiStepMargin : kStepMargin;
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
        job.outcome = plan.backend == TrialBackend::trial_mpi ? trial_run_mpi(cfg, q.budget, plan.target, slot)
                                                              : trial_run(cfg, q.budget, plan.target, slot);
      } catch (const std::exception& e) {  // the step-time estimate failed: the configuration cannot run
        job.config_json = run_config_to_json(cfg).dump();
        job.error = e.what();
      }
      job.wall_s = clock_now_s() - t0;
    });
  }

  // A stored trial (resume) or one answered by another trial of the same configuration and
  // seed that stopped within q's budget for a reason a longer budget would not change (same
  // schedule: a trial of q's budget would stop there too, whether the other's was shorter or
  // longer — a capped rung can ask for less than an earlier rung ran).
  std::optional<TrialRow> answered(const TrialRequest& q, bool count) {
    const std::string ck = candidate_key(q.candidate);
    const std::string key = trial_key(ck, q.seed, q.budget);
    if (auto it = stored.find(key); it != stored.end()) {
      if (count && counted.insert(key).second) {  // stored before this invocation (resume): count it once
        ++result.trials_resumed;
        ++trials_counted;
        result.used_s += trial_cost_s(it->second);
        note_best(ck, it->second);
        note_warnings(it->second.run_id);
        by_config[ck + "|" + std::to_string(q.seed)].push_back(it->second);
        report(ck);
      }
      return it->second;
    }
    for (const TrialRow& t : by_config[ck + "|" + std::to_string(q.seed)]) {
      // Stopped for a reason a longer budget would not change (not "budget: ..."), within q's
      // budget (a trial of a longer budget that stopped before q's would have stopped there too).
      const bool final_stop =
          t.reached || t.status == TrialStatus::trial_failed || t.stop_kind != StopKind::stop_budget;
      if (final_stop && t.time_s <= q.budget * (1 + 1e-9)) {
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
      row.status = TrialStatus::trial_failed;
      row.stop_kind = StopKind::stop_error;
      row.stop_reason = fmt::format("error: {}", job.error);
      row.progress = -1e30;
    } else {
      const TrialOutcome& o = job.outcome;
      row.run_id = o.run_id > 0 ? pool->copy_run(job.ticket, o.run_id) : 0;
      row.status = o.status;
      row.stop_reason = o.stop_reason;
      row.stop_kind = o.stop_kind;
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
    note_warnings(row.run_id);
  }

  // What the simulator warned of the fabric in a trial's run (stored in the session's
  // database), each text once per session: the compute profile's are checked once, up front.
  void note_warnings(int64_t run_id) {
    if (!store || run_id <= 0) return;
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(store->run_get(run_id).run.config_json, nullptr, false);
    } catch (const InputError&) {  // a resumed trial whose run was removed since: nothing to say
      return;
    }
    for (std::string& w : report_details_warnings(config, "network-warnings"))
      if (std::find(result.network_warnings.begin(), result.network_warnings.end(), w) == result.network_warnings.end())
        result.network_warnings.push_back(std::move(w));
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

// A runner for the plan `at` on base's store, pool and result, knowing base's stored trials
// and which of them are counted already (a trial is charged to the budget once), but none of
// its shorter-trial answers or schedules: those belong to base's R.
inline Runner runner_at(const TunePlan& at, const Runner& base) {
  return Runner{at, base.store, base.session_id, base.progress, base.result, base.pool, base.serial, base.stored,
                {}, {},         base.counted};
}

// What `sub` ran, known to base: its trials (resume) and the keys already counted.
inline void runner_merge(Runner& base, const Runner& sub) {
  for (const auto& [key, t] : sub.stored) base.stored[key] = t;
  base.counted.insert(sub.counted.begin(), sub.counted.end());
}

}  // namespace dsgd::tune_detail
