// `dsgd-bench track`, the CI gate over a benchmark's history (docs/reports.md, "Tracking
// and the CI gate"): the series of `history` (results/history.hpp) with the users'
// annotations applied, their change points recorded in the database, and the newest commit
// (or a chosen one) of each series tested against its baseline, the commits since the
// series' last change point before it.
//
// The test treats the candidate commit's median as one more draw of the per-commit process:
// with the baseline's n medians (logs, when every value is positive) of mean m and standard
// deviation s, t = (x − m) / (s √(1 + 1/n)) with n − 1 degrees of freedom (a prediction
// interval), two-sided. The series' noise floor is 2 s, as a relative change. Verdicts:
//   regressed     the change is in the metric's bad direction, at least the threshold, beyond
//                 the noise floor and significant (p <= the gate's p-value);
//   acknowledged  the same, at a commit annotated `expected`;
//   improved      the same in the good direction;
//   inconclusive  in the bad direction and at least the threshold, but within the noise floor
//                 or not significant: the data cannot tell, so it neither passes nor fails;
//                 also a regression whose candidate runs were all taken on a busy host, or
//                 that the reference case shows on the machine (TrackOptions::reference);
//   ok            below the threshold, or an unsupported change in the good direction;
//   too short     fewer than 3 baseline commits: the series is not tested.
// The noise floor is widened to a `track calibrate` measurement where the series has one
// (results/noise_floor.hpp).
// Annotations: `expected` acknowledges a change at that commit; `invalid` and `outlier` take
// the commit's point out of the series (detection, baseline and candidate); `invalid` also
// hides it from the output.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/history.hpp"
#include "results/store.hpp"

namespace dsgd {

enum class AnnotationKind { annotation_expected, annotation_invalid, annotation_outlier };
const char* annotation_kind_text(AnnotationKind kind);
// InputError naming the known kinds for another text.
AnnotationKind annotation_kind_parse(const std::string& text);

struct Annotation {
  int64_t id = 0;
  std::string created_at;
  std::string commit;  // a commit or a prefix of one (at least 4 characters)
  AnnotationKind kind = AnnotationKind::annotation_expected;
  std::string series;  // applies to series whose case label contains this (empty: every series)
  std::string metric;  // applies to this metric only (empty: every metric)
  std::string note;
};

// Whether an annotation names this series and commit: its commit a prefix of the point's, its
// case text in the series' label (or none), its metric the series' (or none).
bool annotation_applies(const Annotation& annotation, const HistorySeries& series, const std::string& commit);

// Stores an annotation (InputError for a commit shorter than 4 characters); returns its id.
int64_t annotation_add(Store& store, Annotation annotation);
// Every annotation, oldest first (none in a database older than the tracking tables).
std::vector<Annotation> annotations_list(const Store& store);

enum class TrackVerdict {
  track_ok,
  track_improved,
  track_regressed,
  track_acknowledged,
  track_inconclusive,
  track_too_short
};
const char* track_verdict_text(TrackVerdict verdict);

struct TrackOptions {
  HistoryOptions history;
  std::string commit;         // the candidate (a prefix); empty: each series' newest commit
  double threshold = 0.05;    // smallest relative change that matters
  double gate_pvalue = 0.01;  // the candidate test's significance
  size_t baseline = 20;       // most baseline commits used (the newest ones)
  // A frozen reference case (text its label contains): a series whose code does not change,
  // run beside the others. When it moves at the candidate by at least half a regressing
  // series' change, in the same direction, the machine changed, not the code: the regression
  // becomes inconclusive. Empty: none.
  std::string reference;
  bool record = true;  // store the change points found
};

struct TrackResult {
  HistorySeries series;  // annotations applied (invalid and outlier points removed)
  bool bigger_is_better = false;
  std::string candidate;  // its commit; empty when the series has no such commit
  size_t candidate_runs = 0;
  size_t baseline_n = 0;
  double candidate_median = 0;
  double baseline_mean = 0;     // of the baseline's medians: geometric on a log scale
  double noise_floor = 0;       // 2 s, as a relative change, or the calibrated floor when wider
  double calibrated_floor = 0;  // from `track calibrate` for a median of candidate_runs (0: none)
  size_t candidate_busy = 0;    // candidate runs taken on a busy host
  double change = 0;            // relative (a ratio of geometric means on a log scale)
  double pvalue = 1;
  TrackVerdict verdict = TrackVerdict::track_ok;
  std::string note;                  // why, in words
  std::vector<Annotation> excluded;  // invalid / outlier annotations that removed points
};

struct TrackReport {
  std::vector<TrackResult> results;
  int regressed = 0, inconclusive = 0, tested = 0;
};

// Builds the series of the stored runs, applies the annotations, detects and (options.record)
// stores their change points, and tests each series' candidate. Throws InputError for an
// unknown metric or a --commit no selected series has.
TrackReport track_run(Store& store, const TrackOptions& options);

std::string track_table(const TrackReport& report, const TrackOptions& options);
nlohmann::json track_json(const TrackReport& report, const TrackOptions& options);

}  // namespace dsgd
