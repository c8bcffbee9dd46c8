// See track.hpp.
#include "results/track.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>

#include "core/enum_text.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "results/compare_runs.hpp"
#include "results/history_import.hpp"
#include "results/noise_floor.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

constexpr int track_schema = 16;

constexpr EnumText<AnnotationKind> kAnnotationKinds[] = {
    {AnnotationKind::annotation_expected, "expected"},
    {AnnotationKind::annotation_invalid, "invalid"},
    {AnnotationKind::annotation_outlier, "outlier"},
};

constexpr EnumText<TrackVerdict> kTrackVerdicts[] = {
    {TrackVerdict::track_ok, "ok"},
    {TrackVerdict::track_improved, "improved"},
    {TrackVerdict::track_regressed, "REGRESSED"},
    {TrackVerdict::track_acknowledged, "acknowledged"},
    {TrackVerdict::track_inconclusive, "inconclusive"},
    {TrackVerdict::track_too_short, "too short"},
};  // first schema version with the tracking tables
constexpr size_t kMinBaseline = 3;

bool commit_matches(const std::string& commit, const std::string& prefix) {
  return !prefix.empty() && commit.compare(0, prefix.size(), prefix) == 0;
}

// Removes the points an invalid or outlier annotation names, and records which did.
void exclude_annotated(TrackResult& r, const std::vector<Annotation>& annotations) {
  std::vector<HistoryPoint> kept;
  for (const HistoryPoint& p : r.series.points) {
    bool out = false;
    for (const Annotation& a : annotations)
      if (a.kind != AnnotationKind::annotation_expected && annotation_applies(a, r.series, p.commit)) {
        out = true;
        r.excluded.push_back(a);
      }
    if (!out) kept.push_back(p);
  }
  r.series.points = std::move(kept);
}

// Replaces the stored change points of the series by the ones found now, keeping first_seen.
void record_changes(Store& store, const HistorySeries& s) {
  sqlite3* db = store.handle();
  const std::string now = system_time_iso8601();
  SqlTransaction transaction(db);
  SqlStatement upsert(db,
                      "INSERT INTO change_points (series, metric, machine, git_commit, relative_change, pvalue, "
                      "confirmed, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                      "ON CONFLICT (series, metric, machine, git_commit) DO UPDATE SET "
                      "relative_change = excluded.relative_change, pvalue = excluded.pvalue, "
                      "confirmed = excluded.confirmed, last_seen = excluded.last_seen");
  for (const ChangePoint& c : s.changes) {
    upsert.reset();
    upsert.bind_all(s.label, s.metric, s.machine, s.points[c.index].commit, c.relative_change, c.pvalue,
                    c.confirmed ? int64_t{1} : int64_t{0}, now, now);
    upsert.run();
  }
  // Points the detection no longer finds (more commits moved or merged them) leave the table.
  std::vector<std::string> stale;
  SqlStatement stored(db, "SELECT git_commit FROM change_points WHERE series = ? AND metric = ? AND machine = ?");
  stored.bind_all(s.label, s.metric, s.machine);
  while (stored.step()) {
    const std::string commit = stored.column_text(0);
    if (std::none_of(s.changes.begin(), s.changes.end(),
                     [&](const ChangePoint& c) { return s.points[c.index].commit == commit; }))
      stale.push_back(commit);
  }
  SqlStatement drop(db, "DELETE FROM change_points WHERE series = ? AND metric = ? AND machine = ? AND git_commit = ?");
  for (const std::string& commit : stale) {
    drop.reset();
    drop.bind_all(s.label, s.metric, s.machine, commit);
    drop.run();
  }
  transaction.commit();
}

double value_of(const TrackResult& r, double x) {
  return r.series.log_scale ? std::log(x) : x;
}

double relative(const TrackResult& r, double candidate, double base) {
  if (r.series.log_scale) return std::expm1(candidate - base);
  return base != 0 ? (candidate - base) / std::fabs(base) : 0.0;
}

