// Baseline vs candidate comparison (see compare_runs.hpp).
#include "results/compare_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "results/compare_stats.hpp"
#include "results/html_report.hpp"
#include "results/report_printer.hpp"
#include "results/row_fields.hpp"

namespace dsgd {

namespace {

// Configuration keys that define a group besides the run columns (network settings).
constexpr const char* network_keys[] = {"topology",        "bandwidth",     "latency",
                                        "inter-bandwidth", "inter-latency", "overlap"};

// A summary metric's value by column (summary_fields()); none when null or not finite, and a
// throughput of 0 (no timed steps) is none as well.
std::optional<double> metric_value(const Summary& s, const std::string& name) {
  const RowField<Summary>* field = row_field_find(summary_fields(), name);
  const std::optional<double> v = field ? row_field_value(*field, s) : std::nullopt;
  if (!v || !std::isfinite(*v) || (name == "throughput_samples_per_s" && !(*v > 0))) return std::nullopt;
  return v;
}

std::string config_text(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string group_name(const RunRecord& r) {
  std::string name = fmt::format("{}-{}-w{}-b{}", r.workload, r.algorithm, r.workers, r.batch);
  if (r.algorithm != "ssgd") name += fmt::format("-H{}", r.period);
  return name;
}

std::string format_change(const CompareMetricResult& m) {
  if (m.threshold.points) return fmt::format("{:+.2f}pt", m.absolute_change * 100);
  if (std::isinf(m.relative_change)) return m.relative_change > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.2f}%", m.relative_change * 100);
}

std::string format_threshold(const CompareThreshold& t) {
  return t.points ? fmt::format("{:g}pt", t.value * 100) : fmt::format("{:g}%", t.value * 100);
}

std::string format_value(double v) {
  return std::isfinite(v) ? fmt::format("{:.4g}", v) : "-";
}

std::string xml_escape(const std::string& text) {
  return html_escape(text);
}

CompareThreshold parse_threshold_value(const std::string& text, const std::string& whole) {
  std::string t = text;
  bool points = false, percent = false;
  if (t.size() > 2 && t.substr(t.size() - 2) == "pt") {
    points = true;
    t.resize(t.size() - 2);
  } else if (!t.empty() && t.back() == '%') {
    percent = true;
    t.pop_back();
  }
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(t, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != t.size() || !(value >= 0) || (!points && !percent)) {
    DSGD_THROW(InputError,
               "write thresholds as 5% (relative) or 0.5pt (absolute points), e.g. --threshold 5%,final_test_acc=0.5pt",
               "--threshold: bad value '{}' in '{}'", text, whole);
  }
  return CompareThreshold{value / 100.0, points};
}

}  // namespace

std::optional<double> compare_metric_value(const RunWithSummary& r, const std::string& name) {
  if (r.run.status != RunStatus::run_completed || !r.summary) return std::nullopt;
  return metric_value(*r.summary, name);
}

std::string compare_group_label(const RunRecord& r) {
  nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
  if (!config.is_object()) config = nlohmann::json::object();
  std::string label = fmt::format("{} {} w{} b{}", r.workload, r.algorithm, r.workers, r.batch);
  if (r.algorithm != "ssgd") label += fmt::format(" H{}", r.period);
  label += fmt::format(" {}steps", r.steps);
  for (const char* key : network_keys) {
    const std::string value = config_text(config, key);
    if (value.empty() || (std::string(key) == "topology" && value == "complete") ||
        (std::string(key) == "overlap" && value == "false"))
      continue;
    label += fmt::format(" {}={}", key, value);
  }
  label += fmt::format(" ({})", r.dataset);
  return label;
}

std::string compare_metric_resolve(const std::string& name, const std::string& flag) {
  static const std::map<std::string, std::string> aliases = {{"throughput", "throughput_samples_per_s"},
                                                             {"step_time", "step_time_s"},
                                                             {"step", "step_time_s"},
                                                             {"acc", "final_test_acc"},
                                                             {"accuracy", "final_test_acc"},
                                                             {"test_acc", "final_test_acc"},
                                                             {"loss", "final_test_loss"},
                                                             {"test_loss", "final_test_loss"},
                                                             {"time_to_target", "time_to_target_s"},
                                                             {"ttt", "time_to_target_s"},
                                                             {"compute", "compute_s"},
                                                             {"comm", "comm_s"},
                                                             {"wait", "wait_s"},
                                                             {"data", "data_s"},
                                                             {"bytes", "bytes_sent_per_step"}};
  for (const CompareMetric& m : compare_metrics())
    if (m.name == name) return name;
  auto it = aliases.find(name);
  if (it != aliases.end()) return it->second;
  std::string known;
  for (const CompareMetric& m : compare_metrics()) known += (known.empty() ? "" : ", ") + m.name;
  DSGD_THROW(InputError, fmt::format("metrics: {}", known), "{}: unknown metric '{}'", flag, name);
}

const std::vector<CompareMetric>& compare_metrics() {
  static const std::vector<CompareMetric> metrics = {
      {"throughput_samples_per_s", "samples/s", true, true},
      {"step_time_s", "s", false, true},
      {"final_test_acc", "1", true, true},
      {"final_test_loss", "", false, true},
      {"time_to_target_s", "s", false, true},
      {"compute_s", "s", false, false},
      {"comm_s", "s", false, false},
      {"wait_s", "s", false, false},
      {"data_s", "s", false, false},
      {"bytes_sent_per_step", "bytes", false, false},
      {"mfu", "1", true, false},
  };
  return metrics;
}

const char* compare_verdict_name(CompareVerdict verdict) {
  switch (verdict) {
    case CompareVerdict::compare_ok: return "ok";
    case CompareVerdict::compare_improved: return "improved";
    case CompareVerdict::compare_noise: return "noise";
    case CompareVerdict::compare_regressed: return "REGRESSED";
    case CompareVerdict::compare_inconclusive: return "inconclusive";
    case CompareVerdict::compare_missing: return "missing";
  }
  return "?";
}

void compare_parse_thresholds(const std::string& text, CompareOptions& options) {
  size_t begin = 0;
  bool any = false;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    if (const size_t last = item.find_last_not_of(' '); last != std::string::npos) item.resize(last + 1);
    begin = end + 1;
    if (item.empty()) continue;
    any = true;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      options.threshold = parse_threshold_value(item, text);
    } else {
      options.per_metric[compare_metric_resolve(item.substr(0, eq), "--threshold")] =
          parse_threshold_value(item.substr(eq + 1), text);
    }
  }
  if (!any) DSGD_THROW(InputError, "e.g. --threshold 5%", "--threshold: empty");
}

