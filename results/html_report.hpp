// The self-contained HTML report: one file, no network (no CDN, no external script,
// font or image), charts as inline SVG drawn here, and a few lines of inline JavaScript
// (legend toggles; an error trap the headless-Chromium test reads). Sections: context,
// with --history the trend charts of the stored history (results/html_history.hpp), the run
// table (the `runs` report rows), the configurations (repetitions grouped, faceted and sorted
// by what varies, pivot heatmaps: results/html_group_charts.hpp), the time breakdown per
// configuration (stacked bars), convergence
// (training loss per step; test loss and accuracy against training time and steps),
// scaling (throughput and efficiency against workers, for runs that differ only in
// workers), validations (predicted vs measured, when the database has a non-empty
// `validations` table), tuning (the dsgd-tune sessions the runs are trials of:
// results/report_tuning.hpp), then one section per further table given to the printer. Light
// and dark mode follow prefers-color-scheme.
// Size: every chart draws at most max_points_per_chart points, shared among its lines,
// each line reduced by LTTB (results/html_downsample.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "results/html_history.hpp"
#include "results/html_run_groups.hpp"
#include "results/report_printer.hpp"
#include "results/report_rows.hpp"
#include "results/report_tuning.hpp"
#include "results/store.hpp"

namespace dsgd {

struct HtmlRunData {
  RunWithSummary run;
  std::vector<EvalRow> evals;
  // Training loss per step: the mean over ranks of steps.train_loss, in step order.
  std::vector<double> loss_steps, loss_values;
};

// A table of the database shown as it is (the validations written by `dsgd-bench validate`).
struct HtmlGenericTable {
  std::vector<std::string> columns;
  std::vector<std::vector<ReportValue>> rows;
};

struct HtmlReportInput {
  ReportContext context;
  std::vector<HtmlRunData> runs;
  HtmlGenericTable validations;  // empty: the section is left out
  TuningReport tuning;           // tuner sessions of the runs (results/report_tuning.hpp); none: left out
  // Tables handed to the printer (html_report_printer): a `runs` table is the run table's
  // source (default: report_runs_table of `runs`); any other table is a section of its own,
  // after the validations (a report section such as a tuning session's trials).
  std::optional<ReportTable> runs_table;
  std::vector<ReportTable> sections;
  // --history: the trend charts of the stored history (results/html_history.hpp); none: left out.
  std::optional<HtmlHistoryInput> history;
  // Which knobs each algorithm reads (the tables leave the others out); null: every knob.
  HtmlKnobApplies knob_applies;
};

struct HtmlReportOptions {
  size_t max_points_per_chart = 60000;
  size_t min_points_per_line = 16;
};

// Reads what the report needs for `runs` from the store: evaluations, the per-step mean
// training loss, and the validations table when it exists (sqlite_master) and has rows.
HtmlReportInput html_report_load(const Store& store, const std::vector<RunWithSummary>& runs,
                                 const ReportContext& context);

void html_report_write(std::ostream& out, const HtmlReportInput& input, const HtmlReportOptions& options = {});

// A chart drawn as every chart of the report (inline SVG, LTTB-reduced to the options' points,
// legend toggles), for sections written in other files (results/report_tuning.cpp). A series
// without `line` is drawn as points only (a scatter); `color` indexes the report's palette.
struct HtmlSeries {
  std::string id, label;
  size_t color = 0;
  bool line = true;
  std::vector<double> x, y;  // x ascending for a line
};
struct HtmlChart {
  std::string id, title, x_label, y_label;
  std::vector<HtmlSeries> series;
  bool y_from_zero = false;
  bool markers = false;    // points on the lines too
  bool x_integer = false;  // x is a count (seeds): integer ticks only
};
std::string html_chart(const HtmlChart& chart, const HtmlReportOptions& options);
// The html printer (results/report_printer.hpp): the charts from `input`, the context from
// begin(), the tables from rows(); end() writes the document.
std::unique_ptr<ReportPrinter> html_report_printer(std::ostream& out, HtmlReportInput input,
                                                   const HtmlReportOptions& options = {});

// HTML-escapes &, <, >, " and '.
std::string html_escape(const std::string& text);

// Tick positions for an axis over [lo, hi]: multiples of 1, 2 or 5 x 10^k, about `count`.
std::vector<double> html_axis_ticks(double lo, double hi, int count);

}  // namespace dsgd