// The candidate's test against the baseline (see track.hpp).
void gate(TrackResult& r, size_t candidate, const TrackOptions& o, const std::vector<Annotation>& annotations,
          const std::vector<NoiseFloor>& floors) {
  const HistorySeries& s = r.series;
  const HistoryPoint& c = s.points[candidate];
  r.candidate = c.commit;
  r.candidate_runs = c.count;
  r.candidate_busy = c.loaded;
  r.candidate_median = c.median;
  size_t start = 0;  // the baseline: the commits since the last change point before the candidate
  for (const ChangePoint& cp : s.changes)
    if (cp.index < candidate) start = cp.index;
  start = std::max(start, candidate > o.baseline ? candidate - o.baseline : size_t{0});
  std::vector<double> base;
  for (size_t i = start; i < candidate; ++i) base.push_back(value_of(r, s.points[i].median));
  r.baseline_n = base.size();
  if (base.size() < kMinBaseline) {
    r.verdict = TrackVerdict::track_too_short;
    r.note =
        fmt::format("not tested: {} baseline commit(s) since its last change, {} needed", base.size(), kMinBaseline);
    return;
  }
  double mean = 0, var = 0;
  for (double x : base) mean += x;
  mean /= double(base.size());
  for (double x : base) var += (x - mean) * (x - mean);
  const double sd = std::sqrt(var / double(base.size() - 1));
  r.baseline_mean = r.series.log_scale ? std::exp(mean) : mean;
  const double x = value_of(r, c.median);
  r.change = relative(r, x, mean);
  r.noise_floor = std::fabs(relative(r, mean + 2 * sd, mean));
  for (const NoiseFloor& f : floors)
    if (f.series == s.label && f.metric == s.metric && f.machine == s.machine)
      r.calibrated_floor = noise_floor_of_median(f.cv, c.count);
  const bool calibrated = r.calibrated_floor > r.noise_floor;
  if (calibrated) r.noise_floor = r.calibrated_floor;
  const double n = double(base.size());
  const double t = sd > 0 ? (x - mean) / (sd * std::sqrt(1 + 1 / n)) : (x == mean ? 0.0 : INFINITY);
  r.pvalue = student_t_two_sided_p(t, n - 1);
  const bool bad = r.bigger_is_better ? r.change < 0 : r.change > 0;
  const bool large = std::fabs(r.change) >= o.threshold;
  const bool supported = r.pvalue <= o.gate_pvalue && std::fabs(r.change) > r.noise_floor;
  const std::string against = fmt::format("against {} commit(s), noise floor ±{:.1f} %{}", base.size(),
                                          100 * r.noise_floor, calibrated ? " (calibrated)" : "");
  if (!large) {
    r.verdict = TrackVerdict::track_ok;
    r.note = fmt::format("below the {:.1f} % threshold", 100 * o.threshold);
  } else if (supported) {
    bool expected = false;
    for (const Annotation& a : annotations)
      expected |= a.kind == AnnotationKind::annotation_expected && annotation_applies(a, s, c.commit);
    r.verdict = !bad       ? TrackVerdict::track_improved
                : expected ? TrackVerdict::track_acknowledged
                           : TrackVerdict::track_regressed;
    r.note = against + (expected ? "; annotated expected" : "");
    if (r.verdict == TrackVerdict::track_regressed && c.loaded == c.count) {
      r.verdict = TrackVerdict::track_inconclusive;
      r.note = fmt::format(
          "{}: every candidate run was taken on a busy host (load or CPU steal; see `show`): rerun it on a quiet "
          "machine",
          against);
    }
  } else if (bad) {
    r.verdict = TrackVerdict::track_inconclusive;
    r.note = std::fabs(r.change) <= r.noise_floor
                 ? fmt::format(
                       "{}: the change is within this series' own noise; more repetitions per commit "
                       "(a tighter median) or a quieter machine would settle it",
                       against)
                 : fmt::format("{}: p = {:.2g} > {:g}; more commits in the baseline or repetitions would settle it",
                               against, r.pvalue, o.gate_pvalue);
  } else {
    r.verdict = TrackVerdict::track_ok;
    r.note = "an improvement the data cannot support yet";
  }
}

