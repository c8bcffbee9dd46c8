// `dsgd-tune grid`: every configuration of the search space with --seeds seeds at the full
// trial time R, stored as a tuning session of kind 'grid' (tuner/grid.hpp) for `dsgd-tune bench`
// to replay. Same workload, cluster and space flags as `recommend`; resumable with --resume.
// Prints, per configuration, the median time-to-target over the seeds, best first; the last
// line is `session_id=<id>`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "cli/tune_commands.hpp"
#include "cli/tune_space_options.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/grid.hpp"
#include "tuner/tune_interrupt.hpp"

namespace dsgd {

namespace {

struct GridOptions {
  TuneSpaceOptions space;
  int64_t seeds = 3;
  int64_t resume = 0;
};

int run_grid(const GridOptions& o) {
  GridPlan grid;
  int64_t session_id = 0;
  std::string db;
  if (o.resume > 0) {
    db = run_options_resolve(o.space.run).db;
    Store store = Store::open_readonly(db);
    const TuneSessionRow s = tune_session_get(store, o.resume);
    if (s.kind != "grid")
      DSGD_THROW(InputError, "resume it with `dsgd-tune recommend --resume`", "session {} is a {} session, not a grid",
                 o.resume, s.kind);
    if (s.status == TuneSessionStatus::session_completed)
      DSGD_THROW(InputError, fmt::format("replay it with `dsgd-tune bench --grid {}`", o.resume),
                 "grid session {} is already completed", o.resume);
    grid = grid_plan_from_json(nlohmann::json::parse(s.spec_json));
    grid.plan.spec.base.db = db;
    session_id = o.resume;
  } else {
    grid = grid_plan(tune_space_options_spec(o.space), o.seeds, o.space.max_trial_steps);
    db = grid.plan.spec.base.db;
  }
  grid.plan.jobs = tune_space_options_jobs(o.space, grid.plan.spec.base.threads);
  Store store = Store::open(db);
  grid.plan.missing_profiles = tune_missing_profiles(grid.plan, store);
  if (session_id == 0) {
    TuneSessionRow row;
    row.kind = "grid";
    row.target = target_format(grid.plan.target);
    row.seed = grid.plan.spec.base.seed;
    row.spec_json = grid_spec_to_json(grid).dump();
    session_id = tune_session_begin(store, row);
  } else {
    tune_session_set_status(store, session_id, TuneSessionStatus::session_running);
  }
  const RunConfig& b = grid.plan.spec.base;
  fmt::print("dsgd-tune grid: session {}{} in {}\n", session_id, o.resume > 0 ? " (resumed)" : "", db);
  fmt::print("  {} on {}, {} simulated workers, network {}{}, target {}\n", b.workload, b.dataset, b.workers,
             b.bandwidth.empty() ? "(calibrated or ideal)" : b.bandwidth, b.latency.empty() ? "" : " / " + b.latency,
             target_format(grid.plan.target));
  for (const std::string& n : grid.plan.notes) fmt::print("  {}\n", n);
  std::fflush(stdout);
  tune_interrupt_start(db, session_id, "grid");
  const bool tty = isatty(STDERR_FILENO) != 0;
  const double started = clock_now_s();
  auto progress = [&](const GridProgress& p) {
    if (!tty) return;
    fmt::print(stderr,
               "\r\033[K[dsgd-tune grid] trial {} of {} ({} left) | best {} | {:.0f} s elapsed | {:.4g} s of "
               "evaluation used | running {}",
               std::min(p.trial + 1, p.total), p.total, std::max<int64_t>(0, p.total - p.trial), p.best,
               clock_now_s() - started, p.used_s, p.current);
    std::fflush(stderr);
  };
  const GridResult result =
      tune_session_run(store, session_id, tty, [&] { return grid_run(grid, store, session_id, progress); });
  if (tty) fmt::print(stderr, "\r\033[K");
  const double wall = clock_now_s() - started;
  for (const std::string& n : result.notes) fmt::print("  {}\n", n);

  // Per configuration: the median over its seeds in the censored order.
  std::map<std::string, std::vector<TrialRow>> by_config;
  for (const TrialRow& t : result.trials) by_config[t.config_key].push_back(t);
  struct Line {
    std::string key;
    TrialRow median;
    int reached = 0, seeds = 0;
  };
  std::vector<Line> lines;
  for (auto& [key, trials] : by_config) {
    std::sort(trials.begin(), trials.end(),
              [](const TrialRow& x, const TrialRow& y) { return objective_better(trial_score(x), trial_score(y)); });
    Line l{key, trials[trials.size() / 2], 0, static_cast<int>(trials.size())};
    for (const TrialRow& t : trials) l.reached += t.reached ? 1 : 0;
    lines.push_back(l);
  }
  std::sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) {
    if (objective_better(trial_score(x.median), trial_score(y.median))) return true;
    if (objective_better(trial_score(y.median), trial_score(x.median))) return false;
    return x.key < y.key;
  });
  fmt::print("\n{:>4}  {:<30} {:>24} {:>8}\n", "rank", "configuration", "median time-to-target", "reached");
  for (size_t k = 0; k < lines.size(); ++k) {
    const Line& l = lines[k];
    const std::string cell = l.median.status == TrialStatus::trial_failed ? "failed"
                             : l.median.reached                           ? fmt::format("{:.4g} s", l.median.time_s)
                                                : fmt::format("not reached by {:.4g} s", l.median.time_s);
    fmt::print("{:>4}  {:<30} {:>24} {:>5}/{}\n", k + 1, l.key, cell, l.reached, l.seeds);
  }
  nlohmann::json out = {{"kind", "grid"},
                        {"trials", result.trials.size()},
                        {"trials_run", result.trials_run},
                        {"used_s", result.used_s},
                        {"wall_s", wall}};
  if (!lines.empty() && lines.front().median.reached)
    out["best"] = {{"config", lines.front().key}, {"median_time_s", lines.front().median.time_s}};
  out["verdict"] = !lines.empty() && lines.front().median.reached
                       ? fmt::format("grid best: {} (median {:.4g} s)", lines.front().key, lines.front().median.time_s)
                       : std::string("grid: no configuration reached the target");
  tune_session_finish(store, session_id, TuneSessionStatus::session_completed, out.dump(), "");
  fmt::print(
      "\n{} trials run{}, {:.4g} s of evaluation time in all (the grid's cost); {:.1f} s real, of which trials "
      "{:.1f} s, profiling {:.1f} s\n",
      result.trials_run, result.trials_kept > 0 ? fmt::format(", {} kept from before", result.trials_kept) : "",
      result.used_s, wall, result.trial_wall_s, result.profile_wall_s);
  fmt::print("replay tuning strategies against it: dsgd-tune bench --grid {}{}\n", session_id,
             db == "./dsgd.db" ? "" : " --db " + db);
  fmt::print("session_id={}\n", session_id);
  return 0;
}

}  // namespace

void setup_tune_grid(CLI::App& app) {
  auto o = std::make_shared<GridOptions>();
  CLI::App* sub = app.add_subcommand(
      "grid", "Run every configuration of a small search space at the full trial time, for `dsgd-tune bench`");
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  tune_space_options_bind(sub, o->space, "R: every trial's budget (required), e.g. 0.5s");
  sub->add_option("--seeds", o->seeds, "seeds per configuration")->capture_default_str();
  sub->add_option("--resume", o->resume, "continue grid SESSION (finished trials are not rerun)");
  sub->footer(
      "Example:\n"
      "  dsgd-tune grid --workload svm --dataset fashion-mnist --workers 32 --bandwidth 100Mbps --latency 5ms "
      "--target acc=0.80 --trial-time 0.5s --lr-scaling linear --db grid.db\n");
  sub->callback([o]() { tune_exit_code() = run_grid(*o); });
}

}  // namespace dsgd
