// The HTML report's configurations (see html_run_groups.hpp).
#include "results/html_run_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "core/run_config.hpp"
#include "core/stats.hpp"
#include "results/compare_runs.hpp"

namespace dsgd {

namespace {

// Settings that differ between repetitions of one configuration, or do not change what runs.
// (And kRunMeasuredConfigKeys: what the run's start measured.)
constexpr const char* repetition_keys[] = {"seed", "tag", "db", "save-params", "hostfile"};
constexpr const char* network_keys[] = {"bandwidth", "latency", "topology", "inter-bandwidth", "inter-latency"};

std::string config_text(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

std::string network_text(const nlohmann::json& config) {
  std::string text;
  for (const char* key : network_keys) {
    const std::string value = config_text(config, key);
    if (value.empty() || (std::string(key) == "topology" && value == "complete")) continue;
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", key, value);
  }
  return text.empty() ? "ideal" : text;
}

bool knob_applies(const HtmlKnobApplies& applies, const RunRecord& r, const std::string& knob) {
  if (applies) return applies(r.algorithm, knob);
  return knob != "period" || r.period > 0;
}

std::map<std::string, std::string> knobs_of(const RunRecord& r, const nlohmann::json& config,
                                            const HtmlKnobApplies& applies) {
  std::map<std::string, std::string> k;
  k["workload"] = r.workload + " " + r.dataset;
  k["algorithm"] = r.algorithm;
  if (knob_applies(applies, r, "period")) k["period"] = std::to_string(r.period);
  k["batch"] = std::to_string(r.batch);
  k["workers"] = std::to_string(r.workers);
  k["network"] = network_text(config);
  k["machine"] = r.host;
  return k;
}

HtmlGroupStat stat_of(std::vector<double> values) {
  HtmlGroupStat s;
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  s.n = values.size();
  if (values.empty()) return s;
  s.median = stats_median(values);
  s.q25 = stats_quantile(values, 0.25);
  s.q75 = stats_quantile(values, 0.75);
  return s;
}

void summarise(HtmlRunGroup& g, const std::vector<RunWithSummary>& runs) {
  std::vector<double> throughput, step_time, ttt, acc, data, compute, injected, wait, comm, overlap;
  for (size_t i : g.members) {
    const RunWithSummary& r = runs[i];
    ++g.statuses[run_status_text(r.run.status)];
    if (r.run.status != RunStatus::run_completed || !r.summary) continue;
    const Summary& s = *r.summary;
    if (s.timed_steps > 0) {
      throughput.push_back(s.throughput_samples_per_s);
      step_time.push_back(s.step_time_s);
      data.push_back(s.data_s);
      compute.push_back(s.compute_s);
      injected.push_back(s.injected_s);
      wait.push_back(s.wait_s);
      comm.push_back(s.comm_s);
      overlap.push_back(s.overlap_s);
    }
    if (s.time_to_target_s) ttt.push_back(*s.time_to_target_s);
    if (s.final_test_acc) acc.push_back(*s.final_test_acc);
  }
  g.throughput = stat_of(throughput);
  g.step_time = stat_of(step_time);
  g.time_to_target = stat_of(ttt);
  g.final_test_acc = stat_of(acc);
  g.timed = data.size();
  if (g.timed == 0) return;
  g.data_s = stats_median(data);
  g.compute_s = stats_median(compute);
  g.injected_s = stats_median(injected);
  g.wait_s = stats_median(wait);
  g.comm_s = stats_median(comm);
  g.overlap_s = stats_median(overlap);
}

// A number when the whole text is one ("64", "0.5"), for sorting.
std::optional<double> knob_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// The run's settings (the keys of the run-config field table: not what the run derived, such as
// its backend's details), less those that differ between repetitions.
nlohmann::json settings_of(const nlohmann::json& config) {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k;
    for (const RunConfigField& f : run_config_fields()) k.insert(f.key);
    for (const char* r : repetition_keys) k.erase(r);
    for (const char* r : kRunMeasuredConfigKeys) k.erase(r);
    return k;
  }();
  nlohmann::json out = nlohmann::json::object();
  for (const auto& item : config.items())
    if (keys.count(item.key())) out[item.key()] = item.value();
  return out;
}

// Settings outside the knobs that differ among the groups ("compute-scale=1.3 lr=0.1"): the
// "other" knob, so that two configurations never look the same.
void add_other_settings(std::vector<HtmlRunGroup>& groups, const std::vector<nlohmann::json>& settings) {
  // The knobs' own keys, and profile-from (a run id: it follows the batch, and says nothing).
  static const std::set<std::string> knob_keys = {"workload", "dataset", "algo",        "period",
                                                  "batch",    "workers", "profile-from"};
  std::set<std::string> keys;
  for (const nlohmann::json& c : settings)
    for (const auto& item : c.items()) keys.insert(item.key());
  std::vector<std::string> differing;
  for (const std::string& k : keys) {
    if (knob_keys.count(k) || std::find(std::begin(network_keys), std::end(network_keys), k) != std::end(network_keys))
      continue;
    std::set<std::string> values;
    for (const nlohmann::json& c : settings) values.insert(config_text(c, k.c_str()));
    if (values.size() > 1) differing.push_back(k);
  }
  if (differing.empty()) return;
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string text;
    for (const std::string& k : differing) {
      const std::string v = config_text(settings[i], k.c_str());
      if (!v.empty()) text += fmt::format("{}{}={}", text.empty() ? "" : " ", k, v);
    }
    groups[i].knobs["other"] = text.empty() ? "-" : text;
  }
}

}  // namespace