// The reference case's veto (TrackOptions::reference): a regression the reference shows too, on
// the same machine and commit, is the machine's. The reference series are not gated.
void reference_veto(TrackReport& report, const std::string& reference) {
  std::vector<const TrackResult*> refs;
  for (const TrackResult& r : report.results)
    if (r.series.label.find(reference) != std::string::npos) refs.push_back(&r);
  if (refs.empty())
    DSGD_THROW(InputError, "pass text of a case label that `dsgd-bench history` lists",
               "track: no series matches the reference case '{}'", reference);
  for (TrackResult& r : report.results) {
    if (r.series.label.find(reference) != std::string::npos) {
      if (r.verdict == TrackVerdict::track_regressed || r.verdict == TrackVerdict::track_inconclusive) {
        report.regressed -= r.verdict == TrackVerdict::track_regressed;
        report.inconclusive -= r.verdict == TrackVerdict::track_inconclusive;
        r.note = fmt::format("the reference case ({:+.1f} %): not gated; it tells a slower machine from slower code",
                             100 * r.change);
        r.verdict = TrackVerdict::track_ok;
      }
      continue;
    }
    if (r.verdict != TrackVerdict::track_regressed) continue;
    for (const TrackResult* ref : refs) {
      if (ref->series.machine != r.series.machine || ref->candidate != r.candidate || ref->baseline_n == 0) continue;
      const bool same_direction = (ref->change > 0) == (r.change > 0);
      if (!same_direction || std::fabs(ref->change) < 0.5 * std::fabs(r.change)) continue;
      r.verdict = TrackVerdict::track_inconclusive;
      --report.regressed;
      ++report.inconclusive;
      r.note = fmt::format(
          "{}; but the reference case '{}' moved {:+.1f} % at this commit too: the machine changed, not the code "
          "(rerun both on a quiet machine)",
          r.note, ref->series.label, 100 * ref->change);
      break;
    }
  }
}

}  // namespace

bool annotation_applies(const Annotation& a, const HistorySeries& s, const std::string& commit) {
  return commit_matches(commit, a.commit) && (a.series.empty() || s.label.find(a.series) != std::string::npos) &&
         (a.metric.empty() || a.metric == s.metric);
}

const char* annotation_kind_text(AnnotationKind kind) {
  return enum_text(kAnnotationKinds, kind);
}

AnnotationKind annotation_kind_parse(const std::string& text) {
  if (const auto kind = enum_parse(kAnnotationKinds, text)) return *kind;
  DSGD_THROW(InputError, "pass --kind " + enum_known(kAnnotationKinds),
             "unknown annotation kind '{}' (expected: an acknowledged change; invalid: a broken measurement, hidden; "
             "outlier: kept in the output, left out of detection)",
             text);
}

int64_t annotation_add(Store& store, Annotation a) {
  if (a.commit.size() < 4)
    DSGD_THROW(InputError, "pass the commit's hash (at least 4 characters), as `git rev-parse HEAD` prints it",
               "annotation commit '{}' is too short to name one commit", a.commit);
  if (!a.metric.empty() && a.metric != kImportedMetric) a.metric = compare_metric_resolve(a.metric, "--metric");
  sqlite3* db = store.handle();
  SqlStatement insert(db,
                      "INSERT INTO annotations (created_at, git_commit, kind, series, metric, note) "
                      "VALUES (?, ?, ?, ?, ?, ?)");
  insert.bind_all(system_time_iso8601(), a.commit, std::string(annotation_kind_text(a.kind)), a.series, a.metric,
                  a.note);
  insert.run();
  return sqlite3_last_insert_rowid(db);
}

std::vector<Annotation> annotations_list(const Store& store) {
  std::vector<Annotation> out;
  if (store.user_version() < track_schema) return out;
  SqlStatement stmt(store.handle(),
                    "SELECT id, created_at, git_commit, kind, series, metric, note FROM annotations ORDER BY id");
  while (stmt.step()) {
    Annotation& a = out.emplace_back();
    a.id = stmt.column_int64(0);
    a.created_at = stmt.column_text(1);
    a.commit = stmt.column_text(2);
    a.kind = annotation_kind_parse(stmt.column_text(3));
    a.series = stmt.column_text(4);
    a.metric = stmt.column_text(5);
    a.note = stmt.column_text(6);
  }
  return out;
}

const char* track_verdict_text(TrackVerdict v) {
  return enum_text(kTrackVerdicts, v);
}