std::string compare_group_key(const RunRecord& r, bool ignore_machine) {
  nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
  if (!config.is_object()) config = nlohmann::json::object();
  nlohmann::json key =
      nlohmann::json::array({r.workload, r.dataset, r.algorithm, r.backend, r.workers, r.batch, r.period, r.steps});
  for (const char* k : network_keys) key.push_back(config_text(config, k));
  if (!ignore_machine) {
    key.push_back(r.host);
    key.push_back(r.cpu_model);
  }
  return key.dump();
}

// Diverged runs (non-finite loss or model) are failures, never fast runs: a candidate whose
// share of diverged runs exceeds the baseline's regresses on the gating pseudo-metric
// "diverged_runs". Adds that metric's row to the group when either side diverged.
bool compare_divergence(const std::vector<const RunWithSummary*>& base, const std::vector<const RunWithSummary*>& cand,
                        CompareGroup& group) {
  auto diverged = [](const std::vector<const RunWithSummary*>& runs) {
    return static_cast<size_t>(std::count_if(
        runs.begin(), runs.end(), [](const RunWithSummary* r) { return r->run.status == RunStatus::run_diverged; }));
  };
  const size_t bd = diverged(base), cd = diverged(cand);
  if (bd == 0 && cd == 0) return false;
  CompareMetricResult m;
  m.metric = CompareMetric{"diverged_runs", "runs", false, true};
  m.base_n = base.size();
  m.cand_n = cand.size();
  m.base_median = static_cast<double>(bd) / static_cast<double>(base.size());
  m.cand_median = static_cast<double>(cd) / static_cast<double>(cand.size());
  m.absolute_change = m.cand_median - m.base_median;
  m.threshold = CompareThreshold{0.0, true};
  m.note = fmt::format("{} of {} candidate run(s) diverged (baseline: {} of {})", cd, cand.size(), bd, base.size());
  const bool worse = m.cand_median > m.base_median;
  m.verdict = worse ? CompareVerdict::compare_regressed
                    : (m.cand_median < m.base_median ? CompareVerdict::compare_improved : CompareVerdict::compare_ok);
  group.metrics.push_back(m);
  if (worse) group.regressed = true;
  return worse;
}

