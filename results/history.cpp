// See history.hpp.
#include "results/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "results/compare_runs.hpp"
#include "results/git_order.hpp"
#include "results/history_import.hpp"

namespace dsgd {

namespace {

// The points to print: the last `last` (0: all).
size_t first_shown(const HistorySeries& s, size_t last) {
  return last == 0 || last >= s.points.size() ? 0 : s.points.size() - last;
}

bool metric_bigger_is_better(const std::string& metric) {
  for (const CompareMetric& m : compare_metrics())
    if (m.name == metric) return m.bigger_is_better;
  return false;
}

const ChangePoint* change_at(const HistorySeries& s, size_t index) {
  for (const ChangePoint& c : s.changes)
    if (c.index == index) return &c;
  return nullptr;
}

}  // namespace

std::string history_short_commit(const std::string& commit) {
  if (commit.empty()) return "(none)";
  const bool dirty = commit.size() > 6 && commit.substr(commit.size() - 6) == "-dirty";
  const std::string hash = dirty ? commit.substr(0, commit.size() - 6) : commit;
  return hash.substr(0, 12) + (dirty ? "-dirty" : "");
}

std::string history_change_text(const ChangePoint& c) {
  return fmt::format("change {:+.1f} % (p = {:.2g}){}", 100 * c.relative_change, c.pvalue,
                     c.confirmed ? "" : ", unconfirmed: too few commits after it");
}

std::string history_parameters_text(const HistoryOptions& o) {
  return fmt::format(
      "E-Divisive means + Student's t: window {}, max p-value {:g} (first pass {:g}), min magnitude {:g}, "
      "min segment {}, autocorrelation {}, {}",
      o.detect.window, o.detect.max_pvalue, change_points_first_pass_pvalue(o.detect.max_pvalue),
      o.detect.min_magnitude, o.detect.min_segment, o.detect.autocorrelation ? "allowed for" : "ignored",
      o.detect.log_when_positive ? "log scale" : "linear scale");
}

bool history_run_loaded(const RunWithSummary& r) {
  if (!r.summary) return false;
  return (r.summary->host_load && *r.summary->host_load > kBusyLoad) ||
         (r.summary->cpu_steal && *r.summary->cpu_steal > kBusySteal);
}

std::string history_machine(const RunRecord& run) {
  return fmt::format("{} | {} | {} | {}", run.host, run.cpu_model, run.mpi_version, run.build_type);
}

std::vector<HistorySeries> history_build(const std::vector<RunWithSummary>& runs, const HistoryOptions& options) {
  const std::string metric = compare_metric_resolve(options.metric, "--metric");
  // Runs in stored order (ids ascend with storage).
  std::vector<const RunWithSummary*> sorted;
  for (const RunWithSummary& r : runs) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->run.id < b->run.id; });

  struct Building {
    HistorySeries series;
    std::map<std::string, size_t> point_of;  // commit -> index in points
    std::vector<std::vector<double>> values;
  };
  std::map<std::string, Building> by_key;
  std::vector<std::string> order;  // series keys in the order their first run was stored
  for (const RunWithSummary* r : sorted) {
    const std::optional<double> v = compare_metric_value(*r, metric);
    if (!v) continue;
    const std::string machine = history_machine(r->run);
    const std::string key = compare_group_key(r->run, true) + "\n" + machine;
    auto [it, fresh] = by_key.try_emplace(key);
    Building& b = it->second;
    if (fresh) {
      b.series.label = compare_group_label(r->run);
      b.series.machine = machine;
      b.series.metric = metric;
      b.series.bigger_is_better = metric_bigger_is_better(metric);
      order.push_back(key);
    }
    auto [pit, new_point] = b.point_of.try_emplace(r->run.git_commit, b.series.points.size());
    if (new_point) {
      HistoryPoint p;
      p.commit = r->run.git_commit;
      p.date = r->run.created_at;
      b.series.points.push_back(p);
      b.values.emplace_back();
    }
    b.series.points[pit->second].run_ids.push_back(r->run.id);
    b.series.points[pit->second].loaded += history_run_loaded(*r) ? 1 : 0;
    b.values[pit->second].push_back(*v);
  }

  std::vector<HistorySeries> out;
  for (const std::string& key : order) {
    Building& b = by_key.at(key);
    HistorySeries& s = b.series;
    if (history_series_finish(s, std::move(b.values), options)) out.push_back(std::move(s));
  }
  return out;
}