TrackReport track_run(Store& store, const TrackOptions& o) {
  if (!(o.threshold >= 0) || !(o.gate_pvalue > 0 && o.gate_pvalue <= 1) || o.baseline < kMinBaseline)
    DSGD_THROW(InputError,
               fmt::format("pass --threshold >= 0, --gate-pvalue in (0, 1] and --baseline >= {}", kMinBaseline),
               "track: threshold {}, gate p-value {}, baseline {}", o.threshold, o.gate_pvalue, o.baseline);
  const std::vector<Annotation> annotations = annotations_list(store);
  const std::vector<NoiseFloor> floors = noise_floors_list(store);
  TrackReport report;
  bool commit_seen = o.commit.empty();
  for (HistorySeries& s : history_load(store, o.history)) {
    TrackResult& r = report.results.emplace_back();
    r.series = std::move(s);
    r.bigger_is_better = r.series.bigger_is_better;
    exclude_annotated(r, annotations);
    history_detect(r.series, o.history.detect);
    if (o.record) record_changes(store, r.series);
    size_t candidate = r.series.points.size();
    for (size_t i = 0; i < r.series.points.size(); ++i)
      if (o.commit.empty() || commit_matches(r.series.points[i].commit, o.commit)) candidate = i;
    if (candidate == r.series.points.size()) {
      r.verdict = TrackVerdict::track_too_short;
      r.note = o.commit.empty() ? "no commits" : fmt::format("no run of commit {}", o.commit);
      continue;
    }
    commit_seen = true;
    gate(r, candidate, o, annotations, floors);
    if (r.verdict == TrackVerdict::track_too_short) continue;
    ++report.tested;
    report.regressed += r.verdict == TrackVerdict::track_regressed;
    report.inconclusive += r.verdict == TrackVerdict::track_inconclusive;
  }
  if (!commit_seen)
    DSGD_THROW(InputError, "pass a commit the selected series have runs of (dsgd-bench history lists them)",
               "track: no selected series has a run of commit '{}'", o.commit);
  if (!o.reference.empty()) reference_veto(report, o.reference);
  return report;
}

std::string track_table(const TrackReport& report, const TrackOptions& o) {
  std::string out;
  for (const TrackResult& r : report.results) {
    const HistorySeries& s = r.series;
    out += fmt::format("{}  [{}]\n  machine: {}\n", s.label, s.metric, s.machine);
    for (const ChangePoint& c : s.changes)
      out += fmt::format("  change point at {}: {}\n", history_short_commit(s.points[c.index].commit),
                         history_change_text(c));
    for (const Annotation& a : r.excluded)
      if (a.kind == AnnotationKind::annotation_outlier)
        out += fmt::format("  left out: {} (outlier{})\n", history_short_commit(a.commit),
                           a.note.empty() ? "" : ": " + a.note);
    if (r.candidate.empty() || r.verdict == TrackVerdict::track_too_short) {
      out += fmt::format("  {}: {}\n\n", track_verdict_text(r.verdict), r.note);
      continue;
    }
    out += fmt::format(
        "  {} ({} run(s)): median {:.5g} vs {:.5g} ({} mean of the baseline's medians), {:+.1f} % "
        "(p = {:.2g}) -> {}\n    {}\n\n",
        history_short_commit(r.candidate), r.candidate_runs, r.candidate_median, r.baseline_mean,
        r.series.log_scale ? "geometric" : "arithmetic", 100 * r.change, r.pvalue, track_verdict_text(r.verdict),
        r.note);
  }
  out += fmt::format("{} series tested: {} regressed, {} inconclusive\n", report.tested, report.regressed,
                     report.inconclusive);
  out += fmt::format("gate: threshold {:.1f} %, p <= {:g} against up to {} baseline commits{}; detector: {}\n",
                     100 * o.threshold, o.gate_pvalue, o.baseline,
                     o.reference.empty() ? "" : fmt::format(", reference case '{}'", o.reference),
                     history_parameters_text(o.history));
  return out;
}

nlohmann::json track_json(const TrackReport& report, const TrackOptions& o) {
  nlohmann::json all = nlohmann::json::array();
  for (const TrackResult& r : report.results) {
    nlohmann::json changes = nlohmann::json::array();
    for (const ChangePoint& c : r.series.changes)
      changes.push_back({{"commit", r.series.points[c.index].commit},
                         {"relative_change", c.relative_change},
                         {"pvalue", c.pvalue},
                         {"confirmed", c.confirmed}});
    all.push_back({{"case", r.series.label},
                   {"metric", r.series.metric},
                   {"machine", r.series.machine},
                   {"candidate", r.candidate},
                   {"candidate_runs", r.candidate_runs},
                   {"candidate_median", r.candidate_median},
                   {"baseline_commits", r.baseline_n},
                   {"baseline_mean", r.baseline_mean},
                   {"noise_floor", r.noise_floor},
                   {"calibrated_floor", r.calibrated_floor},
                   {"candidate_busy_runs", r.candidate_busy},
                   {"relative_change", r.change},
                   {"pvalue", r.pvalue},
                   {"verdict", track_verdict_text(r.verdict)},
                   {"note", r.note},
                   {"change_points", changes}});
  }
  return {{"series", all},
          {"tested", report.tested},
          {"regressed", report.regressed},
          {"inconclusive", report.inconclusive},
          {"gate", {{"threshold", o.threshold}, {"gate_pvalue", o.gate_pvalue}, {"baseline", o.baseline}}},
          {"detector", history_parameters_text(o.history)}};
}

}  // namespace dsgd