const std::vector<std::string>& html_group_knobs() {
  static const std::vector<std::string> knobs = {"workload", "machine", "algorithm", "network",
                                                 "period",   "batch",   "workers",   "other"};
  return knobs;
}

bool html_knob_less(const std::string& a, const std::string& b) {
  const auto x = knob_number(a), y = knob_number(b);
  if (x && y) return *x < *y;
  if (x.has_value() != y.has_value()) return x.has_value();
  return a < b;
}

HtmlRunGrouping html_group_runs(const std::vector<RunWithSummary>& runs, const HtmlKnobApplies& applies) {
  HtmlRunGrouping out;
  std::map<std::string, size_t> index;   // configuration key -> group
  std::vector<nlohmann::json> settings;  // per group: its configuration less the repetition keys
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& r = runs[i].run;
    nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
    if (!config.is_object()) config = nlohmann::json::object();
    nlohmann::json key = settings_of(config);
    const std::string text = nlohmann::json::array({r.workload, r.dataset, r.algorithm, r.backend, r.workers, r.batch,
                                                    r.period, r.steps, r.target, r.host, r.cpu_model, key})
                                 .dump();
    auto [it, added] = index.emplace(text, out.groups.size());
    if (added) {
      HtmlRunGroup& g = out.groups.emplace_back();
      g.label = compare_group_label(r);
      g.knobs = knobs_of(r, config, applies);
      settings.push_back(std::move(key));
    }
    out.groups[it->second].members.push_back(i);
  }
  for (HtmlRunGroup& g : out.groups) summarise(g, runs);
  add_other_settings(out.groups, settings);
  for (const std::string& knob : html_group_knobs()) {
    std::set<std::string> values;
    for (const HtmlRunGroup& g : out.groups)
      if (const auto it = g.knobs.find(knob); it != g.knobs.end()) values.insert(it->second);
    if (values.size() > 1) out.varying.push_back(knob);
  }
  // Facet by the first varying knob of the coarse ones, when something else varies too.
  if (out.varying.size() > 1)
    for (const char* knob : {"workload", "machine", "algorithm", "network"})
      if (std::find(out.varying.begin(), out.varying.end(), knob) != out.varying.end()) {
        out.facet = knob;
        break;
      }
  std::vector<std::string> order;
  if (!out.facet.empty()) order.push_back(out.facet);
  for (const std::string& k : out.varying)
    if (k != out.facet) order.push_back(k);
  std::stable_sort(out.groups.begin(), out.groups.end(), [&](const HtmlRunGroup& a, const HtmlRunGroup& b) {
    for (const std::string& k : order) {
      const auto x = a.knobs.find(k), y = b.knobs.find(k);
      const std::string xa = x == a.knobs.end() ? "" : x->second, yb = y == b.knobs.end() ? "" : y->second;
      if (xa == yb) continue;
      return html_knob_less(xa, yb);
    }
    return false;
  });
  return out;
}

std::string html_group_short_label(const HtmlRunGroup& g, const HtmlRunGrouping& grouping) {
  static const std::map<std::string, std::string> prefix = {{"period", "H="}, {"batch", "b="},   {"workers", "w="},
                                                            {"workload", ""}, {"algorithm", ""}, {"network", ""},
                                                            {"machine", ""},  {"other", ""}};
  std::string text;
  for (const std::string& k : grouping.varying) {
    if (k == grouping.facet) continue;
    const auto it = g.knobs.find(k);
    if (it == g.knobs.end()) continue;
    text += (text.empty() ? "" : " ") + prefix.at(k) + it->second;
  }
  return text.empty() ? g.label : text;
}

}  // namespace dsgd