namespace {

using RunGroups = std::map<std::string, std::vector<const RunWithSummary*>>;

// One side's runs by group key; runs neither completed nor diverged (or without a summary) are
// counted in `skipped`. A diverged run belongs to its group (it counts against the side), but
// gives no metric.
struct CompareSide {
  RunGroups groups;
  size_t skipped = 0;
};

CompareSide compare_side_collect(const std::vector<RunWithSummary>& runs, bool ignore_machine) {
  CompareSide side;
  for (const RunWithSummary& r : runs) {
    if ((r.run.status != RunStatus::run_completed && r.run.status != RunStatus::run_diverged) || !r.summary) {
      ++side.skipped;
      continue;
    }
    side.groups[compare_group_key(r.run, ignore_machine)].push_back(&r);
  }
  return side;
}

// A metric measured on one side only: missing, or a regression when the candidate no longer
// reaches the target.
void compare_one_sided(CompareMetricResult& m, bool base_measured, CompareGroup& group, CompareResult& result) {
  const bool lost = base_measured && m.metric.name == "time_to_target_s";
  m.verdict = lost ? CompareVerdict::compare_regressed : CompareVerdict::compare_missing;
  m.note = base_measured ? "not measured in the candidate" : "not measured in the baseline";
  if (lost) m.note = "the candidate no longer reaches the target";
  if (lost && m.metric.gate) {
    group.regressed = true;
    ++result.regressions;
  }
}

// The verdict of a metric measured on both sides: within the threshold, inconclusive (no
// outcome of these sample sizes can reach p < alpha), noise, regressed or improved. Counts the
// gating ones in `group` and `result`.
void compare_verdict(CompareMetricResult& m, size_t nx, size_t ny, const CompareOptions& options, CompareGroup& group,
                     CompareResult& result) {
  const double size = m.threshold.points ? std::fabs(m.absolute_change) : std::fabs(m.relative_change);
  const bool beyond = size > m.threshold.value;
  const bool worse = m.metric.bigger_is_better ? m.absolute_change < 0 : m.absolute_change > 0;
  if (!beyond) {
    m.verdict = CompareVerdict::compare_ok;
    m.note = fmt::format("within {}", format_threshold(m.threshold));
  } else if (!m.testable) {
    // No outcome of these sample sizes can reach p < alpha: the data cannot tell a real
    // change from run-to-run noise, so neither "regressed" nor "noise" can be claimed.
    size_t need = std::max(nx, ny);
    while (mann_whitney_min_p(need, need) >= options.alpha && need < 1000) ++need;
    m.verdict = CompareVerdict::compare_inconclusive;
    m.note = fmt::format("{} than {}, but {} vs {} repetitions cannot support a verdict at alpha {:g}: run {} a side",
                         worse ? "worse" : "better", format_threshold(m.threshold), nx, ny, options.alpha, need);
    if (m.metric.gate) {
      ++result.inconclusive;
      result.repetitions_needed = std::max(result.repetitions_needed, need);
    }
  } else if (m.p_value >= options.alpha) {
    m.verdict = CompareVerdict::compare_noise;
    m.note = fmt::format("beyond {} but p = {:.3g} >= {:g}", format_threshold(m.threshold), m.p_value, options.alpha);
  } else if (worse) {
    m.verdict = CompareVerdict::compare_regressed;
    m.note = fmt::format("worse than {}, p = {:.3g}", format_threshold(m.threshold), m.p_value);
    if (m.metric.gate) {
      group.regressed = true;
      ++result.regressions;
    }
  } else {
    m.verdict = CompareVerdict::compare_improved;
    m.note = fmt::format("better than {}", format_threshold(m.threshold));
  }
}

// The one warning of a comparison with fewer repetitions than the test needs to be reliable.
std::string few_repetitions_warning(size_t nx, size_t ny, const std::string& label, bool testable,
                                    const CompareOptions& options) {
  return fmt::format(
      "few repetitions ({} baseline, {} candidate in '{}'): the Mann-Whitney U test needs about {} per side to "
      "be reliable (Google Benchmark's rule){}; run the suite with --repeat {}",
      nx, ny, label, options.recommended_repetitions,
      testable ? ""
               : "; below 4 per side no p-value can reach significance, so a change beyond the threshold is "
                 "inconclusive",
      options.recommended_repetitions);
}

// One metric of a matched group (nothing when neither side measured it): medians, change,
// the Mann-Whitney test and the verdict.
void compare_metric(const CompareMetric& metric, const std::vector<const RunWithSummary*>& base,
                    const std::vector<const RunWithSummary*>& cand, const CompareOptions& options, CompareGroup& group,
                    CompareResult& result, bool& few_warned) {
  std::vector<double> x, y;
  for (const RunWithSummary* r : base)
    if (auto v = compare_metric_value(*r, metric.name)) x.push_back(*v);
  for (const RunWithSummary* r : cand)
    if (auto v = compare_metric_value(*r, metric.name)) y.push_back(*v);
  if (x.empty() && y.empty()) return;  // not measured on either side (no target, ...)
  CompareMetricResult m;
  m.metric = metric;
  auto it = options.per_metric.find(metric.name);
  m.threshold = it != options.per_metric.end() ? it->second : options.threshold;
  m.base_n = x.size();
  m.cand_n = y.size();
  m.base_median = stats_median(x);
  m.cand_median = stats_median(y);
  if (x.empty() || y.empty()) {
    compare_one_sided(m, !x.empty(), group, result);
    group.metrics.push_back(m);
    return;
  }
  m.absolute_change = m.cand_median - m.base_median;
  if (m.base_median != 0) {
    m.relative_change = m.absolute_change / std::fabs(m.base_median);
  } else {
    m.relative_change =
        m.absolute_change == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), m.absolute_change);
  }
  const MannWhitneyResult test = mann_whitney_u(x, y);
  m.p_value = test.p_value;
  m.exact = test.exact;
  m.testable = mann_whitney_min_p(x.size(), y.size()) < options.alpha;
  compare_verdict(m, x.size(), y.size(), options, group, result);
  if (!few_warned && std::min(x.size(), y.size()) < options.recommended_repetitions) {
    few_warned = true;
    result.warnings.push_back(few_repetitions_warning(x.size(), y.size(), group.label, m.testable, options));
  }
  group.metrics.push_back(m);
}

