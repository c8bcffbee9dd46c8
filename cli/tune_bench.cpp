// `dsgd-tune bench --grid SESSION`: replays tuning strategies against a stored grid
// (tuner/replay.hpp) — no training — and reports, per strategy and budget, the median and IQR
// over repetitions of the regret of its recommendation on a held-out seed and of its cost as
// a share of the grid's total evaluation time.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "cli/tune_commands.hpp"
#include "core/errors.hpp"
#include "results/store.hpp"
#include "tuner/replay.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

namespace {

struct BenchCliOptions {
  std::string db = "./dsgd.db";
  int64_t grid = 0;
  int64_t reps = 20;
  std::string strategies = "tuner,random";
  std::string fractions = "0.1";
  std::string format = "table";
};

std::string pct(double x) {
  if (!std::isfinite(x)) return "inf";
  return std::abs(x) < 0.01 && x != 0 ? fmt::format("{:.2f}%", 100 * x) : fmt::format("{:.1f}%", 100 * x);
}

int run_bench(const BenchCliOptions& o) {
  BenchOptions b;
  b.reps = o.reps;
  b.strategies = tune_parse_list("--strategies", o.strategies);
  b.budget_fractions.clear();
  for (const std::string& f : tune_parse_list("--budget-fraction", o.fractions)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.size())
      DSGD_THROW(InputError, "pass numbers, e.g. --budget-fraction 0.1,0.3", "--budget-fraction: '{}' is not a number",
                 f);
    b.budget_fractions.push_back(v);
  }
  if (o.format != "table" && o.format != "json")
    DSGD_THROW(InputError, "pass --format table or --format json", "--format '{}' is not known", o.format);
  bench_options_validate(b);
  Store store = Store::open_readonly(o.db);
  const StoredGrid grid = replay_grid_load(store, o.grid);
  std::optional<TunePrior> prior;
  if (bench_needs_prior(b)) prior = bench_prior_build(grid, store);
  const BenchReport r = bench_run(grid, b, prior ? &*prior : nullptr);
  if (o.format == "json") {
    fmt::print("{}\n", bench_report_json(grid, r).dump(2));
    return 0;
  }
  fmt::print(
      "dsgd-tune bench: grid session {} in {}: {} trials ({} seeds), R = {:.4g} s, total evaluation time {:.4g} s\n",
      grid.session_id, o.db, grid.trials.size(), grid.seeds.size(), grid.trial_time_s, grid.total_cost_s);
  fmt::print("  grid best (median over seeds): {} at {:.4g} s\n", r.grid_best.empty() ? "none" : r.grid_best,
             r.grid_best_time_s);
  for (const auto& [seed, kb] : r.best_per_seed)
    fmt::print("  best on seed {}: {} at {:.4g} s\n", seed, kb.first, kb.second);
  if (prior) {
    fmt::print("  prior (probe seed {}): recommends {}\n", prior->probe.seed, r.prior_best);
    for (const std::string& n : r.prior_notes) fmt::print("    {}\n", n);
  }
  fmt::print("\n{:<11} {:>8} {:>5} {:>24} {:>10} {:>24} {:>8}\n", "strategy", "budget", "reps", "regret median [IQR]",
             "<=5%", "cost share median [IQR]", "no rec.");
  for (const BenchRow& row : r.rows)
    fmt::print(
        "{:<11} {:>7.3g}x {:>5} {:>24} {:>6}/{:<3} {:>24} {:>8}\n", row.strategy, row.budget_fraction, row.reps.size(),
        fmt::format("{} [{}, {}]", pct(row.regret_median), pct(row.regret_q25), pct(row.regret_q75)), row.within_5pct,
        row.reps.size(), fmt::format("{} [{}, {}]", pct(row.cost_median), pct(row.cost_q25), pct(row.cost_q75)),
        row.no_recommendation);
  fmt::print(
      "(regret: the recommendation's time-to-target / the best, - 1, the mean over the grid seeds the strategy did not "
      "evaluate (the held-out one among them); budget: share of the "
      "grid's total evaluation time; cost: evaluation time spent / the grid's total)\n");
  return 0;
}

}  // namespace

void setup_tune_bench(CLI::App& app) {
  auto o = std::make_shared<BenchCliOptions>();
  CLI::App* sub =
      app.add_subcommand("bench", "Replay tuning strategies against a stored grid: regret and cost over repetitions");
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--grid", o->grid, "grid session (dsgd-tune grid; dsgd-tune sessions)")->required();
  sub->add_option("--db", o->db, "SQLite results database")->capture_default_str();
  sub->add_option("--reps", o->reps, "repetitions (strategy seeds) per strategy")->capture_default_str();
  sub->add_option("--strategies", o->strategies, "tuner, random, hyperband, prior, tuner-prior")->capture_default_str();
  sub->add_option("--budget-fraction", o->fractions, "budget as a share of the grid's evaluation time (list)")
      ->capture_default_str();
  sub->add_option("--format", o->format, "table | json")->capture_default_str();
  sub->callback([o]() { tune_exit_code() = run_bench(*o); });
}

}  // namespace dsgd
