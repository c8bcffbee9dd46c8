// Comparing a baseline with a candidate set of runs for CI regression gates
// (`dsgd-bench compare`; docs/ci.md, docs/reports.md).
// - Matching: runs are grouped by workload, dataset, algorithm, backend, workers, batch,
//   period, steps, the network settings (topology, bandwidth, latency, inter-bandwidth,
//   inter-latency, overlap) and the machine fingerprint (host + CPU model; --ignore-machine
//   drops it). The straggler setting is deliberately not part of the key: an injected
//   straggler is the kind of slowdown a gate must catch. Repetitions of a group (for
//   suites: rep=1..R) are the samples. Only completed runs with a summary give metric
//   samples; a diverged run counts against its side in the gating pseudo-metric
//   "diverged_runs" (a larger share of diverged runs in the candidate is a regression).
// - Per metric: the relative change of the medians, (cand - base) / |base|, the absolute
//   change, and the two-sided Mann-Whitney U p-value over the repetitions.
// - Verdict: `regressed` when the change is worse than the metric's threshold (relative
//   "5%", or absolute "0.5pt" = 0.005 of a fraction metric) and significant (p < alpha),
//   `inconclusive` when beyond the threshold but no outcome of these sample sizes could
//   reach p < alpha (fewer than 4 repetitions a side): the data cannot support a verdict,
//   and the note says how many repetitions would; `noise` when beyond the threshold but not
//   significant; `improved` / `ok` otherwise. Only gating metrics (compare_metrics(): gate)
//   fail the comparison (regressed) or leave it open (inconclusive).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

struct CompareMetric {
  std::string name;  // a summary column of docs/metrics.md
  std::string unit;
  bool bigger_is_better = false;
  bool gate = false;  // a regression here fails the comparison
};

// The compared metrics, gating ones first.
const std::vector<CompareMetric>& compare_metrics();

struct CompareThreshold {
  double value = 0.05;
  bool points = false;  // absolute, in percentage points of a fraction (0.5pt = 0.005)
};

struct CompareOptions {
  CompareThreshold threshold;                          // default for every metric
  std::map<std::string, CompareThreshold> per_metric;  // overrides by full metric name
  double alpha = 0.05;
  bool ignore_machine = false;
  size_t recommended_repetitions = 9;  // warn below (Google Benchmark's rule)
};

// Parses "5%", "0.5pt", "throughput=3%,final_test_acc=0.5pt" or a mix ("4%,acc=1pt") into
// options. Metric names may be given in full or by a short alias (throughput, step_time,
// acc, loss, time_to_target). InputError for unknown metrics or malformed values.
void compare_parse_thresholds(const std::string& text, CompareOptions& options);

enum class CompareVerdict {
  compare_ok,
  compare_improved,
  compare_noise,
  compare_regressed,
  compare_missing,
  compare_inconclusive
};
const char* compare_verdict_name(CompareVerdict verdict);

struct CompareMetricResult {
  CompareMetric metric;
  size_t base_n = 0, cand_n = 0;  // finite samples
  double base_median = 0, cand_median = 0;
  double relative_change = 0;  // (cand - base) / |base|; +-inf when base is 0 and cand is not
  double absolute_change = 0;
  double p_value = 1;
  bool exact = false;
  bool testable = false;  // sample sizes allow p < alpha
  CompareThreshold threshold;
  CompareVerdict verdict = CompareVerdict::compare_ok;
  std::string note;  // why, in words
};

struct CompareGroup {
  std::string label;  // "svm/fashion-mnist ssgd w2 b64 ..."
  std::string name;   // short identifier for JUnit / benchmark JSON: "svm-ssgd-w2-b64-H4"
  std::vector<int64_t> base_ids, cand_ids;
  std::vector<CompareMetricResult> metrics;
  bool regressed = false;
};

struct CompareResult {
  std::vector<CompareGroup> groups;
  std::vector<std::string> unmatched;  // groups present on one side only, described
  std::vector<std::string> warnings;
  size_t regressions = 0;         // gating metrics that regressed
  size_t inconclusive = 0;        // gating metrics beyond the threshold that too few repetitions cannot settle
  size_t repetitions_needed = 0;  // per side, to settle them (0: none inconclusive)
};

// Throws InputError when either side has no completed run with a summary, or when no
// group matches (exit code 2 in the CLI), naming what each side had.
CompareResult compare_runs(const std::vector<RunWithSummary>& base, const std::vector<RunWithSummary>& cand,
                           const CompareOptions& options);

// The group key of a run (see above); exposed for tests and history.
std::string compare_group_key(const RunRecord& run, bool ignore_machine);
// The group's label in reports ("svm ssgd w2 b64 60steps (fashion-mnist)").
std::string compare_group_label(const RunRecord& run);
// A completed run's value of a compared metric (a summary column); none for a run that did
// not complete, and for a null, non-finite or (throughput) zero value.
std::optional<double> compare_metric_value(const RunWithSummary& run, const std::string& name);
// A metric's full name from its name or alias (throughput, step_time, acc, ...); InputError
// naming `flag` and the known metrics otherwise.
std::string compare_metric_resolve(const std::string& name, const std::string& flag);

std::string compare_markdown(const CompareResult& result, const std::string& base_name, const std::string& cand_name);
std::string compare_junit(const CompareResult& result);
// github-action-benchmark "customBiggerIsBetter" / "customSmallerIsBetter" entries for the
// candidate: [{name, unit, value, range, extra}], one per group and metric of that kind.
nlohmann::json compare_benchmark_json(const CompareResult& result, bool bigger_is_better);

}  // namespace dsgd
