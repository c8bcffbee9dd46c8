// `dsgd-tune sessions` (the stored sessions, newest first) and `dsgd-tune show SESSION` (every
// trial: phase, configuration, seed, budget (fidelity), outcome, stop reason, linked run).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/tune_commands.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"
#include "tuner/tune_validate.hpp"

namespace dsgd {

namespace {

struct SessionsOptions {
  std::string db = "./dsgd.db";
  std::string format = "table";
  int64_t session = 0;
};

std::string verdict_of(const TuneSessionRow& s) {
  if (s.result_json.empty()) return s.error.empty() ? "-" : "error: " + s.error;
  const auto j = nlohmann::json::parse(s.result_json, nullptr, false);
  return j.is_object() ? j.value("verdict", "-") : "-";
}

int run_sessions(const SessionsOptions& o) {
  Store store = Store::open_readonly(o.db);
  const auto sessions = tune_sessions_list(store);
  fmt::print("{:>4}  {:<9} {:<20} {:<11} {:<12} {:>6}  {}\n", "id", "kind", "created", "status", "target", "trials",
             "result");
  for (const TuneSessionRow& s : sessions)
    fmt::print("{:>4}  {:<9} {:<20} {:<11} {:<12} {:>6}  {}\n", s.id, s.kind, s.created_at.substr(0, 19),
               tune_session_status_text(s.status), s.target, tune_session_trial_count(store, s.id), verdict_of(s));
  return 0;
}

int run_show(const SessionsOptions& o) {
  Store store = Store::open_readonly(o.db);
  const TuneSessionRow s = tune_session_get(store, o.session);
  const auto trials = tune_trials_get(store, o.session);
  if (o.format == "json") {
    nlohmann::json t = nlohmann::json::array();
    for (const TrialRow& r : trials)
      t.push_back({{"id", r.id},
                   {"phase", r.phase},
                   {"config", r.config_key},
                   {"seed", r.seed},
                   {"budget_s", r.budget_s},
                   {"run_id", r.run_id},
                   {"status", trial_status_text(r.status)},
                   {"stop_reason", r.stop_reason},
                   {"reached", r.reached},
                   {"time_s", r.time_s},
                   {"progress", r.progress},
                   {"steps", r.steps},
                   {"step_s", r.step_s},
                   {"wall_s", r.wall_s}});
    nlohmann::json j = {{"session", s.id},
                        {"kind", s.kind},
                        {"status", tune_session_status_text(s.status)},
                        {"target", s.target},
                        {"created_at", s.created_at},
                        {"spec", nlohmann::json::parse(s.spec_json)},
                        {"trials", t}};
    if (!s.result_json.empty()) j["result"] = nlohmann::json::parse(s.result_json);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("session {} ({}): {}, target {}, created {}{}\n", s.id, s.kind, tune_session_status_text(s.status),
             s.target, s.created_at, s.finished_at.empty() ? "" : ", finished " + s.finished_at);
  fmt::print("{}\n\n", verdict_of(s));
  fmt::print("{:>5} {:<7} {:<30} {:>5} {:>10} {:<10} {:>7} {:>12} {:>7} {:>8} {:>7}  {}\n", "trial", "phase",
             "configuration", "seed", "fidelity", "status", "reached", "time(s)", "steps", "run", "wall(s)",
             "stop reason");
  for (const TrialRow& r : trials)
    fmt::print("{:>5} {:<7} {:<30} {:>5} {:>8.4g} s {:<10} {:>7} {:>12.4g} {:>7} {:>8} {:>7.2f}  {}\n", r.id, r.phase,
               r.config_key, r.seed, r.budget_s, trial_status_text(r.status), r.reached ? "yes" : "no", r.time_s,
               r.steps, r.run_id > 0 ? std::to_string(r.run_id) : "-", r.wall_s, r.stop_reason);
  for (const TopValidation& v : tune_validations_get(store, s.id)) {  // dsgd-tune validate / recommend --validate
    fmt::print("\n");
    tune_validation_print(v);
  }
  return 0;
}

}  // namespace

void setup_tune_sessions(CLI::App& app) {
  auto o = std::make_shared<SessionsOptions>();
  CLI::App* list = app.add_subcommand("sessions", "List the stored tuning sessions (newest first)");
  list->add_option("--db", o->db, "SQLite results database")->capture_default_str();
  list->callback([o]() { tune_exit_code() = run_sessions(*o); });
  CLI::App* show = app.add_subcommand("show", "One session: every trial with its fidelity, outcome and stop reason");
  show->add_option("session", o->session, "session id (dsgd-tune sessions)")->required();
  show->add_option("--db", o->db, "SQLite results database")->capture_default_str();
  show->add_option("--format", o->format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  show->callback([o]() { tune_exit_code() = run_show(*o); });
}

}  // namespace dsgd
