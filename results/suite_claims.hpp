// Claims of a suite file ([[claims]] tables, docs/reports.md): a paper's headline claim
// tested mechanically as a comparison between two named runs of the suite on one summary
// metric, with a direction and a margin. The verdict is computed here from the stored
// summaries, never written by hand; a claim that cannot be tested on this machine carries
// its reason instead of runs.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dsgd {

struct Summary;
class Store;

struct SuiteClaim {
  std::string id, text, paper;
  std::string lhs, rhs;    // ids of named [[runs]] entries
  std::string metric;      // one of suite_claim_metrics()
  char op = '>';           // '>' (lhs > rhs + m), '<' (lhs < rhs - m), '~' (|lhs - rhs| <= m)
  double margin = 0;       // absolute, in the metric's unit
  double margin_rel = 0;   // relative to |rhs|; m = margin + margin_rel * |rhs|
  std::string untestable;  // reason when the claim is not testable here (no runs then)
};

// The metrics a claim may compare (Summary field names, as in `dsgd-bench compare`).
const std::vector<std::string>& suite_claim_metrics();

// Parses the [[claims]] tables (already converted to JSON objects of scalars) of suite file
// `path` whose named runs are `run_names` (empty names: unnamed entries). InputError naming
// the claim (its id or position) and the key on an unknown key, a missing or duplicate id,
// an unknown run, metric or expect form, or a negative margin.
std::vector<SuiteClaim> suite_claims_parse(const std::vector<nlohmann::json>& tables,
                                           const std::vector<std::string>& run_names, const std::string& path);

// One run's value of `metric`: nullopt when the summary has no such value (no evaluation);
// a target that was not reached counts as +infinity for time_to_target_s.
std::optional<double> suite_claim_metric(const Summary& summary, const std::string& metric);

struct ClaimResult {
  SuiteClaim claim;
  std::optional<double> lhs, rhs;  // mean over the repetitions that have a value
  std::string verdict;             // reproduced | not reproduced | not testable here | not measured
};

// The verdict of `claim` given the metric's values of its lhs and rhs runs (one per repetition).
ClaimResult suite_claim_evaluate(const SuiteClaim& claim, const std::vector<std::optional<double>>& lhs,
                                 const std::vector<std::optional<double>>& rhs);

// Evaluates every claim from the completed runs of each entry (`runs_per_entry[e]`: the run
// ids of entry e, all repetitions) read from `store`; entry e is named `run_names[e]`.
std::vector<ClaimResult> suite_claims_evaluate(const std::vector<SuiteClaim>& claims,
                                               const std::vector<std::string>& run_names,
                                               const std::vector<std::vector<int64_t>>& runs_per_entry,
                                               const Store& store);

// The claims table as plain text: id, comparison, measured lhs and rhs, verdict, and the
// claim's text (or reason) on the next line.
std::string suite_claims_table(const std::vector<ClaimResult>& results);

}  // namespace dsgd