// A group present on both sides: its divergence row, then every metric.
CompareGroup compare_group(const std::vector<const RunWithSummary*>& base,
                           const std::vector<const RunWithSummary*>& cand, const CompareOptions& options,
                           CompareResult& result, bool& few_warned) {
  CompareGroup group;
  group.label = compare_group_label(base.front()->run);
  group.name = group_name(base.front()->run);
  for (const RunWithSummary* r : base) group.base_ids.push_back(r->run.id);
  for (const RunWithSummary* r : cand) group.cand_ids.push_back(r->run.id);
  if (compare_divergence(base, cand, group)) ++result.regressions;
  for (const CompareMetric& metric : compare_metrics())
    compare_metric(metric, base, cand, options, group, result, few_warned);
  return group;
}

// The line of a group found on one side only (bi: its baseline runs, else ci: its candidate runs).
std::string unmatched_line(const RunGroups& base_groups, const RunGroups::const_iterator& bi,
                           const RunGroups::const_iterator& ci, bool ignore_machine) {
  const bool in_base = bi != base_groups.end();
  const RunRecord& r = (in_base ? bi->second : ci->second).front()->run;
  return fmt::format("{} only: {}{}", in_base ? "baseline" : "candidate", compare_group_label(r),
                     ignore_machine ? "" : fmt::format(" on {} ({})", r.host, r.cpu_model));
}

}  // namespace

