// Tests of the HTML report's history trend charts: a change point marked at its commit with its
// change, the detector's parameters stamped, medians per commit, annotations that apply (and
// not another metric's), a log axis for a series spanning decades, the regressions-only filter
// and the compute / comm / wait chart.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "results/html_history.hpp"
#include "results/html_report.hpp"
#include "stored_runs.hpp"

namespace dsgd {
namespace {

using testing::report_run;

HistorySeries series_with_change() {
  std::vector<RunWithSummary> runs;
  int64_t id = 1;
  for (int c = 0; c < 12; ++c)
    for (int rep = 0; rep < 3; ++rep) {
      RunWithSummary r = report_run(id++, "ssgd", 1, 64, 0, static_cast<uint64_t>(rep));
      r.run.git_commit = "commit" + std::to_string(c);
      r.run.created_at = fmt::format("2026-12-01T00:{:02d}:00Z", c);
      r.summary->step_time_s = (c >= 7 ? 1.3 : 1.0) * 0.010 * (1 + 0.01 * (rep - 1));
      r.summary->throughput_samples_per_s = 256 / r.summary->step_time_s;
      runs.push_back(r);
    }
  HistoryOptions o;
  std::vector<HistorySeries> series = history_build(runs, o);
  EXPECT_EQ(series.size(), 1u);
  return series.at(0);
}

TEST(ReportHistory, ChangePointMarkedAtItsCommitWithItsChange) {
  const HistorySeries s = series_with_change();
  ASSERT_EQ(s.changes.size(), 1u);
  ASSERT_EQ(s.points[s.changes[0].index].commit, "commit7");
  HistoryOptions o;
  const std::string chart = html_history_chart(s, {}, o, "h0");
  EXPECT_NE(chart.find("<g class=\"cp bad\" data-commit=\"commit7\">"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">+30.0 % (p = "), std::string::npos);
  EXPECT_EQ(chart.find("class=\"cp bad\" data-commit=\"commit6\""), std::string::npos);
  EXPECT_NE(chart.find(html_escape(history_parameters_text(o))), std::string::npos);
  EXPECT_NE(chart.find("data-scale=\"linear\""), std::string::npos);  // 0.0099 .. 0.0131: not a decade
  // 12 medians with their whiskers, 36 repetitions.
  size_t medians = 0;
  for (size_t at = 0; (at = chart.find("class=\"med\"", at)) != std::string::npos; ++at) ++medians;
  EXPECT_EQ(medians, 12u);
  EXPECT_TRUE(html_history_regressed(s));
}

TEST(ReportHistory, AnnotationsLogAxisAndTheFilter) {
  HistorySeries s = series_with_change();
  Annotation expected;
  expected.commit = "commit7";
  expected.kind = AnnotationKind::annotation_expected;
  expected.note = "bigger model on purpose";
  Annotation other_metric = expected;
  other_metric.commit = "commit3";
  other_metric.metric = "throughput_samples_per_s";
  const std::string chart = html_history_chart(s, {expected, other_metric}, HistoryOptions{}, "h0");
  EXPECT_NE(chart.find("<g class=\"ann ann-expected\" data-commit=\"commit7\">"), std::string::npos);
  EXPECT_NE(chart.find("bigger model on purpose"), std::string::npos);
  EXPECT_EQ(chart.find("data-commit=\"commit3\"><line"), std::string::npos) << "another metric's annotation";
  // Medians from 1 ms to 1 s: a log axis.
  for (size_t i = 0; i < s.points.size(); ++i) {
    const double v = i < 6 ? 0.001 : 1.0;
    s.points[i].median = s.points[i].q25 = s.points[i].q75 = v;
    s.points[i].values = {v};
  }
  EXPECT_NE(html_history_chart(s, {}, HistoryOptions{}, "h1").find("data-scale=\"log\""), std::string::npos);
  // The section: one case marked regressed for the CSS filter; a steady one not.
  HtmlHistoryInput input;
  input.series = {series_with_change(), series_with_change()};
  input.series[1].changes.clear();
  for (int64_t id = 1; id <= 36; ++id) {
    Summary& summary = input.summaries[id];
    summary.timed_steps = 90;
    summary.compute_s = 0.006;
    summary.comm_s = 0.003;
    summary.wait_s = 0.001;
  }
  const std::string section = html_history_section(input);
  EXPECT_NE(section.find("id=\"regressions-only\""), std::string::npos);
  size_t regressed = 0;
  for (size_t at = 0; (at = section.find("<div class=\"case\" data-regressed=\"1\">", at)) != std::string::npos; ++at)
    ++regressed;
  EXPECT_EQ(regressed, 1u);
  EXPECT_NE(section.find("id=\"history-breakdown-0\""), std::string::npos);  // the runs' compute / comm / wait
  // A series of one commit is a line, not an empty chart.
  input.series[1].points.resize(1);
  input.series[1].changes.clear();
  const std::string short_section = html_history_section(input);
  EXPECT_NE(short_section.find("One commit so far (commit0, median 0.01, n = 3): no trend to draw."),
            std::string::npos);
  EXPECT_EQ(short_section.find("id=\"history-breakdown-1\""), std::string::npos);
}

}  // namespace
}  // namespace dsgd
