// History brought in from elsewhere and the noise floors of an A/A calibration
// (results/history_import.hpp, results/noise_floor.hpp): CSV with a header, comments, quotes and
// repetitions; github-action-benchmark's data.js with its tools' directions; the unit rule;
// malformed files refused with their line or JSON path; a stored import read back as series,
// a second import adding nothing; the coefficient of variation of R runs and the floor of a
// median of k; the busy-host mark of a run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/errors.hpp"
#include "results/history.hpp"
#include "results/history_import.hpp"
#include "results/noise_floor.hpp"
#include "stored_runs.hpp"

namespace dsgd {
namespace {

TEST(HistoryImport, UnitRuleTellsRatesFromTimes) {
  for (const char* u : {"ops/sec", "iter/s", "tx/s", "GB/s", "MHz", "samples per second"})
    EXPECT_TRUE(unit_bigger_is_better(u)) << u;
  for (const char* u : {"ns/iter", "ms", "s", "bytes", "ns/op", ""}) EXPECT_FALSE(unit_bigger_is_better(u)) << u;
}

TEST(HistoryImport, CsvWithHeaderCommentsQuotesAndRepetitions) {
  const std::string text =
      "# exported by hand\n"
      "series,commit,date,value,unit\n"
      "\"step, fast\",abc1234,2024-01-01,1.5,ms\n"
      "\"step, fast\",abc1234,2024-01-01,1.7,ms\r\n"
      "\n"
      "throughput,def5678,2024-01-02,900,samples/s\n";
  const std::vector<ImportedPoint> p = history_import_parse(text, "h.csv", {});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].series, "step, fast");
  EXPECT_EQ(p[0].commit, "abc1234");
  EXPECT_DOUBLE_EQ(p[1].value, 1.7);
  EXPECT_FALSE(p[0].bigger_is_better);
  EXPECT_TRUE(p[2].bigger_is_better);
  ImportOptions flipped;
  flipped.bigger_is_better = true;
  EXPECT_TRUE(history_import_parse(text, "h.csv", flipped)[0].bigger_is_better);
}

TEST(HistoryImport, MalformedCsvNamesTheLine) {
  auto message = [](const std::string& text) {
    try {
      history_import_parse(text, "h.csv", {});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("a,c1,2024,1\na,c2,2024,nan\n").find("h.csv:2: value 'nan' is not a finite number"),
            std::string::npos);
  EXPECT_NE(message("a,c1,2024\n").find("h.csv:1: 3 field(s)"), std::string::npos);
  EXPECT_NE(message("a,,2024,1\n").find("h.csv:1: the commit is empty"), std::string::npos);
  EXPECT_NE(message("\"a,c1,2024,1\n").find("not closed"), std::string::npos);
  EXPECT_NE(message("# nothing\n").find("no points"), std::string::npos);
  EXPECT_NE(message("a,c1,2024,1.5x\n").find("'1.5x' is not a finite number"), std::string::npos);
}

TEST(HistoryImport, GithubActionBenchmarkDataJs) {
  const std::string text = R"(window.BENCHMARK_DATA = {
  "lastUpdate": 1573312140323,
  "entries": {
    "Rust Benchmark": [
      {"commit": {"id": "45d78258e495044a551046f50604da3c893052ce", "timestamp": "2019-11-10T00:06:58+09:00"},
       "date": 1573312140323, "tool": "cargo",
       "benches": [{"name": "bench_fib_10", "value": 254, "range": "+/- 35", "unit": "ns/iter"}]}
    ],
    "Custom": [
      {"commit": {"id": "b840614fd88743f234aac0dc747a0a70616f450f"}, "date": 1573312301293,
       "tool": "customBiggerIsBetter", "benches": [{"name": "load", "value": 50, "unit": "Percent"}]}
    ]
  }
};)";
  const std::vector<ImportedPoint> p = history_import_parse(text, "data.js", {});
  ASSERT_EQ(p.size(), 2u);
  const ImportedPoint& custom = p[0].series == "Custom/load" ? p[0] : p[1];
  const ImportedPoint& rust = p[0].series == "Custom/load" ? p[1] : p[0];
  EXPECT_EQ(rust.series, "Rust Benchmark/bench_fib_10");
  EXPECT_EQ(rust.date, "2019-11-10T00:06:58+09:00");
  EXPECT_FALSE(rust.bigger_is_better);
  EXPECT_EQ(rust.unit, "ns/iter");
  EXPECT_TRUE(custom.bigger_is_better);            // the tool says so, whatever the unit
  EXPECT_EQ(custom.date, "2019-11-09T15:11:41Z");  // from "date" (ms since the epoch)
  EXPECT_THROW(history_import_parse("{\"entries\": {\"s\": [{\"commit\": {\"id\": \"x\"}, \"benches\": "
                                    "[{\"name\": \"b\", \"value\": \"fast\"}]}]}}",
                                    "d.json", {}),
               InputError);
  EXPECT_THROW(history_import_parse("{\"lastUpdate\": 1}", "d.json", {}), InputError);
  EXPECT_THROW(history_import_parse("{not json", "d.json", {}), InputError);
}

