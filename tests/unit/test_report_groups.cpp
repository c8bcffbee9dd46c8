// Tests of the HTML report's configurations: repetitions grouped (median, IQR, n, statuses), the
// knobs that vary and the facet, the knobs each algorithm reads, the pivot knobs, and the axes
// (log only over decades).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "results/html_group_charts.hpp"
#include "results/html_report.hpp"
#include "results/html_run_groups.hpp"
#include "results/html_scale.hpp"
#include "stored_runs.hpp"

namespace dsgd {
namespace {

using testing::report_run;

bool period_applies(const std::string& algorithm, const std::string& knob) {
  return knob != "period" || algorithm != "ssgd";
}

TEST(ReportGroups, RepetitionsAreOneGroupWithMedianIqrAndN) {
  std::vector<RunWithSummary> runs;
  // localsgd H=8 b=64: 5 repetitions (one stopped at a budget, left out of the medians).
  const double values[] = {100, 140, 120, 110, 130};
  for (uint64_t seed = 0; seed < 5; ++seed) runs.push_back(report_run(1 + seed, "localsgd", 8, 64, values[seed], seed));
  runs.push_back(report_run(6, "localsgd", 8, 64, 0, 9, RunStatus::run_stopped));
  runs.push_back(report_run(7, "ssgd", 1, 64, 50, 0));
  runs.push_back(report_run(8, "ssgd", 1, 64, 70, 1));
  const HtmlRunGrouping g = html_group_runs(runs, period_applies);
  ASSERT_EQ(g.groups.size(), 2u);
  // Sorted by what varies (the algorithm): localsgd, then ssgd.
  const HtmlRunGroup& local = g.groups[0];
  EXPECT_EQ(local.knobs.at("algorithm"), "localsgd");
  EXPECT_EQ(local.members.size(), 6u);
  EXPECT_EQ(local.throughput.n, 5u);
  EXPECT_DOUBLE_EQ(local.throughput.median, 120);
  EXPECT_DOUBLE_EQ(local.throughput.q25, 110);
  EXPECT_DOUBLE_EQ(local.throughput.q75, 130);
  EXPECT_EQ(local.statuses.at("stopped"), 1u);
  EXPECT_EQ(local.statuses.count("interrupted"), 0u);
  const HtmlRunGroup& ssgd = g.groups[1];
  EXPECT_EQ(ssgd.throughput.n, 2u);
  EXPECT_DOUBLE_EQ(ssgd.throughput.median, 60);
  // ssgd reads no period: the knob is absent (shown as ·), localsgd's is 8.
  EXPECT_EQ(ssgd.knobs.count("period"), 0u);
  EXPECT_EQ(local.knobs.at("period"), "8");
}

TEST(ReportGroups, VaryingKnobsFacetSortAndPivot) {
  std::vector<RunWithSummary> runs;
  int64_t id = 1;
  // localsgd over H x batch (H out of order, 16 before 4), and ssgd over batch.
  for (int64_t h : {16, 4})
    for (int64_t b : {256, 32}) runs.push_back(report_run(id++, "localsgd", h, b, 1000.0 * b / h, 0));
  for (int64_t b : {256, 32}) runs.push_back(report_run(id++, "ssgd", 1, b, 10.0 * b, 0));
  const HtmlRunGrouping g = html_group_runs(runs, period_applies);
  ASSERT_EQ(g.groups.size(), 6u);
  EXPECT_EQ(g.varying, (std::vector<std::string>{"algorithm", "period", "batch"}));
  EXPECT_EQ(g.facet, "algorithm");
  // Numbers sort numerically: H 4 before 16, batch 32 before 256.
  EXPECT_EQ(g.groups[0].knobs.at("period"), "4");
  EXPECT_EQ(g.groups[0].knobs.at("batch"), "32");
  EXPECT_EQ(g.groups[1].knobs.at("batch"), "256");
  EXPECT_EQ(g.groups[2].knobs.at("period"), "16");
  EXPECT_EQ(html_group_short_label(g.groups[0], g), "H=4 b=32");
  const auto facets = html_group_facets(g);
  ASSERT_EQ(facets.size(), 2u);
  EXPECT_EQ(facets[0].first, "localsgd");
  EXPECT_EQ(facets[0].second.size(), 4u);
  // Two knobs vary within localsgd (H x batch): a pivot; one within ssgd: none.
  const auto pivot = html_group_pivot(g, facets[0].second);
  ASSERT_TRUE(pivot.has_value());
  EXPECT_EQ(pivot->rows, "period");
  EXPECT_EQ(pivot->cols, "batch");
  EXPECT_TRUE(pivot->rest.empty());
  EXPECT_FALSE(html_group_pivot(g, facets[1].second).has_value());
  const std::string html = html_configurations_section(g);
  EXPECT_NE(html.find("<table class=\"heatmap\" data-rows=\"period\" data-cols=\"batch\""), std::string::npos);
  // The localsgd facet's throughputs span 2,000 .. 64,000 samples/s: a log axis.
  EXPECT_NE(html.find("id=\"groups-throughput-0\"><figcaption>Throughput (samples/s): median per configuration, "
                      "IQR whisker, n runs; log scale"),
            std::string::npos);
  EXPECT_NE(html.find("data-n=\"1\" data-median=\"8000\""), std::string::npos);
  EXPECT_EQ(html.find("interrupted"), std::string::npos);
}

TEST(ReportGroups, AThirdVaryingKnobGivesOneHeatmapPerValue) {
  std::vector<RunWithSummary> runs;
  int64_t id = 1;
  for (int workers : {16, 4})
    for (int64_t h : {4, 16})
      for (int64_t b : {32, 256}) {
        RunWithSummary r = report_run(id++, "localsgd", h, b, 100.0 * workers, 0);
        r.run.workers = workers;
        runs.push_back(r);
      }
  const HtmlRunGrouping g = html_group_runs(runs, period_applies);
  EXPECT_TRUE(g.facet.empty());  // only numeric knobs vary: no facet
  const auto pivot = html_group_pivot(g, html_group_facets(g).at(0).second);
  ASSERT_TRUE(pivot.has_value());
  EXPECT_EQ(pivot->rest, std::vector<std::string>{"workers"});
  const std::string html = html_configurations_section(g);
  EXPECT_NE(html.find("median: H × batch, workers=4</figcaption>"), std::string::npos);
  EXPECT_NE(html.find("median: H × batch, workers=16</figcaption>"), std::string::npos);
  EXPECT_LT(html.find("workers=4</figcaption>"), html.find("workers=16</figcaption>"));  // sorted numerically
  // A further differing setting ("other") splits heatmaps, never makes an axis of one.
  std::vector<RunWithSummary> scaled = {runs[0], runs[0]};  // H 4 and 16, compute-scale 1 and 1.3
  scaled[1].run.config_json = R"({"algo":"localsgd","period":16,"batch":32,"compute-scale":1.3})";
  scaled[1].run.period = 16;
  const HtmlRunGrouping two = html_group_runs(scaled, period_applies);
  EXPECT_EQ(two.groups.at(1).knobs.at("other"), "compute-scale=1.3");
  EXPECT_FALSE(html_group_pivot(two, html_group_facets(two).at(0).second).has_value());
}

TEST(ReportGroups, LogScaleOnlyOverDecades) {
  EXPECT_FALSE(html_range_spans_decades(1, 9.9));
  EXPECT_TRUE(html_range_spans_decades(1, 10.5));
  EXPECT_FALSE(html_range_spans_decades(0, 1000));  // not positive
  const HtmlAxisScale log = html_axis_scale(0.003, 40, 5, true);
  EXPECT_TRUE(log.log);
  EXPECT_DOUBLE_EQ(log.lo, 0.001);
  EXPECT_DOUBLE_EQ(log.hi, 100);
  EXPECT_NEAR(log.fraction(1), 0.6, 1e-12);
  const HtmlAxisScale lin = html_axis_scale(3, 9, 5, true);
  EXPECT_FALSE(lin.log);
  EXPECT_LE(lin.lo, 3);
  EXPECT_GE(lin.hi, 9);
  // One value, up to rounding (quartiles of one repetition): padded, ticks that differ.
  const HtmlAxisScale one = html_axis_scale(3.386469e-06, 3.386469e-06 * (1 + 1e-15), 5, true);
  EXPECT_GE(one.ticks.size(), 2u);
  EXPECT_LT(one.lo, 3.3e-06);
  const std::vector<std::string> texts = html_tick_texts(one.ticks);
  EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(), texts.size());
  EXPECT_LE(texts.front().size(), 7u) << texts.front();
  // Large values in thousands or millions, one suffix per axis.
  EXPECT_EQ(html_tick_texts({0, 2e7, 4e7}), (std::vector<std::string>{"0", "20M", "40M"}));
  EXPECT_EQ(html_tick_texts({5000, 10000, 15000}), (std::vector<std::string>{"5k", "10k", "15k"}));
  EXPECT_EQ(html_tick_texts({0.01, 1, 100, 10000}), (std::vector<std::string>{"0.01", "1", "100", "10000"}));
  EXPECT_EQ(html_compact_text(13054321), "13.05M");
  EXPECT_EQ(html_compact_text(0.0123), "0.0123");
}

}  // namespace
}  // namespace dsgd
