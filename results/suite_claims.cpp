// Suite claims: parsing, evaluation against stored summaries, the printed table
// (see suite_claims.hpp).
#include "results/suite_claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/errors.hpp"
#include "results/row_fields.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

std::string expect_text(char op) {
  return op == '~' ? "lhs ~ rhs" : fmt::format("lhs {} rhs", op);
}

// "lhs > rhs", "lhs < rhs" or "lhs ~ rhs", spaces optional.
std::optional<char> parse_expect(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ' ' && c != '\t') s += c;
  if (s.size() == 7 && s.compare(0, 3, "lhs") == 0 && s.compare(4, 3, "rhs") == 0 &&
      (s[3] == '>' || s[3] == '<' || s[3] == '~'))
    return s[3];
  return std::nullopt;
}

std::string format_value(std::optional<double> v) {
  if (!v) return "-";
  if (std::isinf(*v)) return "not reached";
  const double a = std::fabs(*v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) return fmt::format("{:.4g}", *v);
  return fmt::format("{:.4f}", *v);
}

}  // namespace

const std::vector<std::string>& suite_claim_metrics() {
  static const std::vector<std::string> metrics = {
      "final_test_acc", "final_test_loss", "time_to_target_s",         "step_time_s",
      "comm_s",         "wait_s",          "throughput_samples_per_s", "bytes_sent_per_step"};
  return metrics;
}

std::vector<SuiteClaim> suite_claims_parse(const std::vector<nlohmann::json>& tables,
                                           const std::vector<std::string>& run_names, const std::string& path) {
  static const std::set<std::string> keys = {"id",     "text",   "paper",  "lhs",        "rhs",
                                             "metric", "expect", "margin", "margin_rel", "untestable"};
  std::vector<SuiteClaim> claims;
  std::set<std::string> seen;
  std::string names;
  for (const std::string& n : run_names)
    if (!n.empty()) names += (names.empty() ? "" : ", ") + n;
  std::string metrics;
  for (const std::string& m : suite_claim_metrics()) metrics += (metrics.empty() ? "" : ", ") + m;
  for (size_t i = 0; i < tables.size(); ++i) {
    const nlohmann::json& t = tables[i];
    std::string where = fmt::format("suite '{}' [[claims]] #{}", path, i + 1);
    SuiteClaim c;
    auto string_key = [&](const char* key, bool required) -> std::string {
      auto it = t.find(key);
      if (it == t.end()) {
        if (required)
          DSGD_THROW(InputError, fmt::format("add {} = \"...\"", key), "{}: key '{}' is missing", where, key);
        return "";
      }
      if (!it->is_string() || it->get<std::string>().empty())
        DSGD_THROW(InputError, "give a non-empty string", "{}: key '{}' must be a non-empty string", where, key);
      return it->get<std::string>();
    };
    auto number_key = [&](const char* key) -> double {
      auto it = t.find(key);
      if (it == t.end()) return 0;
      if (!it->is_number() || it->get<double>() < 0 || !std::isfinite(it->get<double>()))
        DSGD_THROW(InputError, "give a number >= 0", "{}: key '{}' must be a number >= 0", where, key);
      return it->get<double>();
    };
    c.id = string_key("id", true);
    where = fmt::format("suite '{}' claim '{}'", path, c.id);
    for (const auto& [key, value] : t.items())
      if (!keys.count(key))
        DSGD_THROW(InputError, "claim keys: id, text, paper, lhs, rhs, metric, expect, margin, margin_rel, untestable",
                   "{}: unknown key '{}'", where, key);
    if (!seen.insert(c.id).second)
      DSGD_THROW(InputError, "give every claim its own id", "{}: key 'id' repeats an earlier claim's id", where);
    c.text = string_key("text", true);
    c.paper = string_key("paper", false);
    c.untestable = string_key("untestable", false);
    if (!c.untestable.empty()) {
      for (const char* key : {"lhs", "rhs", "metric", "expect", "margin", "margin_rel"})
        if (t.contains(key))
          DSGD_THROW(InputError, "a claim not testable here has no runs to compare: drop the key or 'untestable'",
                     "{}: key '{}' given with 'untestable'", where, key);
      claims.push_back(std::move(c));
      continue;
    }
    for (const char* key : {"lhs", "rhs"}) {
      const std::string run = string_key(key, true);
      if (std::find(run_names.begin(), run_names.end(), run) == run_names.end())
        DSGD_THROW(InputError,
                   names.empty() ? std::string("name [[runs]] entries with id = \"...\"")
                                 : fmt::format("name one of the suite's runs: {}", names),
                   "{}: key '{}' names no run '{}'", where, key, run);
      (std::string(key) == "lhs" ? c.lhs : c.rhs) = run;
    }
    c.metric = string_key("metric", true);
    const auto& known = suite_claim_metrics();
    if (std::find(known.begin(), known.end(), c.metric) == known.end())
      DSGD_THROW(InputError, fmt::format("metrics: {}", metrics), "{}: key 'metric': unknown metric '{}'", where,
                 c.metric);
    const std::string expect = string_key("expect", true);
    const auto op = parse_expect(expect);
    if (!op)
      DSGD_THROW(InputError, "write \"lhs > rhs\", \"lhs < rhs\" or \"lhs ~ rhs\"",
                 "{}: key 'expect': cannot read '{}'", where, expect);
    c.op = *op;
    c.margin = number_key("margin");
    c.margin_rel = number_key("margin_rel");
    claims.push_back(std::move(c));
  }
  return claims;
}

