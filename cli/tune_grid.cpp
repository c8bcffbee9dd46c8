// `dsgd-tune grid`: every configuration of the search space with --seeds seeds at the full
// trial time R, stored as a tuning session of kind 'grid' (tuner/grid.hpp) for `dsgd-tune bench`
// to replay. Same workload, cluster and space flags as `recommend`; resumable with --resume, and
// widened to more seeds with --resume N --seeds K (the trials of the seeds it has are kept).
// Prints, per configuration, the median time-to-target over the seeds, best first; the last
// line is `session_id=<id>`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
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
  bool seeds_given = false;  // --seeds on the command line (with --resume: widen the grid)
  int64_t resume = 0;
};

// The grid to run: the stored one of --resume (refused when not a grid, or already completed
// unless --seeds widens it), or a new one planned from the flags (session_id 0: not stored yet).
struct GridSession {
  GridPlan grid;
  int64_t session_id = 0;
  std::string db;
  bool widened = false;  // --seeds raised the stored grid's seed count (its spec is rewritten)
};

GridSession grid_resolve(const GridOptions& o) {
  GridSession g;
  if (o.resume > 0) {
    g.db = run_options_resolve(o.space.run).db;
    Store store = Store::open_readonly(g.db);
    const TuneSessionRow s = tune_session_get(store, o.resume);
    if (s.kind != "grid")
      DSGD_THROW(InputError, "resume it with `dsgd-tune recommend --resume`", "session {} is a {} session, not a grid",
                 o.resume, s.kind);
    nlohmann::json spec = nlohmann::json::parse(s.spec_json);
    const int64_t stored_seeds = spec.at("grid-seeds").get<int64_t>();
    if (o.seeds_given && o.seeds < stored_seeds)
      DSGD_THROW(InputError, fmt::format("pass --seeds {} or more, or leave --seeds out", stored_seeds),
                 "--seeds {} would drop seeds of grid session {}, which has {}: a grid only grows", o.seeds, o.resume,
                 stored_seeds);
    g.widened = o.seeds_given && o.seeds > stored_seeds;
    if (s.status == TuneSessionStatus::session_completed && !g.widened)
      DSGD_THROW(InputError,
                 fmt::format("replay it with `dsgd-tune bench --grid {}`, or add seeds with --seeds {}", o.resume,
                             stored_seeds + 1),
                 "grid session {} is already completed", o.resume);
    if (g.widened) spec["grid-seeds"] = o.seeds;
    g.grid = grid_plan_from_json(spec);
    g.grid.plan.spec.base.db = g.db;
    g.session_id = o.resume;
  } else {
    g.grid = grid_plan(tune_space_options_spec(o.space), o.seeds, o.space.max_trial_steps);
    g.db = g.grid.plan.spec.base.db;
  }
  return g;
}

// Stores a new grid session as running, or marks the resumed one running again (with its new
// seed count when widened); returns its id.
int64_t grid_session_start(Store& store, const GridSession& g) {
  const GridPlan& grid = g.grid;
  if (g.session_id != 0) {
    if (g.widened) tune_session_set_spec(store, g.session_id, grid_spec_to_json(grid).dump());
    tune_session_set_status(store, g.session_id, TuneSessionStatus::session_running);
    return g.session_id;
  }
  TuneSessionRow row;
  row.kind = "grid";
  row.target = target_format(grid.plan.target);
  row.seed = grid.plan.spec.base.seed;
  row.spec_json = grid_spec_to_json(grid).dump();
  return tune_session_begin(store, row);
}

void print_grid_header(const GridPlan& grid, int64_t session_id, const std::string& db, bool resumed) {
  const RunConfig& b = grid.plan.spec.base;
  fmt::print("dsgd-tune grid: session {}{} in {}\n", session_id, resumed ? " (resumed)" : "", db);
  fmt::print("  {} on {}, {} simulated workers, network {}{}, target {}\n", b.workload, b.dataset, b.workers,
             b.bandwidth.empty() ? "(calibrated or ideal)" : b.bandwidth, b.latency.empty() ? "" : " / " + b.latency,
             target_format(grid.plan.target));
  for (const std::string& n : grid.plan.notes) fmt::print("  {}\n", n);
  std::fflush(stdout);
}

// The progress line on a terminal (stderr), redrawn at each trial; nothing elsewhere.
std::function<void(const GridProgress&)> grid_progress_printer(bool tty, double started) {
  return [tty, started](const GridProgress& p) {
    if (!tty) return;
    fmt::print(stderr,
               "\r\033[K[dsgd-tune grid] trial {} of {} ({} left) | best {} | {:.0f} s elapsed | {:.4g} s of "
               "evaluation used | running {}",
               std::min(p.trial + 1, p.total), p.total, std::max<int64_t>(0, p.total - p.trial), p.best,
               clock_now_s() - started, p.used_s, p.current);
    std::fflush(stderr);
  };
}

// One configuration of the grid: its median trial over the seeds (censored order).
struct GridLine {
  std::string key;
  TrialRow median;
  int reached = 0, seeds = 0;
};

