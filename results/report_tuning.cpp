// See report_tuning.hpp.
#include "results/report_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/errors.hpp"
#include "results/html_report.hpp"
#include "results/sqlite.hpp"
#include "results/tune_store.hpp"

namespace dsgd {

namespace {

constexpr size_t kMaxSessions = 20;     // sections in one HTML report
constexpr size_t kMaxTableRows = 2000;  // trials listed per session in HTML (every one in csv/json)

nlohmann::json parse_object(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

double finite_or_zero(double v) {
  return std::isfinite(v) ? v : 0.0;
}

TuningSession session_read(const Store& store, int64_t id) {
  const TuneSessionRow row = tune_session_get(store, id);
  TuningSession s;
  s.id = id;
  s.created_at = row.created_at;
  s.status = row.status;
  s.target = row.target;
  const nlohmann::json spec = parse_object(row.spec_json);
  const nlohmann::json result = parse_object(row.result_json);
  s.kind = row.kind;
  // As stored by tune_plan's parse (sim or mpi); anything else reads as sim, as it always has.
  const std::string backend = spec.value("base", nlohmann::json::object()).value("backend", std::string("sim"));
  s.backend = trial_backend_find(backend).value_or(TrialBackend::trial_sim);
  s.budget_s = spec.value("budget-s", 0.0);
  s.verdict = result.value("verdict", std::string());
  s.command = result.value("command", std::string());
  s.wall_s = result.value("wall_s", 0.0);

  double cost = 0;
  std::optional<double> best;
  for (const TrialRow& r : tune_trials_get(store, id)) {
    TuningTrial t;
    t.id = r.id;
    t.phase = r.phase;
    t.config_key = r.config_key;
    t.algo = parse_object(r.config_json).value("algo", std::string());
    t.seed = static_cast<int64_t>(r.seed);
    t.budget_s = finite_or_zero(r.budget_s);
    t.run_id = r.run_id;
    t.status = r.status;
    t.stop_reason = r.stop_reason;
    t.stop_kind = r.stop_kind;
    t.reached = r.reached;
    t.time_s = finite_or_zero(r.time_s);
    t.steps = r.steps;
    t.step_s = finite_or_zero(r.step_s);
    t.compute_s = finite_or_zero(r.compute_s);
    t.comm_s = finite_or_zero(r.comm_s);
    t.wait_s = finite_or_zero(r.wait_s);
    t.bytes_per_step = finite_or_zero(r.bytes_per_step);
    t.wall_s = finite_or_zero(r.wall_s);
    t.cost_s = t.time_s;  // tuner/evaluator.hpp trial_cost_s
    cost += t.cost_s;
    t.cumulative_cost_s = cost;
    if (t.reached && t.status == TrialStatus::trial_completed && (!best || t.time_s < *best)) best = t.time_s;
    t.best_so_far_s = best;
    s.trials.push_back(std::move(t));
  }
  s.validations = tune_validations_get(store, id);
  return s;
}

std::string esc(const std::string& text) {
  return html_escape(text);
}

std::string num(double v) {
  return std::isfinite(v) ? fmt::format("{:.4g}", v) : std::string();
}

// x ascending (the chart's downsampler walks the points in x order).
void sort_by_x(HtmlSeries& s) {
  std::vector<size_t> order(s.x.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
  std::vector<double> x, y;
  for (size_t i : order) {
    x.push_back(s.x[i]);
    y.push_back(s.y[i]);
  }
  s.x = std::move(x);
  s.y = std::move(y);
}

// The section's heading, its summary line, the verdict and the winner's command.
std::string session_header_html(const TuningSession& s, const std::string& id, bool mpi) {
  size_t reached = 0;
  for (const TuningTrial& t : s.trials) reached += t.reached ? 1 : 0;
  const double cost = s.trials.empty() ? 0 : s.trials.back().cumulative_cost_s;
  std::string out;
  out += fmt::format("<section id=\"{}\"><h2>Tuning session {} ({}, {})</h2>", id, s.id, esc(s.kind),
                     mpi ? "trials on MPI ranks, wall-clock training time" : "trials on the simulator, virtual time");
  out += fmt::format(
      "<p class=\"note\">target {} &middot; status {} &middot; {} trials stored, {} reached the target &middot; "
      "evaluation time spent {} s{}{}</p>",
      esc(s.target), esc(tune_session_status_text(s.status)), s.trials.size(), reached, num(cost),
      s.budget_s > 0 ? fmt::format(" of a {} s budget", num(s.budget_s)) : std::string(),
      s.wall_s > 0 ? fmt::format(" &middot; {} s real", num(s.wall_s)) : std::string());
  if (!s.verdict.empty()) out += fmt::format("<p>{}</p>", esc(s.verdict));
  if (!s.command.empty()) out += fmt::format("<p><code>{}</code></p>", esc(s.command));
  return out;
}

// The best so far: a staircase over the cumulative cost (it only drops when a trial improves
// it), and every reached trial as a point at the cost spent when it ended.
HtmlChart best_so_far_chart(const TuningSession& s, const std::string& id, bool mpi) {
  const double cost = s.trials.empty() ? 0 : s.trials.back().cumulative_cost_s;
  HtmlChart best{id + "-best",
                 "Best time-to-target so far against evaluation time spent",
                 mpi ? "evaluation time spent (s, wall-clock training)" : "evaluation time spent (s, virtual)",
                 "time-to-target (s)",
                 {},
                 true,
                 false};
  HtmlSeries curve{"best", "best so far", 0, true, {}, {}};
  HtmlSeries each{"reached", "a trial that reached the target", 1, false, {}, {}};
  std::optional<double> last;
  for (const TuningTrial& t : s.trials) {
    if (t.best_so_far_s) {
      if (last && *last != *t.best_so_far_s) {  // the step down happens at this trial's cost
        curve.x.push_back(t.cumulative_cost_s);
        curve.y.push_back(*last);
      }
      if (!last || *last != *t.best_so_far_s) {
        curve.x.push_back(t.cumulative_cost_s);
        curve.y.push_back(*t.best_so_far_s);
      }
      last = t.best_so_far_s;
    }
    if (t.reached) {
      each.x.push_back(t.cumulative_cost_s);
      each.y.push_back(t.time_s);
    }
  }
  if (last && !s.trials.empty() && (curve.x.empty() || curve.x.back() < cost)) {
    curve.x.push_back(cost);
    curve.y.push_back(*last);
  }
  best.series = {curve, each};
  return best;
}

// Every trial: step time against steps to the target, one color per algorithm; censored
// trials (steps at the stop, a lower bound) apart.
HtmlChart trials_scatter_chart(const TuningSession& s, const std::string& id) {
  HtmlChart scatter{id + "-scatter",
                    "Trials: step time against steps to the target",
                    "steps to the target (censored: steps at the stop)",
                    "step time (ms)",
                    {},
                    true,
                    false};
  std::map<std::string, size_t> algo_series;
  HtmlSeries censored{"censored", "not reached (a lower bound on the steps)", 9, false, {}, {}};
  for (const TuningTrial& t : s.trials) {
    if (!(t.step_s > 0) || t.status != TrialStatus::trial_completed) continue;
    HtmlSeries* target = &censored;
    if (t.reached) {
      auto [it, added] = algo_series.emplace(t.algo, scatter.series.size());
      if (added)
        scatter.series.push_back(HtmlSeries{t.algo, t.algo + " (reached)", scatter.series.size(), false, {}, {}});
      target = &scatter.series[it->second];
    }
    target->x.push_back(static_cast<double>(t.steps));
    target->y.push_back(t.step_s * 1e3);
  }
  scatter.series.push_back(censored);
  for (HtmlSeries& series : scatter.series) sort_by_x(series);
  return scatter;
}

// The race: time-to-target per seed of each raced configuration — per seed its trial at the
// largest budget it ran (a trial that reached the target at a lower rung answered the race's
// budget for that seed and is not stored again). No series when the session had no race.
HtmlChart race_chart(const TuningSession& s, const std::string& id) {
  double top = 0;
  for (const TuningTrial& t : s.trials) top = std::max(top, t.budget_s);
  std::vector<std::string> order;
  std::map<std::string, std::map<int64_t, const TuningTrial*>> per_seed;  // config -> seed -> trial
  for (const TuningTrial& t : s.trials)
    if (t.phase == "race" && !per_seed.count(t.config_key)) {
      order.push_back(t.config_key);
      per_seed[t.config_key];
    }
  for (const TuningTrial& t : s.trials) {
    auto it = per_seed.find(t.config_key);
    if (it == per_seed.end() || t.status != TrialStatus::trial_completed) continue;
    const TuningTrial*& slot = it->second[t.seed];
    if (!slot || t.budget_s >= slot->budget_s) slot = &t;
  }
  HtmlChart race{
      id + "-race", fmt::format("The race: time-to-target per seed at the full trial budget ({} s)", num(top)),
      "seed",       "time-to-target (s)",
      {},           true,
      false};
  race.x_integer = true;
  for (const std::string& key : order) {
    const auto& seeds = per_seed[key];
    size_t hit = 0;
    HtmlSeries series{fmt::format("c{}", race.series.size()), "", race.series.size(), false, {}, {}};
    for (const auto& [seed, t] : seeds)
      if (t->reached) {
        series.x.push_back(static_cast<double>(seed));
        series.y.push_back(t->time_s);
        ++hit;
      }
    series.label = fmt::format("{} ({} of {} seeds reached)", key, hit, seeds.size());
    race.series.push_back(std::move(series));
  }
  return race;
}

// The session's validations on the real backend, one row per validated configuration (empty
// when it has none).
std::string validations_html(const TuningSession& s) {
  if (s.validations.empty()) return "";
  std::string out = "<h3>Validations on the real backend (predicted by the session's trial, measured on MPI)</h3>";
  out +=
      "<div class=\"scroll\"><table><thead><tr><th>validation</th><th>rank</th><th>configuration</th>"
      "<th>predicted time-to-target (s)</th><th>measured (s)</th><th>predicted step (ms)</th>"
      "<th>measured step (ms)</th><th>sim run</th><th>MPI run</th></tr></thead><tbody>";
  for (const TopValidation& validation : s.validations)
    for (const TopValidationRow& v : validation.rows)
      out += fmt::format(
          "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td></tr>",
          validation.id, v.rank, esc(v.config_key), v.predicted_time_s ? num(*v.predicted_time_s) : "not reached",
          v.measured_time_s ? num(*v.measured_time_s) : "not reached", num(v.predicted_step_s * 1e3),
          num(v.measured_step_s * 1e3), v.sim_run_id, v.mpi_run_id);
  out += "</tbody></table></div>";
  return out;
}

// Every trial in the order the tuner ran it (the first kMaxTableRows; the rest named by count).
std::string trials_table_html(const TuningSession& s) {
  std::string out = fmt::format("<h3>Trials ({}, in the order the tuner ran them)</h3>", s.trials.size());
  out +=
      "<div class=\"scroll\"><table><thead><tr><th>trial</th><th>phase</th><th>configuration</th><th>seed</th>"
      "<th>budget (s)</th><th>outcome</th><th>time (s)</th><th>steps</th><th>step (ms)</th><th>cost so far (s)</th>"
      "<th>best so far (s)</th><th>run</th></tr></thead><tbody>";
  for (size_t i = 0; i < s.trials.size() && i < kMaxTableRows; ++i) {
    const TuningTrial& t = s.trials[i];
    const std::string outcome = t.status != TrialStatus::trial_completed ? "failed"
                                : t.reached                              ? "reached"
                                : t.stop_kind == StopKind::stop_diverged ? "diverged"
                                                                         : "not reached";
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td title=\"{}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        t.id, esc(t.phase), esc(t.config_key), t.seed, num(t.budget_s), esc(t.stop_reason), outcome, num(t.time_s),
        t.steps, t.step_s > 0 ? num(t.step_s * 1e3) : "", num(t.cumulative_cost_s),
        t.best_so_far_s ? num(*t.best_so_far_s) : "", t.run_id > 0 ? std::to_string(t.run_id) : "");
  }
  out += "</tbody></table></div>";
  if (s.trials.size() > kMaxTableRows)
    out += fmt::format("<p class=\"note\">{} more trials: dsgd-bench report --session {} --format csv</p>",
                       s.trials.size() - kMaxTableRows, s.id);
  return out;
}

std::string session_html(const TuningSession& s, const HtmlReportOptions& options) {
  const std::string id = fmt::format("tune-{}", s.id);
  const bool mpi = s.backend == TrialBackend::trial_mpi;
  std::string out = session_header_html(s, id, mpi);
  const HtmlChart race = race_chart(s, id);
  out += "<div class=\"grid\">";
  out += html_chart(best_so_far_chart(s, id, mpi), options);
  out += html_chart(trials_scatter_chart(s, id), options);
  if (!race.series.empty()) out += html_chart(race, options);
  out += "</div>";
  out += fmt::format(
      "<p class=\"note\">A trial costs its time-to-target when it reached the target, else its elapsed time: the "
      "evaluation time the tuner charged to its budget. Successive halving compares trials at equal {} time, not "
      "equal steps; the recommendation is the best median over the race's seeds.</p>",
      mpi ? "wall-clock" : "virtual");
  out += validations_html(s);
  out += trials_table_html(s);
  out += "</section>";
  return out;
}

}  // namespace

TuningReport report_tuning_load(const Store& store, const std::vector<int64_t>& run_ids) {
  TuningReport report;
  if (run_ids.empty() || !tune_tables_exist(store)) return report;
  std::map<int64_t, std::set<int64_t>> sessions_of_run;
  SqlStatement pairs(store.handle(), "SELECT run_id, session_id FROM trials WHERE run_id IS NOT NULL");
  while (pairs.step()) sessions_of_run[pairs.column_int64(0)].insert(pairs.column_int64(1));
  std::set<int64_t> sessions;
  for (int64_t id : run_ids)
    if (auto it = sessions_of_run.find(id); it != sessions_of_run.end())
      sessions.insert(it->second.begin(), it->second.end());
  for (int64_t s : sessions) report.sessions.push_back(session_read(store, s));
  return report;
}

TuningReport report_tuning_load_session(const Store& store, int64_t session_id) {
  if (!tune_tables_exist(store))
    DSGD_THROW(InputError, "tune first: dsgd-tune recommend ... --db " + store.path(),
               "{} has no tuning sessions (no dsgd-tune session has used it)", store.path());
  TuningReport report;
  report.sessions.push_back(session_read(store, session_id));
  return report;
}

std::vector<int64_t> report_tuning_run_ids(const TuningReport& report) {
  std::set<int64_t> ids;
  for (const TuningSession& s : report.sessions)
    for (const TuningTrial& t : s.trials)
      if (t.run_id > 0) ids.insert(t.run_id);
  return {ids.begin(), ids.end()};
}

ReportTable report_trials_table(const TuningReport& report) {
  using T = ReportType;
  ReportTable table;
  table.name = "trials";
  table.columns = {
      {"session_id", "", T::report_integer, "the tuning session (dsgd-tune sessions)"},
      {"trial_id", "", T::report_integer, "the trial's row id; trials are listed in the order the tuner ran them"},
      {"phase", "", T::report_text, "rung K, rung 0 ei (proposed by the GP), race, grid seed K"},
      {"config", "", T::report_text, "the configuration (algorithm and knobs)"},
      {"algo", "", T::report_text, "its algorithm"},
      {"seed", "", T::report_integer, "the trial's seed"},
      {"budget_s", "s", T::report_real, "the trial's budget of evaluation time"},
      {"run_id", "", T::report_integer, "its stored run (null: none)"},
      {"status", "", T::report_text, "completed, or failed (the configuration could not run)"},
      {"stop_reason", "", T::report_text, "why it stopped: target, budget, diverged, end-of-steps, error"},
      {"reached", "1", T::report_integer, "1 when it reached the target"},
      {"time_to_target_s", "s", T::report_real, "time-to-target; null when not reached"},
      {"elapsed_s", "s", T::report_real, "time at the stop: time-to-target when reached, else a lower bound of it"},
      {"steps", "", T::report_integer, "steps at the target, or at the stop"},
      {"step_time_s", "s", T::report_real, "mean step time of its run (null: stopped before its first timed step)"},
      {"compute_s", "s", T::report_real, "compute per step"},
      {"comm_s", "s", T::report_real, "communication per step"},
      {"wait_s", "s", T::report_real, "waiting for peers per step"},
      {"bytes_per_step", "bytes", T::report_real, "bytes one worker sent per step"},
      {"wall_s", "s", T::report_real, "real seconds the trial took"},
      {"cost_s", "s", T::report_real, "evaluation time charged to the budget: elapsed_s"},
      {"cumulative_cost_s", "s", T::report_real, "cost of this and every earlier trial of the session"},
      {"best_so_far_s", "s", T::report_real, "best time-to-target of this and earlier trials (null: none yet)"},
  };
  for (const TuningSession& s : report.sessions)
    for (const TuningTrial& t : s.trials) {
      std::vector<ReportValue> row;
      row.emplace_back(s.id);
      row.emplace_back(t.id);
      row.emplace_back(t.phase);
      row.emplace_back(t.config_key);
      row.emplace_back(t.algo);
      row.emplace_back(t.seed);
      row.emplace_back(t.budget_s);
      row.push_back(t.run_id > 0 ? ReportValue(t.run_id) : ReportValue());
      row.emplace_back(std::string(trial_status_text(t.status)));
      row.emplace_back(t.stop_reason);
      row.emplace_back(int64_t{t.reached ? 1 : 0});
      row.push_back(t.reached ? ReportValue(t.time_s) : ReportValue());
      row.emplace_back(t.time_s);
      row.emplace_back(t.steps);
      const bool timed = t.step_s > 0;  // else stopped before its first timed step: no breakdown
      row.push_back(timed ? ReportValue(t.step_s) : ReportValue());
      row.push_back(timed ? ReportValue(t.compute_s) : ReportValue());
      row.push_back(timed ? ReportValue(t.comm_s) : ReportValue());
      row.push_back(timed ? ReportValue(t.wait_s) : ReportValue());
      row.emplace_back(t.bytes_per_step);
      row.emplace_back(t.wall_s);
      row.emplace_back(t.cost_s);
      row.emplace_back(t.cumulative_cost_s);
      row.push_back(t.best_so_far_s ? ReportValue(*t.best_so_far_s) : ReportValue());
      table.rows.push_back(std::move(row));
    }
  return table;
}

std::string report_tuning_html(const TuningReport& report, const HtmlReportOptions& options) {
  std::string out;
  for (size_t i = 0; i < report.sessions.size() && i < kMaxSessions; ++i)
    out += session_html(report.sessions[i], options);
  if (report.sessions.size() > kMaxSessions)
    out += fmt::format(
        "<p class=\"note\">{} more tuning sessions: select fewer runs, or dsgd-bench report --session S</p>",
        report.sessions.size() - kMaxSessions);
  return out;
}

}  // namespace dsgd