CompareResult compare_runs(const std::vector<RunWithSummary>& base, const std::vector<RunWithSummary>& cand,
                           const CompareOptions& options) {
  CompareResult result;
  const CompareSide b = compare_side_collect(base, options.ignore_machine);
  const CompareSide c = compare_side_collect(cand, options.ignore_machine);
  if (b.skipped) result.warnings.push_back(fmt::format("baseline: {} run(s) not completed, left out", b.skipped));
  if (c.skipped) result.warnings.push_back(fmt::format("candidate: {} run(s) not completed, left out", c.skipped));
  if (b.groups.empty() || c.groups.empty()) {
    DSGD_THROW(InputError, "compare completed runs (dsgd-bench runs shows their status)",
               "nothing to compare: the {} has no completed run", b.groups.empty() ? "baseline" : "candidate");
  }

  std::set<std::string> keys;
  for (const auto& [k, v] : b.groups) keys.insert(k);
  for (const auto& [k, v] : c.groups) keys.insert(k);
  bool few_warned = false;
  for (const std::string& key : keys) {
    auto bi = b.groups.find(key);
    auto ci = c.groups.find(key);
    if (bi == b.groups.end() || ci == c.groups.end()) {
      result.unmatched.push_back(unmatched_line(b.groups, bi, ci, options.ignore_machine));
      continue;
    }
    result.groups.push_back(compare_group(bi->second, ci->second, options, result, few_warned));
  }
  if (result.groups.empty()) {
    std::string detail;
    for (const std::string& u : result.unmatched) detail += "\n  " + u;
    DSGD_THROW(InputError,
               "runs match on workload, dataset, algorithm, backend, workers, batch, period, steps, network settings "
               "and machine (host, CPU); pass --ignore-machine to compare across machines",
               "nothing matched between baseline and candidate:{}", detail);
  }
  for (const std::string& u : result.unmatched) result.warnings.push_back("unmatched, not compared: " + u);
  return result;
}