TEST(HistoryImport, StoredSeriesReadBackAndASecondImportAddsNothing) {
  const std::string path = (std::filesystem::temp_directory_path() / "dsgd_test_history_import.db").string();
  std::filesystem::remove(path);
  std::string text = "series,commit,date,value,unit\n";
  for (int c = 0; c < 12; ++c)
    for (int rep = 0; rep < 2; ++rep)
      text += "lat,c" + std::to_string(100 + c) + ",2024-01-" + std::to_string(10 + c) + "," +
              std::to_string((c >= 8 ? 130 : 100) + rep) + ",ms\n";
  const std::vector<ImportedPoint> points = history_import_parse(text, "h.csv", {});
  {
    Store store = Store::open(path);
    const ImportSummary first = history_import_store(store, points, {}, "h.csv");
    EXPECT_EQ(first.added, 24u);
    EXPECT_EQ(first.series, 1u);
    const ImportSummary second = history_import_store(store, points, {}, "h.csv");
    EXPECT_EQ(second.added, 0u);
    EXPECT_EQ(second.duplicates, 24u);
  }
  Store store = Store::open_readonly(path);
  HistoryOptions o;
  o.metric = kImportedMetric;
  o.order = "stored";
  const std::vector<HistorySeries> series = history_load(store, o);
  ASSERT_EQ(series.size(), 1u);
  const HistorySeries& s = series[0];
  EXPECT_EQ(s.label, "lat");
  EXPECT_EQ(s.machine, "imported");
  EXPECT_EQ(s.unit, "ms");
  ASSERT_EQ(s.points.size(), 12u);
  EXPECT_EQ(s.points[0].commit, "c100");
  EXPECT_EQ(s.points[0].count, 2u);
  EXPECT_DOUBLE_EQ(s.points[0].median, 100.5);
  ASSERT_EQ(s.changes.size(), 1u);
  EXPECT_EQ(s.changes[0].index, 8u);
  std::filesystem::remove(path);
}

using testing::history_run;

TEST(NoiseFloor, CoefficientOfVariationOfTheRunsAndTheFloorOfAMedian) {
  std::vector<RunWithSummary> runs;
  const double values[] = {1.0, 1.1, 0.9, 1.0, 1.0};  // mean 1, sample sd sqrt(0.02 / 4)
  for (int i = 0; i < 5; ++i) runs.push_back(history_run(i + 1, "abc", values[i]));
  runs.push_back(history_run(9, "abc", 5.0));  // one run of another case (batch 128): too few
  runs.back().run.batch = 128;
  const std::vector<NoiseFloor> floors = noise_floor_measure(runs, {"step_time_s"});
  ASSERT_EQ(floors.size(), 1u);
  EXPECT_EQ(floors[0].commit, "abc");
  EXPECT_EQ(floors[0].runs, 5u);
  EXPECT_NEAR(floors[0].cv, std::sqrt(0.02 / 4), 1e-12);
  EXPECT_NEAR(noise_floor_of_median(0.1, 1), 0.2, 1e-12);
  EXPECT_NEAR(noise_floor_of_median(0.1, 2), 0.2 / std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(noise_floor_of_median(0.1, 8), 0.2 * std::sqrt(M_PI / 16), 1e-12);
}

TEST(History, BusyHostMark) {
  RunWithSummary r = history_run(1, "abc", 1.0);
  EXPECT_FALSE(history_run_loaded(r));  // unknown conditions: not marked
  r.summary->host_load = 0.3;
  r.summary->cpu_steal = 0.01;
  EXPECT_FALSE(history_run_loaded(r));
  r.summary->host_load = 0.8;
  EXPECT_TRUE(history_run_loaded(r));
  r.summary->host_load = 0.1;
  r.summary->cpu_steal = 0.2;
  EXPECT_TRUE(history_run_loaded(r));
  const std::vector<HistorySeries> s = history_build({r, history_run(2, "abc", 1.0)}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].points[0].loaded, 1u);
  EXPECT_EQ(s[0].points[0].count, 2u);
}

}  // namespace
}  // namespace dsgd