// Per configuration, the median over its seeds; best first (ties by key).
std::vector<GridLine> grid_lines(const GridResult& result) {
  std::map<std::string, std::vector<TrialRow>> by_config;
  for (const TrialRow& t : result.trials) by_config[t.config_key].push_back(t);
  std::vector<GridLine> lines;
  for (const auto& [key, trials] : by_config) {
    GridLine l{key, trials_median(trials), 0, static_cast<int>(trials.size())};
    for (const TrialRow& t : trials) l.reached += t.reached ? 1 : 0;
    lines.push_back(l);
  }
  std::sort(lines.begin(), lines.end(), [](const GridLine& x, const GridLine& y) {
    if (objective_better(trial_score(x.median), trial_score(y.median))) return true;
    if (objective_better(trial_score(y.median), trial_score(x.median))) return false;
    return x.key < y.key;
  });
  return lines;
}

void print_grid_table(const std::vector<GridLine>& lines) {
  fmt::print("\n{:>4}  {:<30} {:>24} {:>8}\n", "rank", "configuration", "median time-to-target", "reached");
  for (size_t k = 0; k < lines.size(); ++k) {
    const GridLine& l = lines[k];
    const std::string cell = l.median.status == TrialStatus::trial_failed ? "failed"
                             : l.median.reached                           ? fmt::format("{:.4g} s", l.median.time_s)
                                                : fmt::format("not reached by {:.4g} s", l.median.time_s);
    fmt::print("{:>4}  {:<30} {:>24} {:>5}/{}\n", k + 1, l.key, cell, l.reached, l.seeds);
  }
}

// The stored result: counts, cost, the best configuration and the verdict.
nlohmann::json grid_result_json(const GridResult& result, const std::vector<GridLine>& lines, double wall) {
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
  return out;
}

void print_grid_footer(const GridResult& result, double wall, int64_t session_id, const std::string& db) {
  fmt::print(
      "\n{} trials run{}, {:.4g} s of evaluation time in all (the grid's cost); {:.1f} s real, of which trials "
      "{:.1f} s, profiling {:.1f} s\n",
      result.trials_run, result.trials_kept > 0 ? fmt::format(", {} kept from before", result.trials_kept) : "",
      result.used_s, wall, result.trial_wall_s, result.profile_wall_s);
  fmt::print("replay tuning strategies against it: dsgd-tune bench --grid {}{}\n", session_id,
             db == "./dsgd.db" ? "" : " --db " + db);
  fmt::print("session_id={}\n", session_id);
}

int run_grid(const GridOptions& o) {
  GridSession g = grid_resolve(o);
  GridPlan& grid = g.grid;
  grid.plan.jobs = tune_jobs_for_memory(grid.plan, tune_space_options_jobs(o.space, grid.plan.spec.base.threads),
                                        o.space.jobs_option && o.space.jobs_option->count() > 0);
  Store store = Store::open(g.db);
  grid.plan.missing_profiles = tune_missing_profiles(grid.plan, store);
  const int64_t session_id = grid_session_start(store, g);
  print_grid_header(grid, session_id, g.db, o.resume > 0);
  tune_interrupt_start(g.db, session_id, "grid");
  const bool tty = isatty(STDERR_FILENO) != 0;
  const double started = clock_now_s();
  const std::function<void(const GridProgress&)> progress = grid_progress_printer(tty, started);
  const GridResult result =
      tune_session_run(store, session_id, tty, [&] { return grid_run(grid, store, session_id, progress); });
  if (tty) fmt::print(stderr, "\r\033[K");
  const double wall = clock_now_s() - started;
  for (const std::string& n : result.notes) fmt::print("  {}\n", n);
  const std::vector<GridLine> lines = grid_lines(result);
  print_grid_table(lines);
  tune_session_finish(store, session_id, TuneSessionStatus::session_completed,
                      grid_result_json(result, lines, wall).dump(), "");
  print_grid_footer(result, wall, session_id, g.db);
  return 0;
}

}  // namespace

void setup_tune_grid(CLI::App& app) {
  auto o = std::make_shared<GridOptions>();
  CLI::App* sub = app.add_subcommand(
      "grid", "Run every configuration of a small search space at the full trial time, for `dsgd-tune bench`");
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  tune_space_options_bind(sub, o->space, "R: every trial's budget (required), e.g. 0.5s");
  sub->add_option("--seeds", o->seeds, "seeds per configuration (with --resume: widen the grid to this many)")
      ->capture_default_str()
      ->each([o](const std::string&) { o->seeds_given = true; });
  sub->add_option("--resume", o->resume,
                  "continue grid SESSION (finished trials are not rerun); with --seeds K, also a completed one");
  sub->footer(
      "Example:\n"
      "  dsgd-tune grid --workload svm --dataset fashion-mnist --workers 32 --bandwidth 100Mbps --latency 5ms "
      "--target acc=0.80 --trial-time 0.5s --lr-scaling linear --db grid.db\n");
  sub->callback([o]() { tune_exit_code() = run_grid(*o); });
}

}  // namespace dsgd
