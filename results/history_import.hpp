// History from elsewhere (`dsgd-bench track import`; docs/reports.md, "Importing history"): a
// plain CSV (series,commit,date,value[,unit]) or github-action-benchmark's data.js / JSON,
// parsed into points, stored in the imported_points table (schema v17), and read back as
// series of the pseudo-metric `imported` that `history`, `track` and the report treat like
// any other: the same detector, gate and charts, on a team's years of existing history.
//
// A series is one name (CSV: its first column; github-action-benchmark: "suite/benchmark") on
// one machine (--machine at import; "imported" by default). Several values of one series and
// commit are repetitions. Points are ordered by date, then file order. Whether bigger is better
// comes from github-action-benchmark's tool (customBiggerIsBetter / customSmallerIsBetter) or
// else from the unit: a rate ("ops/sec", "iter/s", "tx/s", "GB/s", "Hz") is bigger-is-better,
// anything else (a time, bytes) smaller-is-better; --bigger-is-better overrides both.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "results/history.hpp"
#include "results/store.hpp"

namespace dsgd {

// The pseudo-metric that selects imported series in history, track and report --history.
inline constexpr const char* kImportedMetric = "imported";

struct ImportedPoint {
  std::string series;
  std::string commit;
  std::string date;  // as given (ISO 8601 recommended: it orders the points)
  double value = 0;
  std::string unit;
  bool bigger_is_better = false;
};

struct ImportOptions {
  std::string format = "auto";  // auto | csv | gab (github-action-benchmark)
  std::string machine = "imported";
  std::optional<bool> bigger_is_better;  // overrides the tool / unit rule
};

struct ImportSummary {
  size_t points = 0;      // read from the file
  size_t added = 0;       // stored now
  size_t duplicates = 0;  // already stored (an import is idempotent)
  size_t series = 0;      // distinct series in the file
};

// Whether a unit reads as a rate (bigger is better): it ends in "/s", "/sec", "/second", or
// is "Hz" or a multiple of it.
bool unit_bigger_is_better(const std::string& unit);

// The points of a file's text. `name` is used in messages. Throws InputError naming the line
// (CSV) or the JSON path (gab) of anything malformed: a missing field, a value that is not a
// finite number, an empty series or commit, an unknown format, no points at all.
std::vector<ImportedPoint> history_import_parse(const std::string& text, const std::string& name,
                                                const ImportOptions& options);

// Stores the points (one transaction: all or nothing). A point already stored (same series,
// machine, commit, date, value and repetition) is skipped, so importing a file twice adds
// nothing.
ImportSummary history_import_store(Store& store, const std::vector<ImportedPoint>& points, const ImportOptions& options,
                                   const std::string& source);

// The imported series, filtered by options.case_filter / machine_filter, change points
// detected; none in a database older than schema v17.
std::vector<HistorySeries> history_imported_series(const Store& store, const HistoryOptions& options);

}  // namespace dsgd
