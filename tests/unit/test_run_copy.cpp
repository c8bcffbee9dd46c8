// Tests of results/run_copy.hpp: a run copied into another database (which already holds runs)
// gets a new id and keeps every stored value of its runs row, steps, evals and summary; other
// runs of the source are not copied; a missing run is an error; calibrations (with their
// profiles, fits and host peaks) are copied with their ids into a fresh database.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "results/run_copy.hpp"
#include "results/store.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

class RunCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dsgd_run_copy_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

RunRecord run_make(const std::string& algo) {
  RunRecord run;
  run.workload = "svm";
  run.dataset = "synthetic";
  run.algorithm = algo;
  run.backend = "sim";
  run.workers = 2;
  run.batch = 8;
  run.steps = 4;
  run.warmup = 1;
  run.seed = 7;
  run.config_json = R"({"lr": 0.1})";
  run.host = "node01";
  return run;
}

std::vector<StepRow> steps_make(int64_t steps, double scale) {
  std::vector<StepRow> rows;
  for (int rank = 0; rank < 2; ++rank)
    for (int64_t s = 0; s < steps; ++s) {
      StepRow r;
      r.rank = rank;
      r.step = s;
      r.timed = s > 0;
      r.start_s = scale * static_cast<double>(s);
      r.step_s = scale * (1.0 + 0.1 * rank);
      r.fwd_s = 0.25 * scale;
      r.bwd_s = 0.5 * scale;
      r.comm_s = 0.125 * scale * (rank + 1);
      r.wait_s = 0.0625 * scale;
      r.bytes_sent = 1000.0 * (rank + 1);
      r.train_loss = 1.0 / (1.0 + static_cast<double>(s));
      if (rank == 1) r.staleness = 0.5;
      rows.push_back(r);
    }
  return rows;
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

TEST_F(RunCopyTest, CopiesEveryRowOfOneRunUnderANewId) {
  Store from = Store::open(path("from.db"));
  const int64_t other = from.run_begin(run_make("ssgd"));
  from.steps_append(other, steps_make(3, 0.5));
  from.run_finish(other, RunStatus::run_completed, "");
  const int64_t id = from.run_begin(run_make("localsgd"));
  from.steps_append(id, steps_make(4, 0.25));
  EvalRow e0, e1;
  e0.step = 0;
  e0.time_s = 0;
  e0.test_acc = 0.25;
  e0.test_loss = 2.0;
  e1.step = 4;
  e1.time_s = 1.0;
  e1.test_acc = 0.75;
  e1.test_loss = 0.5;
  e1.consensus_distance = 0.125;
  from.evals_append(id, {e0, e1});
  from.run_finish(id, RunStatus::run_interrupted, "stopped by dsgd-tune: target reached");

  Store to = Store::open(path("to.db"));
  for (int k = 0; k < 3; ++k) to.run_begin(run_make("dpsgd"));  // ids 1..3 taken
  const int64_t copied = store_copy_run(to, path("from.db"), id);
  EXPECT_EQ(copied, 4);

  const RunWithSummary a = from.run_get(id), b = to.run_get(copied);
  EXPECT_EQ(b.run.id, copied);
  EXPECT_EQ(a.run.algorithm, b.run.algorithm);
  EXPECT_EQ(a.run.status, b.run.status);
  EXPECT_EQ(a.run.error, b.run.error);
  EXPECT_EQ(a.run.config_json, b.run.config_json);
  EXPECT_EQ(a.run.created_at, b.run.created_at);
  EXPECT_EQ(a.run.finished_at, b.run.finished_at);
  ASSERT_TRUE(a.summary && b.summary);
  EXPECT_EQ(a.summary->step_time_s, b.summary->step_time_s);
  EXPECT_EQ(a.summary->comm_s, b.summary->comm_s);
  EXPECT_EQ(a.summary->bytes_sent_per_step, b.summary->bytes_sent_per_step);

  const std::vector<StepRow> sa = from.steps_get(id), sb = to.steps_get(copied);
  ASSERT_EQ(sa.size(), 8u);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].rank, sb[i].rank);
    EXPECT_EQ(sa[i].step, sb[i].step);
    EXPECT_EQ(sa[i].timed, sb[i].timed);
    EXPECT_TRUE(same(sa[i].step_s, sb[i].step_s));
    EXPECT_TRUE(same(sa[i].comm_s, sb[i].comm_s));
    EXPECT_TRUE(same(sa[i].train_loss, sb[i].train_loss));
    EXPECT_EQ(sa[i].staleness.has_value(), sb[i].staleness.has_value());
  }
  const std::vector<EvalRow> ea = from.evals_get(id), eb = to.evals_get(copied);
  ASSERT_EQ(eb.size(), 2u);
  EXPECT_EQ(eb[1].test_acc, 0.75);
  EXPECT_EQ(ea[1].consensus_distance, eb[1].consensus_distance);
  // The source's other run was not copied.
  EXPECT_EQ(to.runs_list().size(), 4u);
  EXPECT_TRUE(to.steps_get(1).empty());
}

