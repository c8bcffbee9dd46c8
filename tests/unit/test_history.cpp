// History series (results/history.hpp): runs grouped by case x machine, commits in stored
// order with their repetitions' median and quartiles, the change point on the log of the
// medians, machines never mixed, runs that did not complete left out.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "results/history.hpp"
#include "stored_runs.hpp"

namespace dsgd {
namespace {

using testing::history_run;

TEST(History, SeriesPerCaseAndMachineWithTheChangeAtItsCommit) {
  std::vector<RunWithSummary> runs;
  int64_t id = 1;
  // 12 commits x 3 repetitions; +20 % from commit 7 on; the same on another host, unchanged.
  for (int c = 0; c < 12; ++c)
    for (int rep = 0; rep < 3; ++rep) {
      const double noise = 1 + 0.01 * (rep - 1);
      runs.push_back(history_run(id++, "c" + std::to_string(c), (c >= 7 ? 1.2 : 1.0) * 0.010 * noise));
      runs.push_back(history_run(id++, "c" + std::to_string(c), 0.010 * noise, "node2"));
    }
  RunWithSummary failed = history_run(id++, "c3", 1.0);
  failed.run.status = RunStatus::run_failed;
  runs.push_back(failed);
  HistoryOptions o;
  const std::vector<HistorySeries> series = history_build(runs, o);
  ASSERT_EQ(series.size(), 2u);  // node1 and node2, never mixed
  const HistorySeries& a = series[0];
  EXPECT_NE(a.machine.find("node1"), std::string::npos);
  ASSERT_EQ(a.points.size(), 12u);
  EXPECT_EQ(a.points[0].commit, "c0");
  EXPECT_EQ(a.points[3].count, 3u);  // the failed run is left out
  EXPECT_NEAR(a.points[0].median, 0.010, 1e-12);
  EXPECT_NEAR(a.points[0].q25, 0.00995, 1e-12);
  EXPECT_NEAR(a.points[0].q75, 0.01005, 1e-12);
  ASSERT_EQ(a.changes.size(), 1u);
  EXPECT_EQ(a.changes[0].index, 7u);
  EXPECT_NEAR(a.changes[0].relative_change, 0.2, 1e-9);
  EXPECT_TRUE(a.changes[0].confirmed);
  EXPECT_TRUE(series[1].changes.empty());
  // Filters, and the outputs carry the change.
  o.machine_filter = "node2";
  EXPECT_EQ(history_build(runs, o).size(), 1u);
  EXPECT_NE(history_csv(series, 0).find(",c7,"), std::string::npos);
  EXPECT_EQ(history_json(series, o, 0)["series"][0]["change_points"][0]["commit"], "c7");
  EXPECT_NE(history_table(series, o, 0).find("<- change +20.0 %"), std::string::npos);
  // throughput: the same change, the other way.
  o = HistoryOptions{};
  o.metric = "throughput";
  EXPECT_NEAR(history_build(runs, o)[0].changes.at(0).relative_change, 1 / 1.2 - 1, 1e-9);
  o.metric = "nosuch";
  EXPECT_THROW(history_build(runs, o), InputError);
}

}  // namespace
}  // namespace dsgd
