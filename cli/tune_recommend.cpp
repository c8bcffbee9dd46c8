// `dsgd-tune recommend`: the workload and cluster flags of `dsgd-bench run` (the same binding,
// cli/run_options.hpp) minus the knobs it searches, the search space, a budget and a target;
// plans without touching the database (bad input stores nothing), then opens a session, runs
// the search (tuner/recommend.hpp) and prints the ranking, the verdict and the winner's exact
// `dsgd-bench run` command. The last line is `session_id=<id>`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "cli/tune_commands.hpp"
#include "cli/tune_space_options.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"
#include "tuner/cost_file_rank.hpp"
#include "tuner/recommend.hpp"
#include "tuner/trial_pool.hpp"
#include "tuner/tune_interrupt.hpp"
#include "tuner/tune_output.hpp"
#include "tuner/tune_validate.hpp"
#include "workloads/cost_file.hpp"

namespace dsgd {

namespace {

constexpr int kTuneExitNoRecommendation = 3;  // searched, but no configuration reached the target

struct RecommendOptions {
  TuneSpaceOptions space;  // run flags, search space, --trial-time, --max-bytes-per-step, --max-trial-steps
  std::string budget;
  int64_t trials = 0;
  int64_t race_seeds = 3;
  std::string output;
  std::string format = "table";
  int64_t resume = 0;
  int64_t validate = 0;  // --validate K: the top K on the real backend afterwards (cli/tune_validate.cpp)
  std::string prior =
      "off";  // --prior on|off: the theory prior (tuner/prior.hpp); off: measured no better (docs/tuner.md)
  std::string reference_steps;  // --reference-steps STEPS@BATCH: a cost file's convergence point
  CLI::Option* trials_option = nullptr;
  CLI::Option* backend_option = nullptr;
};

TuneSpec spec_from_options(const RecommendOptions& o) {
  TuneSpec spec = tune_space_options_spec(o.space);
  if (!o.budget.empty()) spec.budget_s = tune_parse_duration("--budget", o.budget);
  if (o.trials_option && o.trials_option->count() > 0) {
    if (o.trials < 1)
      DSGD_THROW(InputError, "pass --trials 1 or more (or --budget 5min)", "--trials must be positive (got {})",
                 o.trials);
    spec.trials = o.trials;
  }
  if (o.race_seeds < 1 || o.race_seeds > 100)
    DSGD_THROW(InputError, "pass e.g. --race-seeds 3", "--race-seeds must be in 1..100 (got {})", o.race_seeds);
  spec.race_seeds = o.race_seeds;
  if (o.prior != "on" && o.prior != "off")
    DSGD_THROW(InputError, "pass --prior on or --prior off", "--prior '{}' is not known", o.prior);
  spec.prior = o.prior == "on";
  return spec;
}

// A trial stopped before its first timed step (inside the warm-up) has no step time: "-".
std::string ms(double s, double step) {
  return step > 0 ? fmt::format("{:.3f}", s * 1e3) : std::string("-");
}

std::string time_cell(const RankedConfig& rc) {
  if (rc.median.reached) return fmt::format("{:.4g} s", rc.median.time_s);
  if (rc.representative.stop_kind == StopKind::stop_diverged)
    return fmt::format("diverged at {:.4g} s", rc.median.time_s);
  return fmt::format("not reached by {:.4g} s", rc.median.time_s);
}

std::string spread_cell(const RankedConfig& rc) {
  if (rc.trials.size() < 2) return "-";
  return fmt::format("{:.4g}-{:.4g}{} s", rc.spread_lo, rc.spread_hi, rc.spread_censored ? "+" : "");
}

void print_table(const TunePlan& plan, const TuneResult& r) {
  fmt::print("\n{:>4}  {:<30} {:>24} {:>16} {:>10} {:>9} {:>9} {:>9} {:>11} {:>5} {:>9}\n", "rank", "configuration",
             "time-to-target", "spread(seeds)", "step(ms)", "compute", "comm", "wait", "bytes/step", "seeds",
             "fidelity");
  for (size_t k = 0; k < r.ranking.size(); ++k) {
    const RankedConfig& rc = r.ranking[k];
    const TrialRow& t = rc.representative;
    fmt::print("{:>4}  {:<30} {:>24} {:>16} {:>10} {:>9} {:>9} {:>9} {:>11.4g} {:>5} {:>7.4g} s{}\n", k + 1, rc.key,
               time_cell(rc), spread_cell(rc), ms(t.step_s, t.step_s), ms(t.compute_s, t.step_s),
               ms(t.comm_s, t.step_s), ms(t.wait_s, t.step_s), rc.bytes_per_step, rc.trials.size(), rc.fidelity_s,
               t.status == TrialStatus::trial_failed ? "  (failed: " + t.stop_reason + ")" : "");
  }
  fmt::print(
      "(step, compute, comm, wait: ms per step, means of the median seed's run; bytes/step: per worker, the "
      "algorithm's formula)\n");
  if (!plan.space.refused.empty()) {
    fmt::print("\nrefused before running ({}):\n", plan.space.refused.size());
    for (size_t i = 0; i < plan.space.refused.size() && i < 10; ++i)
      fmt::print("  {}: {}\n", candidate_key(plan.space.refused[i].candidate), plan.space.refused[i].reason);
    if (plan.space.refused.size() > 10) fmt::print("  ... ({} more: dsgd-tune show)\n", plan.space.refused.size() - 10);
  }
}

// The session to run: the stored one of --resume (its spec, refused when already completed), or
// a new one's spec from the flags (session_id 0: not stored yet).
struct RecommendSession {
  TuneSpec spec;
  int64_t session_id = 0;
  std::string db;
};

RecommendSession session_resolve(const RecommendOptions& o) {
  RecommendSession r;
  if (o.resume > 0) {
    r.db = run_options_resolve(o.space.run).db;
    Store store = Store::open_readonly(r.db);
    const TuneSessionRow s = tune_session_get(store, o.resume);
    if (s.status == TuneSessionStatus::session_completed)
      DSGD_THROW(InputError, fmt::format("see it with `dsgd-tune show {}`", o.resume),
                 "session {} is already completed", o.resume);
    r.spec = tune_spec_from_json(nlohmann::json::parse(s.spec_json));
    r.spec.base.db = r.db;
    r.session_id = o.resume;
  } else {
    r.spec = spec_from_options(o);
    r.db = r.spec.base.db;
  }
  return r;
}

// Trials at a time: --jobs, or one on MPI (refusing --jobs above 1 there).
int jobs_resolve(const RecommendOptions& o, const TuneSpec& spec) {
  const int jobs = tune_space_options_jobs(o.space, spec.base.threads);
  // Before tune_plan, which refuses a backend other than sim or mpi.
  if (trial_backend_find(spec.base.backend) != TrialBackend::trial_mpi) return jobs;
  // Trials timed on real ranks: one at a time, or they would slow each other down.
  if (o.space.jobs_option && o.space.jobs_option->count() > 0 && o.space.jobs > 1)
    DSGD_THROW(InputError, "drop --jobs (trials on MPI run one at a time), or use --backend sim",
               "--jobs {} with --backend mpi: each trial is timed on real ranks of this machine, and two at a time "
               "would share its cores and slow each other down",
               o.space.jobs);
  return 1;
}

void validate_option_check(const RecommendOptions& o, const TuneSpec& spec) {
  if (o.validate < 0) DSGD_THROW(InputError, "pass --validate 2 (or leave it out)", "--validate must be >= 0");
  if (o.validate > 0 && o.format != "table")
    DSGD_THROW(InputError, "run `dsgd-tune validate SESSION --top K` after the JSON output",
               "--validate prints a table: it cannot be combined with --format {}", o.format);
  if (o.validate > 0) tune_validate_check_workers(spec.base.workers, spec.base.hostfile, "--validate");
}

// Stores a new session as running, or marks the resumed one running again; returns its id.
int64_t session_start(Store& store, const TunePlan& plan, const TuneSpec& spec, int64_t session_id) {
  if (session_id != 0) {
    tune_session_set_status(store, session_id, TuneSessionStatus::session_running);
    return session_id;
  }
  TuneSessionRow row;
  row.target = target_format(plan.target);
  row.seed = spec.base.seed;
  row.spec_json = tune_spec_to_json(spec).dump();
  return tune_session_begin(store, row);
}

// The table format's opening lines: the session, the cluster, the budget, the plan's notes.
void print_header(const RecommendOptions& o, const TunePlan& plan, int64_t session_id, const std::string& db) {
  const TuneSpec& spec = plan.spec;
  const RunConfig& b = spec.base;
  const bool mpi = plan.backend == TrialBackend::trial_mpi;
  fmt::print("dsgd-tune recommend: session {}{} in {}\n", session_id, o.resume > 0 ? " (resumed)" : "", db);
  fmt::print("  {} on {}, {} {}, network {}{}, straggler {}, target {}\n", b.workload, b.dataset, b.workers,
             mpi ? "MPI ranks on this machine" : "simulated workers",
             b.bandwidth.empty() ? (mpi ? "(this machine's fabric)" : "(calibrated or ideal)") : b.bandwidth,
             b.latency.empty() ? "" : " / " + b.latency, b.straggler.empty() ? "none" : b.straggler,
             target_format(plan.target));
  fmt::print("  budget: {}{}\n",
             spec.budget_s > 0 ? fmt::format("{:.4g} s of evaluation time ({})", spec.budget_s,
                                             mpi ? "the trials' training time, wall clock" : "virtual")
                               : "",
             spec.trials > 0 ? fmt::format("{}{} trials", spec.budget_s > 0 ? ", at most " : "", spec.trials) : "");
  for (const std::string& n : plan.notes) fmt::print("  {}\n", n);
  if (mpi)
    fmt::print("  trials on MPI: one at a time, each a `dsgd-bench run --backend mpi` of {} ranks (engine/child_run)\n",
               b.workers);
  else
    fmt::print("  trials at a time: {} (--jobs{})\n", plan.jobs, o.space.jobs > 0 ? "" : ": one per core");
  std::fflush(stdout);
}

// The progress line on a terminal (stderr), redrawn at each trial; nothing elsewhere.
std::function<void(const TuneProgress&)> progress_printer(const TuneSpec& spec, double started) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const int64_t trials = spec.trials;
  return [tty, trials, started](const TuneProgress& p) {
    if (!tty) return;
    std::string budget = p.budget_s > 0 ? fmt::format("budget {:.4g} of {:.4g} s used, {:.4g} s left", p.used_s,
                                                      p.budget_s, std::max(0.0, p.budget_s - p.used_s))
                                        : fmt::format("{:.4g} s of evaluation used", p.used_s);
    if (trials > 0) budget += fmt::format(", {} of {} trials", p.trial, trials);
    fmt::print(stderr, "\r\033[K[dsgd-tune] trial {} of ~{} | best {} | {:.0f} s elapsed | {} | running {}",
               p.trial + 1, p.planned, p.best, clock_now_s() - started, budget, p.current);
    std::fflush(stderr);
  };
}

// The stored result: the ranking (tune_result_json) and where the session's real time went.
nlohmann::json result_json(const TunePlan& plan, const TuneResult& result, double wall) {
  nlohmann::json out = tune_result_json(plan, result);
  out["wall_s"] = wall;
  out["trial_wall_s"] = result.trial_wall_s;
  out["profile_wall_s"] = result.profile_wall_s;
  // The tuner's own time: the session's real time during which no trial was running
  // (planning, loading the dataset, the GP, ranking, copying runs between rungs), profiling and the
  // prior's probe apart.
  const double own = std::max(0.0, wall - result.busy_wall_s - result.profile_wall_s - result.probe_wall_s);
  out["jobs"] = result.jobs;
  out["busy_wall_s"] = result.busy_wall_s;
  out["overhead_s"] = own;
  out["overhead_share"] = wall > 0 ? own / wall : 0.0;
  out["probe_s"] = result.probe_s;
  out["probe_wall_s"] = result.probe_wall_s;
  return out;
}

// The winner's `dsgd-bench run` command and TOML (both empty when nothing reached the target).
struct Recommendation {
  std::string command, toml;
};

Recommendation recommendation_of(const TuneResult& result, int64_t session_id) {
  Recommendation r;
  if (result.ranking.empty() || !result.ranking.front().median.reached) return r;
  RunConfig winner;
  run_config_apply_json(winner, nlohmann::json::parse(result.ranking.front().representative.config_json),
                        fmt::format("trial of session {}", session_id));
  r.command = tune_run_command(winner);
  r.toml = tune_config_toml(winner);
  return r;
}

void output_write(const RecommendOptions& o, const std::string& toml) {
  if (o.output.empty() || toml.empty()) return;
  std::ofstream f(o.output);
  f << toml;
  if (!f) DSGD_THROW(Error, "pass a writable path to -o", "cannot write '{}'", o.output);
}

// The table format's ending: notes, warnings, the ranking, the verdict and why, the command, and
// where the time went.
void print_summary(const RecommendOptions& o, const TunePlan& plan, const TuneResult& result, const Recommendation& rec,
                   const nlohmann::json& out) {
  for (const std::string& n : result.notes) fmt::print("  {}\n", n);
  for (const std::string& w : result.profile_warnings)
    fmt::print(
        "  warning: compute profile {} (the simulated times of that batch may be biased; rerun "
        "`dsgd-bench calibrate` on a quiet machine)\n",
        w);
  for (const std::string& w : result.network_warnings) fmt::print("  warning: {}\n", w);
  print_table(plan, result);
  fmt::print("\n{}\n", result.verdict);
  const std::vector<std::string> why = explain_lines(result.explanation);
  if (!why.empty()) fmt::print("\n{}\n", fmt::join(why, "\n"));
  if (!rec.command.empty()) fmt::print("\nrun it:\n  {}\n", rec.command);
  if (!o.output.empty()) {
    if (!rec.toml.empty())
      fmt::print("  (also written to {}: dsgd-bench run --config {})\n", o.output, o.output);
    else
      fmt::print("  (nothing written to {}: no recommendation)\n", o.output);
  }
  const double wall = out["wall_s"].get<double>(), own = out["overhead_s"].get<double>();
  fmt::print(
      "\n{} trials run{}{}{}, {:.4g} s of evaluation time; {:.1f} s real: trials running {:.1f} s ({:.1f} s of "
      "trials, {} at a time), profiling {:.1f} s, {}the tuner itself {:.1f} s ({:.1f} % of the session)\n",
      result.trials_run, result.trials_resumed > 0 ? fmt::format(", {} kept from before", result.trials_resumed) : "",
      result.trials_reused > 0 ? fmt::format(", {} answered by a shorter trial", result.trials_reused) : "",
      result.trials_dropped > 0
          ? fmt::format(", {} started ahead and dropped (the budget ran out first)", result.trials_dropped)
          : "",
      result.used_s, wall, result.busy_wall_s, result.trial_wall_s, result.jobs, result.profile_wall_s,
      plan.spec.prior ? fmt::format("the prior's probe {:.4g} s of evaluation and {:.1f} s real, ", result.probe_s,
                                    result.probe_wall_s)
                      : std::string(),
      own, wall > 0 ? 100.0 * own / wall : 0.0);
}

// A cost file (--workload profile:FILE): every configuration timed and ranked by a predicted
// figure (tuner/cost_file_rank.hpp); nothing is trained and no session is stored.
int run_cost_file_recommend(const RecommendOptions& o, const TuneSpec& spec) {
  if (o.validate > 0)
    DSGD_THROW(InputError, "drop --validate", "--workload {}: a cost file's ranking has nothing to run on real ranks",
               spec.base.workload);
  // Checked before the database is opened (created), so a refusal stores nothing.
  const bool network_given = !spec.base.bandwidth.empty() || !spec.base.fabric.empty();
  if (!network_given && (!std::filesystem::exists(spec.base.db) ||
                         !Store::open_readonly(spec.base.db).allreduce_fit_latest(system_info_read().host)))
    DSGD_THROW(InputError,
               "pass --bandwidth and --latency (your cluster's link), --fabric FILE (tools/export_fabric.py), or "
               "run dsgd-bench calibrate --workers 2 for this host's",
               "--workload {}: no network to time the configurations on (an ideal one would rank by compute "
               "alone)",
               spec.base.workload);
  std::optional<ConvergenceReference> reference;
  if (!o.reference_steps.empty()) reference = convergence_reference_parse("--reference-steps", o.reference_steps);
  Store store = Store::open(spec.base.db);
  const CostFileRanking ranking = cost_file_rank(spec, store, reference);
  RunConfig best = ranking.rows.front().config;
  best.steps = spec.base.steps > 0 ? spec.base.steps : 100;
  nlohmann::json rows = nlohmann::json::array();
  for (const CostFileRankRow& r : ranking.rows) {
    nlohmann::json row = {{"configuration", candidate_key(r.candidate)},
                          {"step_s", r.step_s},
                          {"step_range_s", {r.step_low_s, r.step_high_s}},
                          {"seeds", r.leader ? kCostFileSeeds : 1},
                          {"within_noise_of_best", r.within_noise},
                          {"score", r.score},
                          {"relative", r.relative}};
    if (ranking.seconds) {
      row["steps_to_target"] = r.steps;
      row["steps_band"] = {r.steps_low, r.steps_high};
      row["seconds_to_target"] = r.score;
      row["seconds_band"] = {r.steps_low * r.step_s, r.steps_high * r.step_s};
    }
    rows.push_back(std::move(row));
  }
  output_write(o, tune_config_toml(best));
  if (o.format == "json") {
    nlohmann::json out = {
        {"workload", spec.base.workload}, {"basis", ranking.basis}, {"unit", ranking.unit},
        {"notes", ranking.notes},         {"ranking", rows},        {"command", tune_run_command(best)}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("dsgd-tune recommend: {} on {} simulated workers ({} configurations timed, {} refused)\n",
             spec.base.workload, spec.base.workers, ranking.rows.size(), ranking.refused.size());
  fmt::print("  ranked by {}\n", ranking.basis);
  for (const std::string& n : ranking.notes) fmt::print("  note: {}\n", n);
  fmt::print("\nrank  {:<36} {:>12} {:>14} {:>9}{}\n", "configuration", "step (ms)", ranking.unit, "vs best",
             ranking.seconds ? fmt::format(" {:>10} {:>21}", "steps", "band (s)") : std::string());
  for (size_t i = 0; i < ranking.rows.size(); ++i) {
    const CostFileRankRow& r = ranking.rows[i];
    fmt::print("{:>4}  {:<36} {:>12.4f} {:>14.4g} {:>8.3f}x{}{}\n", i + 1, candidate_key(r.candidate), 1e3 * r.step_s,
               r.score, r.relative, r.within_noise ? "~" : " ",
               ranking.seconds
                   ? fmt::format(" {:>10.0f} {:>21}", r.steps,
                                 fmt::format("[{:.4g}, {:.4g}]", r.steps_low * r.step_s, r.steps_high * r.step_s))
                   : std::string());
  }
  for (const Refusal& r : ranking.refused) fmt::print("  refused: {}: {}\n", candidate_key(r.candidate), r.reason);
  const auto ties =
      std::count_if(ranking.rows.begin(), ranking.rows.end(), [](const CostFileRankRow& r) { return r.within_noise; });
  fmt::print(
      "\npredicted best: {} (a prediction, not a measurement{}); to time it:\n  {}\n",
      candidate_key(ranking.rows.front().candidate),
      ties == 0 ? std::string() : fmt::format("; {} more within its noise, marked ~", static_cast<long long>(ties)),
      tune_run_command(best));
  return 0;
}

int run_recommend(const RecommendOptions& o) {
  const double started = clock_now_s();  // the session's real time, planning (the dataset's load) included
  RecommendSession session = session_resolve(o);
  // A stored session is never a cost file's (its ranking stores none), so --resume never lands here.
  if (cost_file_workload(session.spec.base.workload)) return run_cost_file_recommend(o, session.spec);
  if (!o.reference_steps.empty())
    DSGD_THROW(InputError, "drop --reference-steps: the search measures the time to --target by training",
               "--reference-steps applies to a cost file or trace (--workload profile:FILE or chakra:FILE), not "
               "--workload {}",
               session.spec.base.workload);
  if (o.format != "table" && o.format != "json")
    DSGD_THROW(InputError, "pass --format table or --format json", "--format '{}' is not known", o.format);
  const int jobs = jobs_resolve(o, session.spec);
  TunePlan plan = tune_plan(session.spec, o.space.max_trial_steps);  // every input check; no database yet
  plan.jobs = tune_jobs_for_memory(plan, jobs, o.space.jobs_option && o.space.jobs_option->count() > 0);
  validate_option_check(o, session.spec);
  Store store = Store::open(session.db);
  plan.missing_profiles = tune_missing_profiles(plan, store);
  // The plan's spec: what the session decided (its evaluation set) is stored for --resume.
  const int64_t session_id = session_start(store, plan, plan.spec, session.session_id);
  tune_interrupt_start(session.db, session_id, "recommend");
  const bool table = o.format == "table";
  if (table) print_header(o, plan, session_id, session.db);
  const bool tty = isatty(STDERR_FILENO) != 0;
  const std::function<void(const TuneProgress&)> progress = progress_printer(session.spec, started);
  const TuneResult result =
      tune_session_run(store, session_id, tty, [&] { return tune_run(plan, store, session_id, progress); });
  if (tty) fmt::print(stderr, "\r\033[K");
  nlohmann::json out = result_json(plan, result, clock_now_s() - started);
  const Recommendation rec = recommendation_of(result, session_id);
  if (!rec.command.empty()) out["command"] = rec.command;
  tune_session_finish(store, session_id, TuneSessionStatus::session_completed, out.dump(), "");
  output_write(o, rec.toml);
  if (table) {
    print_summary(o, plan, result, rec, out);
    if (o.validate > 0) tune_validate_print_run(store, session_id, o.validate, "--validate");
    fmt::print("session_id={}\n", session_id);
  } else {
    fmt::print("{}\n", out.dump(2));
  }
  // A search that found no configuration reaching the target has nothing to recommend: a
  // script must not take it for a recommendation (docs/tuner.md, "Exit codes").
  return rec.command.empty() ? kTuneExitNoRecommendation : 0;
}

}  // namespace

void setup_tune_recommend(CLI::App& app) {
  auto o = std::make_shared<RecommendOptions>();
  CLI::App* sub = app.add_subcommand(
      "recommend", "Search algorithm, sync period, batch, topology and lr rule for the least time to --target");
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a later flag wins
  tune_space_options_bind(sub, o->space, "a trial's full budget R (default: --budget / 20, or 60s)");
  sub->add_option("--budget", o->budget, "evaluation time in all: virtual seconds simulated (300s, 5min, 1h)");
  o->trials_option = sub->add_option("--trials", o->trials, "trial runs in all");
  sub->add_option("--race-seeds", o->race_seeds, "seeds per configuration in the final race")->capture_default_str();
  sub->add_option("-o,--output", o->output, "write the recommended configuration as TOML (dsgd-bench run --config)");
  sub->add_option("--format", o->format, "table | json")->capture_default_str();
  sub->add_option("--validate", o->validate,
                  "afterwards, run the top K configurations on the real MPI backend: predicted vs measured");
  sub->add_option("--prior", o->prior,
                  "on | off: a probe and the theory prior seed the initial design and are the GP's mean")
      ->capture_default_str();
  sub->add_option("--resume", o->resume, "continue SESSION (its stored options; finished trials are not rerun)");
  sub->add_option("--reference-steps", o->reference_steps,
                  "cost files: STEPS@BATCH, your model reached your target in STEPS steps of synchronous SGD at "
                  "global batch BATCH; the ranking is then by predicted seconds to that target, with a band");
  sub->footer(
      "Examples:\n"
      "  dsgd-tune recommend --workload svm --workers 32 --bandwidth 100Mbps --latency 5ms --target acc=0.80 "
      "--budget 5min\n"
      "  dsgd-tune recommend --workers 8 --dataset synthetic:n=4000,d=200,classes=4 --target acc=0.8 --trials 20 -o "
      "best.toml\n"
      "  dsgd-tune recommend --resume 3\n");
  sub->callback([o]() { tune_exit_code() = run_recommend(*o); });
}

}  // namespace dsgd
