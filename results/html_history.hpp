// The HTML report's history section (`dsgd-bench report --format html --history`): the series
// of `dsgd-bench history` (results/history.hpp) drawn as trend charts, one per case and
// machine, in a grid. Per chart: x is the commit order (short commit, its date on hover), each
// commit's median with an IQR whisker and a faint dot per repetition, the mean of each segment
// between change points as a step line with a band of its spread, each change point marked
// with its change and p-value, the users' annotations (`dsgd-bench track annotate`) as
// vertical lines with their note, and the detector's parameters. Beside it, where the runs
// have a time breakdown, the per-commit medians of compute, comm and wait stacked. A
// "regressions only" checkbox (CSS only: the page needs no script) hides the cases without a
// change point in the metric's bad direction. A y axis is logarithmic when the series spans
// more than a decade.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "results/history.hpp"
#include "results/store.hpp"
#include "results/track.hpp"

namespace dsgd {

struct HtmlHistoryInput {
  HistoryOptions options;
  std::vector<HistorySeries> series;     // as `dsgd-bench history` builds them
  std::vector<Annotation> annotations;   // every stored annotation; each chart draws those that apply
  std::map<int64_t, Summary> summaries;  // by run id: the runs of the points (the time breakdown)
};

// Everything the section draws, read from the store exactly as `dsgd-bench history` reads it
// (the one place that loads it: swap it here to change where history comes from).
HtmlHistoryInput html_history_load(const Store& store, const HistoryOptions& options);

// Whether the series has a change point in its metric's bad direction (slower, less
// throughput, lower accuracy, ...).
bool html_history_regressed(const HistorySeries& series);

// One series' trend chart (a <figure> with an inline SVG); `id` names it in the page.
std::string html_history_chart(const HistorySeries& series, const std::vector<Annotation>& annotations,
                               const HistoryOptions& options, const std::string& id);

// The per-commit medians of compute, comm and wait of the series' runs, stacked; empty when no
// run of the series has a time breakdown.
std::string html_history_breakdown_chart(const HistorySeries& series, const std::map<int64_t, Summary>& summaries,
                                         const std::string& id);

// The whole section: the filter, the grid of cases, the parameters.
std::string html_history_section(const HtmlHistoryInput& input);

}  // namespace dsgd