TEST_F(RunCopyTest, AMissingRunIsAnErrorAndCopiesNothing) {
  { Store from = Store::open(path("from.db")); }
  Store to = Store::open(path("to.db"));
  EXPECT_THROW(store_copy_run(to, path("from.db"), 12), Error);
  EXPECT_TRUE(to.runs_list().empty());
  // The source stays attachable afterwards (it was detached).
  EXPECT_THROW(store_copy_run(to, path("from.db"), 12), Error);
}

// dsgd-tune's signal handler removes the private databases while the main thread may be copying
// a finished trial out of one: the copy must fail, not ATTACH-create an empty file that outlives
// the process. Paths with URI-special characters still attach.
TEST_F(RunCopyTest, AMissingSourceIsAnErrorAndIsNotCreated) {
  Store to = Store::open(path("to.db"));
  EXPECT_THROW(store_copy_run(to, path("gone.db"), 1), Error);
  EXPECT_THROW(store_copy_calibrations(to, path("gone.db")), Error);
  EXPECT_FALSE(fs::exists(path("gone.db")));
  EXPECT_TRUE(to.runs_list().empty());
  const std::string odd = path("odd %3F?#name.db");
  int64_t id = 0;
  {
    Store from = Store::open(odd);
    id = from.run_begin(run_make("ssgd"));
  }
  EXPECT_GT(store_copy_run(to, odd, id), 0);
  EXPECT_EQ(to.runs_list().size(), 1u);
}

TEST_F(RunCopyTest, CalibrationsKeepTheirIds) {
  Store from = Store::open(path("from.db"));
  CalibrationRecord cal;
  cal.workers = 1;
  cal.host = "node01";
  cal.config_json = R"({"profile-only": true})";
  const int64_t first = from.calibration_begin(cal);
  const int64_t second = from.calibration_begin(cal);
  ProfileRow p;
  p.workload = "svm";
  p.dataset = "synthetic";
  p.batch = 16;
  p.layer = 0;
  p.layer_name = "linear";
  p.fwd_s = 1.5e-5;
  p.bwd_s = 2.5e-5;
  from.profiles_append(second, {p});
  from.host_peak_record("node01", 1, 12.5);

  Store to = Store::open(path("to.db"));
  store_copy_calibrations(to, path("from.db"));
  const std::vector<CalibrationRecord> list = to.calibrations_list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, second);
  EXPECT_EQ(list[1].id, first);
  const std::vector<ProfileRow> rows = to.profiles_get(second);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].fwd_s, p.fwd_s);
  EXPECT_EQ(rows[0].bwd_s, p.bwd_s);
  EXPECT_EQ(to.host_peak_record("node01", 1, 1.0), 12.5) << "the copied peak is the highest seen";
}

}  // namespace
}  // namespace dsgd