std::optional<double> suite_claim_metric(const Summary& s, const std::string& metric) {
  if (metric == "time_to_target_s")  // not reached: infinitely late
    return s.time_to_target_s ? *s.time_to_target_s : std::numeric_limits<double>::infinity();
  const RowField<Summary>* field = row_field_find(summary_fields(), metric);
  if (!field) DSGD_THROW(Error, "", "suite claims: unknown metric '{}'", metric);
  return row_field_value(*field, s);
}

ClaimResult suite_claim_evaluate(const SuiteClaim& claim, const std::vector<std::optional<double>>& lhs,
                                 const std::vector<std::optional<double>>& rhs) {
  ClaimResult r;
  r.claim = claim;
  if (!claim.untestable.empty()) {
    r.verdict = "not testable here";
    return r;
  }
  auto mean = [](const std::vector<std::optional<double>>& values) -> std::optional<double> {
    double sum = 0;
    int count = 0;
    for (const auto& v : values)
      if (v) {
        sum += *v;
        ++count;
      }
    if (count == 0) return std::nullopt;
    return sum / count;
  };
  r.lhs = mean(lhs);
  r.rhs = mean(rhs);
  if (!r.lhs || !r.rhs) {
    r.verdict = "not measured";
    return r;
  }
  const double a = *r.lhs, b = *r.rhs;
  // Both infinite (a target neither side reached): no comparison holds.
  const double m = claim.margin + claim.margin_rel * (std::isinf(b) ? 0.0 : std::fabs(b));
  bool holds = false;
  if (std::isinf(a) && std::isinf(b)) {
    holds = false;
  } else if (claim.op == '>') {
    holds = a > b + m;
  } else if (claim.op == '<') {
    holds = a < b - m;
  } else {
    holds = std::fabs(a - b) <= m;
  }
  r.verdict = holds ? "reproduced" : "not reproduced";
  return r;
}

std::vector<ClaimResult> suite_claims_evaluate(const std::vector<SuiteClaim>& claims,
                                               const std::vector<std::string>& run_names,
                                               const std::vector<std::vector<int64_t>>& runs_per_entry,
                                               const Store& store) {
  auto values = [&](const std::string& name, const std::string& metric) {
    std::vector<std::optional<double>> out;
    for (size_t e = 0; e < run_names.size() && e < runs_per_entry.size(); ++e) {
      if (run_names[e] != name) continue;
      for (int64_t id : runs_per_entry[e]) {
        const RunWithSummary run = store.run_get(id);
        if (run.summary) out.push_back(suite_claim_metric(*run.summary, metric));
      }
    }
    return out;
  };
  std::vector<ClaimResult> results;
  for (const SuiteClaim& c : claims) {
    if (!c.untestable.empty()) {
      results.push_back(suite_claim_evaluate(c, {}, {}));
      continue;
    }
    results.push_back(suite_claim_evaluate(c, values(c.lhs, c.metric), values(c.rhs, c.metric)));
  }
  return results;
}

std::string suite_claims_table(const std::vector<ClaimResult>& results) {
  std::string out;
  size_t reproduced = 0, not_reproduced = 0, untestable = 0, unmeasured = 0;
  for (const ClaimResult& r : results) {
    const SuiteClaim& c = r.claim;
    if (!c.untestable.empty()) {
      ++untestable;
      out += fmt::format("  {:<26} {}\n      {}{}\n      reason: {}\n", c.id, r.verdict, c.text,
                         c.paper.empty() ? "" : " (" + c.paper + ")", c.untestable);
      continue;
    }
    if (r.verdict == "reproduced") ++reproduced;
    if (r.verdict == "not reproduced") ++not_reproduced;
    if (r.verdict == "not measured") ++unmeasured;
    std::string margin;
    if (c.margin > 0) margin += fmt::format(" margin {}", c.margin);
    if (c.margin_rel > 0) margin += fmt::format(" margin {}% of rhs", c.margin_rel * 100);
    out += fmt::format("  {:<26} {}\n      {}{}\n      {} {}: lhs {} = {}, rhs {} = {}{}\n", c.id, r.verdict, c.text,
                       c.paper.empty() ? "" : " (" + c.paper + ")", c.metric, expect_text(c.op), c.lhs,
                       format_value(r.lhs), c.rhs, format_value(r.rhs), margin);
  }
  out += fmt::format("  {} claim{}: {} reproduced, {} not reproduced, {} not testable here{}\n", results.size(),
                     results.size() == 1 ? "" : "s", reproduced, not_reproduced, untestable,
                     unmeasured ? fmt::format(", {} not measured", unmeasured) : "");
  return out;
}

}  // namespace dsgd