bool history_series_finish(HistorySeries& s, std::vector<std::vector<double>> values, const HistoryOptions& options) {
  if (!options.case_filter.empty() && s.label.find(options.case_filter) == std::string::npos) return false;
  if (!options.machine_filter.empty() && s.machine.find(options.machine_filter) == std::string::npos) return false;
  for (size_t i = 0; i < s.points.size(); ++i) history_point_set_values(s.points[i], std::move(values[i]));
  history_detect(s, options.detect);
  return true;
}

void history_point_set_values(HistoryPoint& p, std::vector<double> values) {
  p.count = values.size();
  p.median = stats_median(values);
  p.q25 = stats_quantile(values, 0.25);
  p.q75 = stats_quantile(values, 0.75);
  p.values = std::move(values);
}

namespace {

// Reorders s's points along the line; the points off it leave the series (counted).
void order_along(HistorySeries& s, const GitLine& line, const std::string& ref) {
  std::vector<std::pair<double, HistoryPoint>> on;
  for (HistoryPoint& p : s.points)
    if (const std::optional<double> at = line.position(p.commit)) on.emplace_back(*at, std::move(p));
  s.off_line = s.points.size() - on.size();
  std::stable_sort(on.begin(), on.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  s.points.clear();
  for (auto& [at, p] : on) s.points.push_back(std::move(p));
  s.order = "git " + ref + " first-parent";
}

}  // namespace

std::vector<HistorySeries> history_load(const Store& store, const HistoryOptions& options) {
  if (options.order != "auto" && options.order != "git" && options.order != "stored")
    DSGD_THROW(InputError, "pass --order auto, git or stored", "unknown history order '{}'", options.order);
  std::vector<HistorySeries> series = options.metric == kImportedMetric ? history_imported_series(store, options)
                                                                        : history_build(store.runs_list(0), options);
  if (options.order == "stored") return series;
  std::string why;
  const std::optional<GitLine> line = GitLine::read(options.git_dir, options.git_ref, &why);
  if (!line) {
    if (options.order == "git")
      DSGD_THROW(InputError, "run it inside the repository (or pass --git-dir DIR), or pass --order stored",
                 "--order git: {}", why);
    return series;
  }
  for (HistorySeries& s : series) {
    const bool any_on_line = std::any_of(s.points.begin(), s.points.end(),
                                         [&](const HistoryPoint& p) { return line->position(p.commit).has_value(); });
    if (options.order == "auto" && !any_on_line) continue;
    order_along(s, *line, options.git_ref);
    history_detect(s, options.detect);
  }
  return series;
}

void history_detect(HistorySeries& s, const ChangePointOptions& options) {
  std::vector<double> medians;
  for (const HistoryPoint& p : s.points) medians.push_back(p.median);
  // Relative changes matter, so the detector sees log values; a metric that can be 0 or
  // negative (a change of accuracy points) is taken as it is.
  s.log_scale =
      options.log_when_positive && std::all_of(medians.begin(), medians.end(), [](double m) { return m > 0; });
  if (s.log_scale)
    for (double& m : medians) m = std::log(m);
  ChangePointOptions detect = options;
  detect.log_values = s.log_scale;
  s.changes = change_points_detect(medians, detect);
}

std::string history_table(const std::vector<HistorySeries>& series, const HistoryOptions& options, size_t last) {
  std::string out;
  for (const HistorySeries& s : series) {
    out +=
        fmt::format("{}  [{}{}]\n  machine: {}\n", s.label, s.metric, s.unit.empty() ? "" : ", " + s.unit, s.machine);
    out += fmt::format("  order: {}{}\n", s.order == "stored" ? "as stored" : s.order,
                       s.off_line ? fmt::format("; {} commit(s) off the line left out", s.off_line) : "");
    const size_t from = first_shown(s, last);
    if (from > 0) {
      out += fmt::format("  ... {} earlier commit(s) not shown (--last)\n", from);
      for (const ChangePoint& c : s.changes)
        if (c.index < from)
          out += fmt::format("  (earlier: at {}, {})\n", history_short_commit(s.points[c.index].commit),
                             history_change_text(c));
    }
    out += fmt::format("  {:<18} {:<20} {:>4} {:>12} {:>25}\n", "commit", s.unit.empty() ? "first run" : "date", "n",
                       "median", "IQR");
    for (size_t i = from; i < s.points.size(); ++i) {
      const HistoryPoint& p = s.points[i];
      std::string line =
          fmt::format("  {:<18} {:<20} {:>4} {:>12.5g} {:>12.5g} - {:<10.5g}", history_short_commit(p.commit),
                      p.date.substr(0, 19), p.count, p.median, p.q25, p.q75);
      if (p.loaded) line += fmt::format("  [{} of {} on a busy host]", p.loaded, p.count);
      if (const ChangePoint* c = change_at(s, i)) line += "  <- " + history_change_text(*c);
      out += line + "\n";
    }
    if (s.changes.empty()) out += fmt::format("  no change point in {} commit(s)\n", s.points.size());
    out += "\n";
  }
  if (series.empty())
    out += options.metric == kImportedMetric
               ? "no series: nothing imported (dsgd-bench track import FILE) matches the filters\n"
               : "no series: no completed run with that metric (and filters) in the database\n";
  out += fmt::format("change points: {}\n", history_parameters_text(options));
  return out;
}

std::string history_csv(const std::vector<HistorySeries>& series, size_t last) {
  std::string out = "series,machine,metric,commit,date,n,median,q25,q75,change_pct,change_pvalue,change_confirmed\n";
  auto quote = [](const std::string& text) {
    std::string q = "\"";
    for (char ch : text) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const HistorySeries& s : series)
    for (size_t i = first_shown(s, last); i < s.points.size(); ++i) {
      const HistoryPoint& p = s.points[i];
      const ChangePoint* c = change_at(s, i);
      out += fmt::format("{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{},{},{}\n", quote(s.label), quote(s.machine),
                         s.metric, p.commit, p.date, p.count, p.median, p.q25, p.q75,
                         c ? fmt::format("{:.4f}", 100 * c->relative_change) : "",
                         c ? fmt::format("{:.3g}", c->pvalue) : "", c ? (c->confirmed ? "true" : "false") : "");
    }
  return out;
}

nlohmann::json history_json(const std::vector<HistorySeries>& series, const HistoryOptions& options, size_t last) {
  nlohmann::json all = nlohmann::json::array();
  for (const HistorySeries& s : series) {
    nlohmann::json points = nlohmann::json::array(), changes = nlohmann::json::array();
    for (size_t i = first_shown(s, last); i < s.points.size(); ++i) {
      const HistoryPoint& p = s.points[i];
      points.push_back({{"commit", p.commit},
                        {"date", p.date},
                        {"runs", p.run_ids},
                        {"n", p.count},
                        {"busy_host_runs", p.loaded},
                        {"median", p.median},
                        {"q25", p.q25},
                        {"q75", p.q75}});
    }
    for (const ChangePoint& c : s.changes)
      changes.push_back({{"commit", s.points[c.index].commit},
                         {"index", c.index},
                         {"relative_change", c.relative_change},
                         {"pvalue", c.pvalue},
                         {"confirmed", c.confirmed},
                         {"n_before", c.n_before},
                         {"n_after", c.n_after}});
    all.push_back({{"series", s.label},
                   {"machine", s.machine},
                   {"metric", s.metric},
                   {"log_scale", s.log_scale},
                   {"bigger_is_better", s.bigger_is_better},
                   {"unit", s.unit},
                   {"order", s.order},
                   {"off_line", s.off_line},
                   {"points", points},
                   {"change_points", changes}});
  }
  return {{"series", all},
          {"parameters",
           {{"method", "e-divisive-means+student-t"},
            {"window", options.detect.window},
            {"max_pvalue", options.detect.max_pvalue},
            {"min_magnitude", options.detect.min_magnitude},
            {"min_segment", options.detect.min_segment},
            {"autocorrelation", options.detect.autocorrelation}}}};
}

}  // namespace dsgd
