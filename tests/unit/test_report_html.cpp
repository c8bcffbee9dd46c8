// Tests of the HTML report: LTTB downsampling (bounds, kept extremes, NaN handling), axis
// ticks, the document's self-containedness (no network reference of any kind), the
// sections that appear only with their data (scaling, validations), loading from a store
// with and without a `validations` table, and the size bound of a 1,000-run x 10,000-step
// report (< 5 MB; its render time is printed here and measured in bench/bench_report.cpp): one
// median line per configuration when there are more runs than a legend holds, else one line
// per run within the point budget.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>

#include "results/html_downsample.hpp"
#include "results/html_report.hpp"
#include "results/store.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

TEST(Lttb, BoundsAndExtremes) {
  std::vector<double> x, y;
  for (int i = 0; i < 10000; ++i) {
    x.push_back(i);
    y.push_back(std::sin(i * 0.01));
  }
  y[5000] = 50;  // a spike
  const std::vector<size_t> kept = lttb_indices(x, y, 100);
  ASSERT_EQ(kept.size(), 100u);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), 9999u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_NE(std::find(kept.begin(), kept.end(), 5000u), kept.end()) << "the spike was dropped";
  // A spike off the every-k-th grid survives too (every-100th sampling would drop it).
  y[7777] = -50;
  const std::vector<size_t> again = lttb_indices(x, y, 100);
  EXPECT_NE(std::find(again.begin(), again.end(), 7777u), again.end());
}

