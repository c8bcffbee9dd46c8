// `dsgd-tune validate SESSION --top K`: runs the session's top K configurations again on the real
// MPI backend (tuner/tune_validate.hpp) and prints predicted (the sim trial's) vs measured
// time-to-target and step time per configuration, and whether the top two keep their order;
// `--list` shows the session's stored validations. `dsgd-tune recommend --validate K` calls
// tune_validate_print_run after its search. The last line is `tune_validation_id=<id>`.
#include "tuner/tune_validate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "cli/child_run_printer.hpp"
#include "cli/tune_commands.hpp"
#include "core/errors.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct ValidateOptions {
  int64_t session = 0;
  int64_t top = 2;
  std::string db = "./dsgd.db";
  bool list = false;
};

std::string seconds_cell(const std::optional<double>& s) {
  return s ? fmt::format("{:.4g} s", *s) : std::string("not reached");
}

std::string error_cell(double predicted, double measured) {
  if (!(measured > 0) || !std::isfinite(predicted)) return "-";
  return fmt::format("{:+.1f}%", 100.0 * (predicted - measured) / measured);
}

int run_validate(const ValidateOptions& o) {
  if (o.list) {
    const Store store = Store::open_readonly(o.db);
    const auto all = tune_validations_get(store, o.session);
    if (all.empty()) fmt::print("no validations of session {} in {}\n", o.session, o.db);
    for (const TopValidation& v : all) tune_validation_print(v);
    return 0;
  }
  Store store = Store::open(o.db);
  return tune_validate_print_run(store, o.session, o.top, "--top");
}

}  // namespace

void tune_validation_print(const TopValidation& v) {
  fmt::print("validation {} of session {}  {}  host {}\n", v.id, v.session_id, v.created_at, v.host);
  fmt::print("{:>4}  {:<30} {:>14} {:>14} {:>8}   {:>11} {:>11} {:>8}   {:>7} {:>7}\n", "rank", "configuration",
             "predicted TTT", "measured TTT", "error", "pred.step", "meas.step", "error", "sim run", "mpi run");
  for (const TopValidationRow& r : v.rows) {
    const std::string ttt_error =
        r.predicted_time_s && r.measured_time_s ? error_cell(*r.predicted_time_s, *r.measured_time_s) : "-";
    fmt::print("{:>4}  {:<30} {:>14} {:>14} {:>8}   {:>8.3f} ms {:>8.3f} ms {:>8}   {:>7} {:>7}\n", r.rank,
               r.config_key, seconds_cell(r.predicted_time_s), seconds_cell(r.measured_time_s), ttt_error,
               r.predicted_step_s * 1e3, r.measured_step_s * 1e3, error_cell(r.predicted_step_s, r.measured_step_s),
               r.sim_run_id, r.mpi_run_id);
  }
  fmt::print(
      "(TTT: time-to-target, training time at the first evaluation at or past the target; error: "
      "(predicted - measured) / measured)\n");
  if (v.rows.size() >= 2) {
    const char* verdict =
        v.ranking_agrees ? (*v.ranking_agrees ? "agrees (the recommended configuration is also the faster one measured)"
                                              : "DISAGREES (the runner-up reached the target sooner on MPI)")
        : tune_validate_predicted_tie(v.rows) ? "undecided (the simulator predicts the same time for both)"
                                              : "undecided (neither reached the target on MPI)";
    fmt::print("ranking of the top two: {}\n", verdict);
  }
}

int tune_validate_print_run(Store& store, int64_t session, int64_t top_k, const char* flag) {
  const TopValidationPlan plan = tune_validate_plan(store, session, top_k, flag);
  if (!plan.warning.empty()) fmt::print(stderr, "dsgd-tune: warning: {}\n", plan.warning);
  fmt::print("\ndsgd-tune validate: the top {} of session {} on the real backend (mpi, {} ranks)\n", plan.top_k,
             session, plan.runs.front().workers);
  std::fflush(stdout);
  ChildRunPrinter printer("validate", false);
  const TopValidation v = tune_validate_run(plan, store, printer);
  printer.done();
  fmt::print("\n");
  tune_validation_print(v);
  fmt::print("tune_validation_id={}\n", v.id);
  return 0;
}

void setup_tune_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Run a session's top K configurations on the real MPI backend: predicted vs measured");
  sub->add_option("session", o->session, "session id (dsgd-tune sessions)")->required();
  sub->add_option("--top", o->top, "how many of the ranking to run (1: the recommendation)")->capture_default_str();
  sub->add_option("--db", o->db, "SQLite results database")->capture_default_str();
  sub->add_flag("--list", o->list, "show the session's stored validations instead of running one");
  sub->footer(
      "Each configuration runs as `dsgd-bench run --backend mpi` on the session's workers, emulated link and\n"
      "stragglers, with the seed of its sim trial. Example:\n"
      "  dsgd-tune validate 3 --top 2\n");
  sub->callback([o]() { tune_exit_code() = run_validate(*o); });
}

}  // namespace dsgd