std::string compare_markdown(const CompareResult& r, const std::string& base_name, const std::string& cand_name) {
  std::string out = fmt::format("## dsgd-bench compare: `{}` → `{}`\n\n", base_name, cand_name);
  if (r.regressions > 0) {
    out += fmt::format("**{} regression{}** in gating metrics.\n\n", r.regressions, r.regressions == 1 ? "" : "s");
  } else if (r.inconclusive > 0) {
    out += fmt::format(
        "**Inconclusive:** {} gating metric{} changed beyond the threshold, but too few repetitions to tell it from "
        "noise: run {} a side.\n\n",
        r.inconclusive, r.inconclusive == 1 ? "" : "s", r.repetitions_needed);
  } else {
    out += "**No significant regression.**\n\n";
  }
  ReportTable table;
  table.name = "compare";
  for (const char* name : {"group", "metric", "baseline", "candidate", "change", "p-value", "n", "verdict"}) {
    const bool numeric = std::string_view(name) != "group" && std::string_view(name) != "metric" &&
                         std::string_view(name) != "verdict";  // right-aligned
    table.columns.push_back(ReportColumn{name, "", numeric ? ReportType::report_real : ReportType::report_text, ""});
  }
  for (const CompareGroup& g : r.groups) {
    for (const CompareMetricResult& m : g.metrics) {
      std::string verdict = compare_verdict_name(m.verdict);
      if (m.verdict == CompareVerdict::compare_regressed) verdict = m.metric.gate ? "❌ REGRESSED" : "worse";
      table.rows.push_back({g.label, m.metric.name + (m.metric.gate ? "" : " (info)"), format_value(m.base_median),
                            format_value(m.cand_median), m.base_n && m.cand_n ? format_change(m) : "-",
                            m.base_n && m.cand_n ? fmt::format("{:.3g}{}", m.p_value, m.exact ? "" : "~") : "-",
                            fmt::format("{}/{}", m.base_n, m.cand_n), fmt::format("{} ({})", verdict, m.note)});
    }
  }
  out += report_markdown_table(table);
  if (!r.warnings.empty()) {
    out += "\n";
    for (const std::string& w : r.warnings) out += fmt::format("> warning: {}\n", w);
  }
  out +=
      "\nChange: of the medians over repetitions; p-value: two-sided Mann-Whitney U (`~`: normal "
      "approximation). Definitions: docs/metrics.md, docs/reports.md.\n";
  return out;
}

std::string compare_junit(const CompareResult& r) {
  size_t tests = 0, failures = 0;
  for (const CompareGroup& g : r.groups) {
    tests += g.metrics.size();
    for (const CompareMetricResult& m : g.metrics)
      if (m.metric.gate && m.verdict == CompareVerdict::compare_regressed) ++failures;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"dsgd-bench compare\" tests=\"{}\" failures=\"{}\">\n", tests, failures);
  for (const CompareGroup& g : r.groups) {
    size_t group_failures = 0;
    for (const CompareMetricResult& m : g.metrics)
      if (m.metric.gate && m.verdict == CompareVerdict::compare_regressed) ++group_failures;
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">\n", xml_escape(g.label),
                       g.metrics.size(), group_failures);
    for (const CompareMetricResult& m : g.metrics) {
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">", xml_escape(g.name), xml_escape(m.metric.name));
      const std::string detail = fmt::format(
          "baseline {} (n={}), candidate {} (n={}), change {}, p={:.3g}: {}", format_value(m.base_median), m.base_n,
          format_value(m.cand_median), m.cand_n, m.base_n && m.cand_n ? format_change(m) : "-", m.p_value, m.note);
      if (m.metric.gate && m.verdict == CompareVerdict::compare_regressed) {
        out += fmt::format("<failure message=\"{} regressed\">{}</failure>", xml_escape(m.metric.name),
                           xml_escape(detail));
      } else if (m.verdict == CompareVerdict::compare_missing ||
                 (m.metric.gate && m.verdict == CompareVerdict::compare_inconclusive)) {
        out += fmt::format("<skipped message=\"{}\"/>", xml_escape(m.note));
      } else {
        out += fmt::format("<system-out>{}</system-out>", xml_escape(detail));
      }
      out += "</testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

nlohmann::json compare_benchmark_json(const CompareResult& r, bool bigger_is_better) {
  nlohmann::json entries = nlohmann::json::array();
  for (const CompareGroup& g : r.groups) {
    for (const CompareMetricResult& m : g.metrics) {
      if (m.metric.bigger_is_better != bigger_is_better || m.cand_n == 0) continue;
      entries.push_back({{"name", fmt::format("{} {}", g.name, m.metric.name)},
                         {"unit", m.metric.unit.empty() ? "1" : m.metric.unit},
                         {"value", m.cand_median},
                         {"extra", fmt::format("{}; n={}; baseline {}; p={:.3g}", g.label, m.cand_n,
                                               format_value(m.base_median), m.p_value)}});
    }
  }
  return entries;
}

}  // namespace dsgd