TEST(Lttb, ShortAndNonFinite) {
  const std::vector<double> x = {0, 1, 2, 3, 4}, y = {1, NAN, 3, INFINITY, 5};
  EXPECT_EQ(lttb_indices(x, y, 10), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(lttb_indices(x, y, 2), (std::vector<size_t>{0, 4}));
  EXPECT_TRUE(lttb_indices({}, {}, 10).empty());
}

TEST(AxisTicks, NiceSteps) {
  EXPECT_EQ(html_axis_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  const auto t = html_axis_ticks(3, 97, 5);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.front(), 20);
  EXPECT_EQ(t[1] - t[0], 20);
  EXPECT_TRUE(html_axis_ticks(1, 1, 5).empty());
}

HtmlRunData make_run(int64_t id, int workers, double throughput, size_t steps) {
  HtmlRunData d;
  RunRecord& r = d.run.run;
  r.id = id;
  r.status = RunStatus::run_completed;
  r.workload = "svm";
  r.dataset = "fashion-mnist";
  r.algorithm = "ssgd";
  r.workers = workers;
  r.batch = 64;
  r.steps = static_cast<int64_t>(steps);
  r.tag = "t<&>\"" + std::to_string(id);
  r.host = "node1";
  r.cpu_model = "cpu";
  r.config_json = fmt::format(R"({{"workers": {}, "lr": 0.05, "topology": "complete"}})", workers);
  Summary s;
  s.throughput_samples_per_s = throughput;
  s.step_time_s = 0.01;
  s.compute_s = 0.006;
  s.comm_s = 0.002;
  s.wait_s = 0.001;
  s.data_s = 0.0005;
  s.overlap_s = 0.001;
  s.injected_s = 0.0005;
  s.timed_steps = static_cast<int64_t>(steps);
  s.final_test_acc = 0.8;
  d.run.summary = s;
  for (size_t step = 0; step < steps; ++step) {
    d.loss_steps.push_back(static_cast<double>(step));
    d.loss_values.push_back(2.0 / (1.0 + 0.001 * static_cast<double>(step)) +
                            0.05 * std::sin(static_cast<double>(step + id)));
  }
  for (size_t e = 0; e <= 10; ++e) {
    const double step = static_cast<double>(steps) * static_cast<double>(e) / 10.0;
    d.evals.push_back({static_cast<int64_t>(step), step * 0.01, 1.0 / (1 + e), 1.1 / (1 + e),
                       0.5 + 0.03 * static_cast<double>(e), std::nullopt});
  }
  return d;
}

std::string render(const HtmlReportInput& input, const HtmlReportOptions& options = {}) {
  std::ostringstream out;
  html_report_write(out, input, options);
  return out.str();
}

TEST(HtmlReport, SelfContainedWithSections) {
  HtmlReportInput input;
  input.context.generated_at = "2026-11-30T00:00:00Z";
  input.context.selection = "all runs";
  input.runs = {make_run(1, 1, 1000, 200), make_run(2, 2, 1900, 200), make_run(3, 4, 3400, 200)};
  const std::string html = render(input);
  // No network: no URL scheme, no external script / stylesheet / image / font.
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // Dark mode, the sections, and escaping of the tag's markup characters.
  EXPECT_NE(html.find("prefers-color-scheme: dark"), std::string::npos);
  for (const char* id : {"id=\"breakdown\"", "id=\"loss-steps\"", "id=\"test-acc-time\"", "id=\"test-loss-steps\"",
                         "id=\"scaling-throughput\"", "id=\"scaling-efficiency\"", "<h2>Context</h2>"})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_NE(html.find("t&lt;&amp;&gt;&quot;1"), std::string::npos);
  EXPECT_EQ(html.find("t<&>"), std::string::npos);
  EXPECT_EQ(html.find("Validations"), std::string::npos);
  // Efficiency of the 4-worker point: 3400 / (4 x 1000) = 0.85, drawn as a marker title.
  EXPECT_NE(html.find("(4, 0.85)"), std::string::npos);
}

TEST(HtmlReport, NoScalingWhenWorkersAreEqual) {
  HtmlReportInput input;
  input.runs = {make_run(1, 2, 1000, 50), make_run(2, 2, 1100, 50)};
  const std::string html = render(input);
  EXPECT_EQ(html.find("id=\"scaling-throughput\""), std::string::npos);
  EXPECT_NE(html.find("No runs that differ only in their number of workers"), std::string::npos);
}

TEST(HtmlReport, ValidationsRenderWhenPresent) {
  HtmlReportInput input;
  input.runs = {make_run(1, 2, 1000, 50)};
  input.validations.columns = {"run_id", "metric", "predicted_step_time_s", "measured_step_time_s"};
  input.validations.rows = {
      {ReportValue{int64_t{1}}, ReportValue{std::string("step")}, ReportValue{0.01}, ReportValue{0.011}},
      {ReportValue{int64_t{2}}, ReportValue{std::string("step")}, ReportValue{0.02}, ReportValue{0.019}}};
  const std::string html = render(input);
  EXPECT_NE(html.find("Validations: predicted vs measured"), std::string::npos);
  EXPECT_NE(html.find("id=\"validation-0\""), std::string::npos);
  EXPECT_NE(html.find("class=\"diag\""), std::string::npos);
}

TEST(HtmlReport, LoadsValidationsOnlyWhenTheTableHasRows) {
  const fs::path dir = fs::temp_directory_path() / ("report_html_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  int64_t id = 0;
  {
    Store store = Store::open(db);
    RunRecord r;
    r.workload = "svm";
    r.algorithm = "ssgd";
    r.workers = 1;
    r.batch = 8;
    r.config_json = "{}";
    id = store.run_begin(r);
    StepRow a, b;
    a.rank = 0;
    b.rank = 1;
    a.step = b.step = 5;
    a.train_loss = 1.0;
    b.train_loss = 3.0;
    store.steps_append(id, {a, b});
    store.run_finish(id, RunStatus::run_completed, "");
  }
  {
    Store store = Store::open_readonly(db);
    const HtmlReportInput input = html_report_load(store, store.runs_list(0), ReportContext{});
    ASSERT_EQ(input.runs.size(), 1u);
    EXPECT_EQ(input.runs[0].loss_steps, (std::vector<double>{5}));
    EXPECT_EQ(input.runs[0].loss_values, (std::vector<double>{2.0}));  // mean over ranks
    EXPECT_TRUE(input.validations.rows.empty());
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  // Validations as `dsgd-bench validate` stores them (results/validation_store.hpp):
  // the tables exist from schema v5 on, so an empty pair leaves the section out.
  sqlite3_close(raw);
  {
    Store store = Store::open_readonly(db);
    EXPECT_TRUE(html_report_load(store, store.runs_list(0), ReportContext{}).validations.rows.empty());
  }
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(raw,
                   "INSERT INTO validations (id, created_at, config_json) VALUES (1, '2026-11-30T00:00:00Z', '{}');"
                   "INSERT INTO validation_metrics VALUES (1, 'step_time_s', 0.55, 0.5, 0.0909);"
                   "INSERT INTO validation_metrics VALUES (1, 'comm_s', 0.2, 0.25, 0.25);",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);
  {
    Store store = Store::open_readonly(db);
    const HtmlReportInput input = html_report_load(store, store.runs_list(0), ReportContext{});
    ASSERT_EQ(input.validations.rows.size(), 1u);
    const auto& cols = input.validations.columns;
    const auto at = [&](const char* name) {
      return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
    };
    ASSERT_LT(at("predicted_step_time_s"), cols.size());
    EXPECT_DOUBLE_EQ(std::get<double>(input.validations.rows[0][at("predicted_step_time_s")]), 0.5);
    EXPECT_DOUBLE_EQ(std::get<double>(input.validations.rows[0][at("measured_step_time_s")]), 0.55);
    const std::string html = render(input);
    EXPECT_NE(html.find("measured_step_time_s vs predicted_step_time_s"), std::string::npos);
  }
  fs::remove_all(dir);
}

TEST(HtmlReport, ThousandRunsOfTenThousandStepsStayUnderFiveMegabytes) {
  HtmlReportInput input;
  input.runs.reserve(1000);
  for (int64_t i = 0; i < 1000; ++i)
    input.runs.push_back(make_run(i + 1, 1 + static_cast<int>(i % 4), 1000 + i, 10000));
  const auto start = std::chrono::steady_clock::now();
  const std::string html = render(input);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("1000 runs x 10000 steps: %.2f MB of HTML in %.2f s (timing informational; see bench_report)\n",
              static_cast<double>(html.size()) / 1e6, seconds);
  EXPECT_LT(html.size(), 5u * 1000 * 1000);
  // 4 configurations (1-4 workers) of 250 runs: one median line each, of every step (10,000 <=
  // 60000 / 4 points).
  const size_t chart = html.find("id=\"loss-steps\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string loss_chart = html.substr(chart, html.find("</figure>", chart) - chart);
  size_t paths = 0;
  for (size_t at = 0; (at = loss_chart.find("<path", at)) != std::string::npos; ++at) ++paths;
  EXPECT_EQ(paths, 4u);
  const size_t path = loss_chart.find("<path");
  const std::string d = loss_chart.substr(path, loss_chart.find("</path>", path) - path);
  EXPECT_EQ(static_cast<size_t>(std::count(d.begin(), d.end(), ',')), 10000u) << d.substr(0, 200);
  EXPECT_NE(d.find("<title>svm ssgd w1 "), std::string::npos) << "not the configuration's median line";
}

TEST(HtmlReport, ThousandConfigurationsShareThePointBudget) {
  HtmlReportInput input;
  input.runs.reserve(1000);
  for (int64_t i = 0; i < 1000; ++i) {
    input.runs.push_back(make_run(i + 1, 1 + static_cast<int>(i % 4), 1000 + i, 10000));
    input.runs.back().run.run.config_json = fmt::format(R"({{"lr": {}}})", 0.001 * static_cast<double>(i + 1));
  }
  const std::string html = render(input);
  EXPECT_LT(html.size(), 5u * 1000 * 1000);
  // Every run its own configuration: one line per run, each at most 60000 / 1000 = 60 points.
  const size_t chart = html.find("id=\"loss-steps\"");
  ASSERT_NE(chart, std::string::npos);
  const size_t path = html.find("<path", chart);
  const size_t end = html.find("</path>", path);
  const std::string d = html.substr(path, end - path);
  EXPECT_EQ(static_cast<size_t>(std::count(d.begin(), d.end(), ',')), 60u) << d.substr(0, 200);
}

}  // namespace
}  // namespace dsgd
