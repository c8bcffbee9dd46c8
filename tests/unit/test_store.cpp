// Tests of the SQLite results store: round trip of every field, the summary metric
// definitions on a hand-made 2-rank run, the target parser, schema migrations (from v1
// and v2, rollback on failure), refusals that must leave files untouched, read-only
// access, the calibration tables (v3), and the time of a 10 000-row batched append
// (printed, not asserted). Each test works in its own temporary directory.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "results/migrations.hpp"
#include "results/store.hpp"
#include "results/target.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

// ---- helpers ---------------------------------------------------------------------------

struct CaughtInputError {
  bool thrown = false;
  std::string what, hint;
};

CaughtInputError catch_input_error(const std::function<void()>& body) {
  CaughtInputError caught;
  try {
    body();
  } catch (const InputError& e) {
    caught = {true, e.what(), e.hint()};
  }
  return caught;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs SQL on a raw connection, failing the test on error.
void raw_exec(sqlite3* db, const std::string& sql) {
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  ASSERT_EQ(rc, SQLITE_OK) << (message ? message : "") << " in: " << sql;
}

std::string raw_query_text(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
  std::string text;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
    text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  return text;
}

sqlite3* raw_open(const fs::path& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  return db;
}

RunRecord run_make() {
  RunRecord run;
  run.workload = "svm";
  run.dataset = "synthetic";
  run.algorithm = "local_sgd";
  run.backend = "threads";
  run.workers = 2;
  run.batch = 8;
  run.period = 4;
  run.steps = 3;
  run.warmup = 1;
  run.seed = 42;
  run.config_json = R"({"lr": 0.1})";
  run.tool_version = "0.1.0";
  run.git_commit = "abc123";
  run.host = "node01";
  run.cpu_model = "Test CPU";
  run.mpi_version = "none";
  run.build_type = "Release";
  return run;
}

StepRow step_make(int rank, int64_t step, bool timed, double step_s) {
  StepRow row;
  row.rank = rank;
  row.step = step;
  row.timed = timed;
  row.start_s = 0.5 * static_cast<double>(step) + 0.001 * rank;
  row.step_s = step_s;
  row.fwd_s = 0.1 + 0.01 * rank;
  row.bwd_s = 0.2 + 0.02 * rank;
  row.opt_s = 0.05;
  row.data_s = 0.01;
  row.comm_s = 0.03 * (rank + 1);
  row.wait_s = 0.002 * static_cast<double>(step);
  row.overlap_s = 0.004;
  row.injected_s = 0.0125 * rank;
  row.bytes_sent = 1000.0 * (rank + 1);
  row.train_loss = 1.0 / (1.0 + static_cast<double>(step)) + 0.1 * rank;
  if (rank == 1) row.staleness = 0.5 * static_cast<double>(step);  // rank 0: none (NULL)
  return row;
}

EvalRow eval_make(int64_t step, double time_s, double test_loss, double test_acc) {
  EvalRow row;
  row.step = step;
  row.time_s = time_s;
  row.train_loss = test_loss * 0.9;
  row.test_loss = test_loss;
  row.test_acc = test_acc;
  return row;
}

// Doubles compare exactly (SQLite REAL is an IEEE double); NaN equals NaN.
bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void expect_same_step(const StepRow& a, const StepRow& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.timed, b.timed);
  for (auto field : {&StepRow::start_s, &StepRow::step_s, &StepRow::fwd_s, &StepRow::bwd_s, &StepRow::opt_s,
                     &StepRow::data_s, &StepRow::comm_s, &StepRow::wait_s, &StepRow::overlap_s, &StepRow::injected_s,
                     &StepRow::bytes_sent, &StepRow::train_loss}) {
    EXPECT_TRUE(same_double(a.*field, b.*field))
        << "rank " << a.rank << " step " << a.step << ": " << a.*field << " vs " << b.*field;
  }
  EXPECT_EQ(a.staleness, b.staleness) << "rank " << a.rank << " step " << a.step;
}

void expect_same_eval(const EvalRow& a, const EvalRow& b) {
  EXPECT_EQ(a.step, b.step);
  for (auto field : {&EvalRow::time_s, &EvalRow::train_loss, &EvalRow::test_loss, &EvalRow::test_acc}) {
    EXPECT_TRUE(same_double(a.*field, b.*field)) << "step " << a.step;
  }
  EXPECT_EQ(a.consensus_distance, b.consensus_distance) << "step " << a.step;
  EXPECT_EQ(a.eval_s, b.eval_s) << "step " << a.step;
}

void expect_same_optional(const std::optional<double>& a, const std::optional<double>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (a) {
    EXPECT_DOUBLE_EQ(*a, *b);
  }
}

void expect_same_summary(const Summary& a, const Summary& b) {
  for (auto field : {&Summary::throughput_samples_per_s, &Summary::step_time_s, &Summary::compute_s, &Summary::fwd_s,
                     &Summary::bwd_s, &Summary::opt_s, &Summary::comm_s, &Summary::wait_s, &Summary::overlap_s,
                     &Summary::data_s, &Summary::injected_s, &Summary::bytes_sent_per_step}) {
    EXPECT_DOUBLE_EQ(a.*field, b.*field);
  }
  EXPECT_EQ(a.timed_steps, b.timed_steps);
  expect_same_optional(a.final_train_loss, b.final_train_loss);
  expect_same_optional(a.final_test_loss, b.final_test_loss);
  expect_same_optional(a.final_test_acc, b.final_test_acc);
  expect_same_optional(a.time_to_target_s, b.time_to_target_s);
  EXPECT_EQ(a.steps_to_target, b.steps_to_target);
  expect_same_optional(a.staleness_mean, b.staleness_mean);
  expect_same_optional(a.step_time_se_s, b.step_time_se_s);
  expect_same_optional(a.staleness_max, b.staleness_max);
  expect_same_optional(a.model_gflops, b.model_gflops);
  expect_same_optional(a.peak_gflops, b.peak_gflops);
  expect_same_optional(a.mfu, b.mfu);
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dsgd_store_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  std::string db_path(const std::string& name = "dsgd.db") const { return (dir_ / name).string(); }

  fs::path dir_;
};

// ---- round trip ------------------------------------------------------------------------------

TEST_F(StoreTest, RoundTripKeepsEveryValue) {
  Store store = Store::open(db_path());
  RunRecord run = run_make();
  run.seed = 0xFEDCBA9876543210ULL;  // > 2^63
  run.tag = "say \"hi\", then 'bye'; ünïcødé ✓ 日本語, commas,,";
  run.target = "acc=0.5";
  run.config_json = R"({"tag": "a \"quoted\" value", "lr": [0.1, 0.01]})";
  const int64_t id = store.run_begin(run);
  EXPECT_GT(id, 0);

  std::vector<StepRow> steps;
  for (int64_t step = 0; step < 3; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      steps.push_back(step_make(rank, step, step >= run.warmup, 0.25 + 0.125 * rank + step));
    }
  }
  steps[3].train_loss = std::numeric_limits<double>::quiet_NaN();  // a diverged minibatch
  std::vector<EvalRow> evals = {eval_make(1, 1.5, 0.7, 0.4), eval_make(3, 3.25, 0.3, 0.9)};
  store.steps_append(id, steps);
  store.evals_append(id, evals);

  RunWithSummary running = store.run_get(id);
  EXPECT_EQ(running.run.status, RunStatus::run_running);
  EXPECT_FALSE(running.summary.has_value());
  EXPECT_TRUE(running.run.finished_at.empty());

  store.run_finish(id, RunStatus::run_completed, "");

  RunWithSummary got = store.run_get(id);
  const RunRecord& r = got.run;
  EXPECT_EQ(r.id, id);
  EXPECT_FALSE(r.created_at.empty());
  EXPECT_FALSE(r.finished_at.empty());
  EXPECT_EQ(r.status, RunStatus::run_completed);
  EXPECT_EQ(r.workload, run.workload);
  EXPECT_EQ(r.dataset, run.dataset);
  EXPECT_EQ(r.algorithm, run.algorithm);
  EXPECT_EQ(r.backend, run.backend);
  EXPECT_EQ(r.workers, run.workers);
  EXPECT_EQ(r.batch, run.batch);
  EXPECT_EQ(r.period, run.period);
  EXPECT_EQ(r.steps, run.steps);
  EXPECT_EQ(r.warmup, run.warmup);
  EXPECT_EQ(r.seed, 0xFEDCBA9876543210ULL);
  EXPECT_EQ(r.tag, run.tag);
  EXPECT_EQ(r.config_json, run.config_json);
  EXPECT_EQ(r.target, run.target);
  EXPECT_EQ(r.tool_version, run.tool_version);
  EXPECT_EQ(r.git_commit, run.git_commit);
  EXPECT_EQ(r.host, run.host);
  EXPECT_EQ(r.cpu_model, run.cpu_model);
  EXPECT_EQ(r.mpi_version, run.mpi_version);
  EXPECT_EQ(r.build_type, run.build_type);
  EXPECT_EQ(r.error, "");

  // The stored summary is the one computed from the rows.
  ASSERT_TRUE(got.summary.has_value());
  expect_same_summary(*got.summary, summary_compute(r, steps, evals));
  EXPECT_EQ(got.summary->steps_to_target, 3);

  std::vector<RunWithSummary> listed = store.runs_list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].run.id, id);
  EXPECT_EQ(listed[0].run.tag, run.tag);
  EXPECT_EQ(listed[0].run.seed, run.seed);
  ASSERT_TRUE(listed[0].summary.has_value());
  expect_same_summary(*listed[0].summary, *got.summary);

  std::vector<StepRow> steps_back = store.steps_get(id);  // ordered by step, then rank
  ASSERT_EQ(steps_back.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) expect_same_step(steps_back[i], steps[i]);

  std::vector<EvalRow> evals_back = store.evals_get(id);
  ASSERT_EQ(evals_back.size(), evals.size());
  for (size_t i = 0; i < evals.size(); ++i) expect_same_eval(evals_back[i], evals[i]);
}

TEST_F(StoreTest, FailedRunKeepsItsErrorAndRowsSurviveReopen) {
  int64_t id = 0;
  {
    Store store = Store::open(db_path());
    id = store.run_begin(run_make());
    store.steps_append(id, {step_make(0, 0, true, 1.0)});
    store.run_finish(id, RunStatus::run_failed, "rank 1: out of memory");
  }
  Store store = Store::open(db_path());  // reopening an up-to-date database changes nothing
  RunWithSummary got = store.run_get(id);
  EXPECT_EQ(got.run.status, RunStatus::run_failed);
  EXPECT_EQ(got.run.error, "rank 1: out of memory");
  EXPECT_EQ(store.steps_get(id).size(), 1u);
  EXPECT_THROW(store.run_finish(id, RunStatus::run_stale, ""), Error);  // not a finished status
}

TEST_F(StoreTest, RunsListIsNewestFirstWithLimit) {
  Store store = Store::open(db_path());
  RunRecord run = run_make();
  run.created_at = "2026-01-02T00:00:00Z";
  const int64_t middle = store.run_begin(run);
  run.created_at = "2026-01-03T00:00:00Z";
  const int64_t newest = store.run_begin(run);
  run.created_at = "2026-01-01T00:00:00Z";
  store.run_begin(run);
  run.created_at.clear();  // filled with now, which is later than all of the above
  const int64_t now = store.run_begin(run);

  std::vector<RunWithSummary> all = store.runs_list(0);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].run.id, now);
  EXPECT_FALSE(all[0].run.created_at.empty());

  std::vector<RunWithSummary> two = store.runs_list(3);
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(two[1].run.id, newest);
  EXPECT_EQ(two[2].run.id, middle);
  EXPECT_FALSE(two[1].summary.has_value());  // still running
}

// ---- summary definitions ---------------------------------------------------------------------

// Two ranks, batch 8 each; step 0 is warm-up (untimed, and deliberately huge).
struct TwoRankExample {
  RunRecord run;
  std::vector<StepRow> steps;
  std::vector<EvalRow> evals;

  TwoRankExample() {
    run = run_make();
    run.workers = 2;
    run.batch = 8;
    auto row = [](int rank, int64_t step, bool timed, double step_s, double fwd, double bwd, double opt, double data,
                  double comm, double wait, double overlap, double bytes) {
      StepRow r;
      r.rank = rank;
      r.step = step;
      r.timed = timed;
      r.step_s = step_s;
      r.fwd_s = fwd;
      r.bwd_s = bwd;
      r.opt_s = opt;
      r.data_s = data;
      r.comm_s = comm;
      r.wait_s = wait;
      r.overlap_s = overlap;
      r.bytes_sent = bytes;
      return r;
    };
    //            rank step timed step_s fwd   bwd  opt   data  comm wait overlap bytes
    steps = {row(0, 0, false, 100.0, 50.0, 50.0, 9.0, 9.0, 9.0, 9.0, 9.0, 1e9),
             row(1, 0, false, 100.0, 50.0, 50.0, 9.0, 9.0, 9.0, 9.0, 9.0, 1e9),
             row(0, 1, true, 1.0, 0.1, 0.2, 0.05, 0.01, 0.3, 0.0, 0.02, 100),
             row(1, 1, true, 1.5, 0.3, 0.2, 0.05, 0.03, 0.5, 0.2, 0.04, 200),
             row(1, 2, true, 0.5, 0.4, 0.4, 0.05, 0.05, 0.1, 0.1, 0.06, 400),
             row(0, 2, true, 2.0, 0.2, 0.4, 0.05, 0.07, 0.9, 0.3, 0.08, 300)};
    // Straggler delay on the timed rows of rank 1 only (warm-up's is ignored).
    steps[0].injected_s = 50.0;
    steps[3].injected_s = 0.25;
    steps[4].injected_s = 0.75;
    // Given out of step order: "first" and "last" are by step.
    evals = {eval_make(4, 4.0, 0.20, 0.85), eval_make(2, 2.0, 0.35, 0.80), eval_make(1, 1.0, 0.60, 0.50),
             eval_make(3, 3.0, 0.25, 0.90)};
  }
};

TEST(SummaryCompute, TwoRankExampleFollowsTheDefinitions) {
  TwoRankExample ex;
  ex.run.target = "acc=0.8";
  Summary s = summary_compute(ex.run, ex.steps, ex.evals);

  EXPECT_EQ(s.timed_steps, 2);
  // Each timed step costs its slowest rank: step 1 -> 1.5 s (rank 1), step 2 -> 2.0 s (rank 0).
  EXPECT_DOUBLE_EQ(s.throughput_samples_per_s, 2.0 * 8.0 * 2.0 / (1.5 + 2.0));
  // Means over the four timed (rank, step) rows.
  EXPECT_DOUBLE_EQ(s.step_time_s, (1.0 + 1.5 + 0.5 + 2.0) / 4);
  EXPECT_DOUBLE_EQ(s.fwd_s, (0.1 + 0.3 + 0.4 + 0.2) / 4);
  EXPECT_DOUBLE_EQ(s.bwd_s, (0.2 + 0.2 + 0.4 + 0.4) / 4);
  EXPECT_DOUBLE_EQ(s.opt_s, 0.05);
  EXPECT_DOUBLE_EQ(s.compute_s, s.fwd_s + s.bwd_s + s.opt_s);
  EXPECT_DOUBLE_EQ(s.data_s, (0.01 + 0.03 + 0.05 + 0.07) / 4);
  EXPECT_DOUBLE_EQ(s.comm_s, (0.3 + 0.5 + 0.1 + 0.9) / 4);
  EXPECT_DOUBLE_EQ(s.wait_s, (0.0 + 0.2 + 0.1 + 0.3) / 4);
  EXPECT_DOUBLE_EQ(s.overlap_s, (0.02 + 0.04 + 0.06 + 0.08) / 4);
  EXPECT_DOUBLE_EQ(s.bytes_sent_per_step, 250.0);
  EXPECT_DOUBLE_EQ(s.injected_s, (0.0 + 0.25 + 0.75 + 0.0) / 4);
  EXPECT_DOUBLE_EQ(s.compute_s, s.fwd_s + s.bwd_s + s.opt_s);  // injected is not compute
  // Final = the evaluation with the largest step.
  ASSERT_TRUE(s.final_test_acc && s.final_test_loss && s.final_train_loss);
  EXPECT_DOUBLE_EQ(*s.final_test_acc, 0.85);
  EXPECT_DOUBLE_EQ(*s.final_test_loss, 0.20);
  EXPECT_DOUBLE_EQ(*s.final_train_loss, 0.20 * 0.9);
  // acc >= 0.8 is first met at step 2 (exactly 0.80), not at step 4 listed before it.
  ASSERT_TRUE(s.time_to_target_s && s.steps_to_target);
  EXPECT_DOUBLE_EQ(*s.time_to_target_s, 2.0);
  EXPECT_EQ(*s.steps_to_target, 2);
}

// The standard error of the mean step by batch means (schema v19): 16 timed steps make 4
// batches of 4 consecutive steps; each step counts as its ranks' mean; warm-up steps do not
// count; the rows' order does not matter; under 4 timed steps, none.
TEST(SummaryCompute, TheStepsStandardErrorIsTakenOverBatchesOfConsecutiveSteps) {
  const auto rows = [](int64_t steps) {
    std::vector<StepRow> out;
    for (int rank = 0; rank < 2; ++rank)
      for (int64_t step = 0; step < steps; ++step) {
        StepRow row;
        row.rank = rank;
        row.step = step;
        row.timed = step >= 2;
        const double batch_mean = step < 2 ? 100.0 : 1e-3 * double(1 + (step - 2) / 4);  // 1, 2, 3, 4 ms
        row.step_s = batch_mean + (rank == 0 ? -0.5e-3 : 0.5e-3);
        out.push_back(row);
      }
    return out;
  };
  std::vector<StepRow> steps = rows(18);
  // Batch means 1, 2, 3, 4 ms: variance 5/3 ms², standard error √(5/3 / 4) ms.
  const double expected = 1e-3 * std::sqrt(5.0 / 12.0);
  EXPECT_NEAR(summary_step_standard_error(steps), expected, 1e-12);
  std::reverse(steps.begin(), steps.end());
  EXPECT_NEAR(summary_step_standard_error(steps), expected, 1e-12);
  TwoRankExample ex;
  const Summary s = summary_compute(ex.run, steps, ex.evals);
  ASSERT_TRUE(s.step_time_se_s.has_value());
  EXPECT_NEAR(*s.step_time_se_s, expected, 1e-12);
  // Too few timed steps (3): none, and the summary has none.
  EXPECT_EQ(summary_step_standard_error(rows(5)), 0.0);
  EXPECT_FALSE(summary_compute(ex.run, rows(5), ex.evals).step_time_se_s.has_value());
}

// Staleness (schema v6): mean and max over the timed rows that have one; rows without (NULL)
// and warm-up rows do not count; none at all: null. compute-workers scales throughput.
TEST(SummaryCompute, StalenessAndComputeWorkers) {
  TwoRankExample ex;
  Summary none = summary_compute(ex.run, ex.steps, ex.evals);
  EXPECT_FALSE(none.staleness_mean.has_value());
  EXPECT_FALSE(none.staleness_max.has_value());
  ex.steps[0].staleness = 100.0;  // warm-up: not counted
  ex.steps[2].staleness = 1.0;    // rank 0 step 1
  ex.steps[3].staleness = 4.0;    // rank 1 step 1
  ex.steps[4].staleness = 2.5;    // rank 1 step 2; rank 0 step 2 (steps[5]) has none
  Summary s = summary_compute(ex.run, ex.steps, ex.evals);
  ASSERT_TRUE(s.staleness_mean && s.staleness_max);
  EXPECT_DOUBLE_EQ(*s.staleness_mean, (1.0 + 4.0 + 2.5) / 3);
  EXPECT_DOUBLE_EQ(*s.staleness_max, 4.0);
  ex.run.config_json = R"({"compute-workers": 1})";  // ps dedicated: 1 of the 2 ranks trains
  Summary one = summary_compute(ex.run, ex.steps, ex.evals);
  EXPECT_DOUBLE_EQ(one.throughput_samples_per_s, 1.0 * 8.0 * 2.0 / (1.5 + 2.0));
}

// MFU (schema v7): model FLOP/s per worker over the whole step against the config's peak;
// null without either input; compute-workers divides the same throughput.
TEST(SummaryCompute, ModelFlopsAndMfu) {
  TwoRankExample ex;
  Summary none = summary_compute(ex.run, ex.steps, ex.evals);
  EXPECT_FALSE(none.mfu.has_value());
  EXPECT_FALSE(none.model_gflops.has_value());
  ex.run.config_json = R"({"flops-per-sample": 2e9})";  // no peak: no MFU
  EXPECT_FALSE(summary_compute(ex.run, ex.steps, ex.evals).mfu.has_value());
  ex.run.config_json = R"({"flops-per-sample": 2e9, "peak-gflops-per-worker": 50})";
  Summary s = summary_compute(ex.run, ex.steps, ex.evals);
  const double throughput = 2.0 * 8.0 * 2.0 / (1.5 + 2.0);  // as in the test above
  ASSERT_DOUBLE_EQ(s.throughput_samples_per_s, throughput);
  ASSERT_TRUE(s.model_gflops && s.peak_gflops && s.mfu);
  EXPECT_DOUBLE_EQ(*s.model_gflops, 2e9 * throughput / 2.0 * 1e-9);
  EXPECT_DOUBLE_EQ(*s.peak_gflops, 50.0);
  EXPECT_DOUBLE_EQ(*s.mfu, *s.model_gflops / 50.0);
  ex.run.config_json = R"({"flops-per-sample": 2e9, "peak-gflops-per-worker": 50, "compute-workers": 1})";
  Summary one = summary_compute(ex.run, ex.steps, ex.evals);
  ASSERT_TRUE(one.model_gflops);
  EXPECT_DOUBLE_EQ(*one.model_gflops, 2e9 * (throughput / 2.0) * 1e-9);  // 1 worker's samples, per worker
}

TEST(SummaryCompute, LossTargetAndUnreachedTargets) {
  TwoRankExample ex;
  ex.run.target = "loss=0.25";  // <= 0.25 first at step 3
  Summary loss = summary_compute(ex.run, ex.steps, ex.evals);
  ASSERT_TRUE(loss.steps_to_target.has_value());
  EXPECT_EQ(*loss.steps_to_target, 3);
  EXPECT_DOUBLE_EQ(*loss.time_to_target_s, 3.0);

  ex.run.target = "test_acc=0.95";
  Summary unreached = summary_compute(ex.run, ex.steps, ex.evals);
  EXPECT_FALSE(unreached.time_to_target_s.has_value());
  EXPECT_FALSE(unreached.steps_to_target.has_value());

  ex.run.target = "";
  Summary none = summary_compute(ex.run, ex.steps, ex.evals);
  EXPECT_FALSE(none.time_to_target_s.has_value());
  EXPECT_FALSE(none.steps_to_target.has_value());
}

TEST(SummaryCompute, NoEvaluationsAndNoTimedSteps) {
  TwoRankExample ex;
  ex.run.target = "acc=0.5";
  std::vector<StepRow> warmup_only(ex.steps.begin(), ex.steps.begin() + 2);
  Summary s = summary_compute(ex.run, warmup_only, {});
  EXPECT_EQ(s.timed_steps, 0);
  EXPECT_EQ(s.throughput_samples_per_s, 0.0);
  EXPECT_EQ(s.step_time_s, 0.0);
  EXPECT_EQ(s.compute_s, 0.0);
  EXPECT_FALSE(s.final_train_loss.has_value());
  EXPECT_FALSE(s.final_test_loss.has_value());
  EXPECT_FALSE(s.final_test_acc.has_value());
  EXPECT_FALSE(s.time_to_target_s.has_value());
  EXPECT_FALSE(s.steps_to_target.has_value());
}

TEST_F(StoreTest, RunFinishStoresTheTwoRankSummary) {
  TwoRankExample ex;
  ex.run.target = "acc=0.8";
  Store store = Store::open(db_path());
  const int64_t id = store.run_begin(ex.run);
  store.steps_append(id, ex.steps);
  store.evals_append(id, ex.evals);
  store.run_finish(id, RunStatus::run_completed, "");
  RunWithSummary got = store.run_get(id);
  ASSERT_TRUE(got.summary.has_value());
  expect_same_summary(*got.summary, summary_compute(ex.run, ex.steps, ex.evals));
  EXPECT_EQ(got.summary->steps_to_target, 2);
}

// ---- target parser ---------------------------------------------------------------------------

TEST(TargetParse, AcceptsTheDocumentedForms) {
  struct Case {
    const char* text;
    TargetMetric metric;
    double value;
  };
  for (const Case& c :
       {Case{"acc=0.8", TargetMetric::target_test_acc, 0.8}, Case{"test_acc=0.8", TargetMetric::target_test_acc, 0.8},
        Case{" acc = 1 ", TargetMetric::target_test_acc, 1.0}, Case{"loss=0.35", TargetMetric::target_test_loss, 0.35},
        Case{"test_loss=0.35", TargetMetric::target_test_loss, 0.35},
        Case{"loss=0", TargetMetric::target_test_loss, 0.0}}) {
    std::optional<Target> target = target_parse(c.text);
    ASSERT_TRUE(target.has_value()) << c.text;
    EXPECT_EQ(target->metric, c.metric) << c.text;
    EXPECT_DOUBLE_EQ(target->value, c.value) << c.text;
  }
  EXPECT_FALSE(target_parse("").has_value());
  EXPECT_FALSE(target_parse("   ").has_value());
  EXPECT_EQ(target_format(*target_parse("test_acc=0.8")), "acc=0.8");
}

TEST(TargetParse, RejectsAnythingElseNamingTheText) {
  for (const char* text : {"accuracy=0.8", "acc", "acc=", "=0.5", "acc=abc", "acc=0.8x", "acc=80", "acc=0", "acc=nan",
                           "loss=-1", "loss=inf", "acc>0.8"}) {
    CaughtInputError caught = catch_input_error([&] { target_parse(text); });
    ASSERT_TRUE(caught.thrown) << text;
    EXPECT_NE(caught.what.find(std::string("'") + text + "'"), std::string::npos) << caught.what;
    EXPECT_NE(caught.hint.find("acc=V"), std::string::npos) << caught.hint;
    EXPECT_NE(caught.hint.find("loss=V"), std::string::npos) << caught.hint;
  }
}

TEST(TargetReached, AccuracyAtOrAboveLossAtOrBelow) {
  const Target acc{TargetMetric::target_test_acc, 0.8};
  const Target loss{TargetMetric::target_test_loss, 0.35};
  EXPECT_TRUE(target_reached(acc, eval_make(1, 0, 1.0, 0.8)));
  EXPECT_FALSE(target_reached(acc, eval_make(1, 0, 0.0, 0.79)));
  EXPECT_TRUE(target_reached(loss, eval_make(1, 0, 0.35, 0.0)));
  EXPECT_FALSE(target_reached(loss, eval_make(1, 0, 0.36, 1.0)));
  EXPECT_FALSE(target_reached(loss, eval_make(1, 0, std::nan(""), 1.0)));
}

// MFU's peak: the highest rate measured per (host, threads); a lower later one does not
// replace it; hosts and thread counts are kept apart.
TEST_F(StoreTest, HostPeakKeepsTheHighestPerHostAndThreads) {
  Store store = Store::open(db_path());
  EXPECT_DOUBLE_EQ(store.host_peak_record("a", 1, 50.0), 50.0);
  EXPECT_DOUBLE_EQ(store.host_peak_record("a", 1, 20.0), 50.0);  // busy moment: peak kept
  EXPECT_DOUBLE_EQ(store.host_peak_record("a", 1, 70.0), 70.0);
  EXPECT_DOUBLE_EQ(store.host_peak_record("a", 2, 90.0), 90.0);
  EXPECT_DOUBLE_EQ(store.host_peak_record("b", 1, 10.0), 10.0);
  Store again = Store::open(db_path());
  EXPECT_DOUBLE_EQ(again.host_peak_record("a", 1, 0.0), 70.0);
}

TEST_F(StoreTest, RunBeginRefusesAMalformedTarget) {
  Store store = Store::open(db_path());
  RunRecord run = run_make();
  run.target = "acc=high";
  EXPECT_THROW(store.run_begin(run), InputError);
  EXPECT_TRUE(store.runs_list().empty());
}

// ---- schema and migrations -------------------------------------------------------------------

TEST_F(StoreTest, NewDatabaseIsWalAtTheNewestSchema) {
  Store store = Store::open(db_path());
  EXPECT_EQ(store.user_version(), Store::schema_version());
  EXPECT_EQ(Store::schema_version(), static_cast<int>(migrations_all().size()));
  EXPECT_EQ(raw_query_text(store.handle(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_query_text(store.handle(), "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(raw_query_text(store.handle(), "PRAGMA busy_timeout"), "5000");
  EXPECT_EQ(raw_query_text(store.handle(), "PRAGMA synchronous"), "1");  // NORMAL
}

TEST_F(StoreTest, MigratesAVersion1DatabaseKeepingItsRuns) {
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 1);
    raw_exec(db,
             "INSERT INTO runs (id, created_at, finished_at, status, workload, dataset, "
             "algorithm, backend, workers, batch, period, steps, warmup, seed, tag, "
             "config_json, host) VALUES (7, '2025-05-01T10:00:00Z', '2025-05-01T10:05:00Z', "
             "'completed', 'svm', 'synthetic', 'sync_sgd', 'threads', 2, 8, 1, 2, 0, "
             "'18446744073709551615', 'old run', '{}', 'node01')");
    raw_exec(db,
             "INSERT INTO steps (run_id, rank, step, timed, step_s, fwd_s, bwd_s, opt_s) VALUES "
             "(7, 0, 0, 1, 1.0, 0.1, 0.2, 0.3), (7, 1, 0, 1, 2.0, 0.1, 0.2, 0.3), "
             "(7, 0, 1, 1, 1.0, 0.1, 0.2, 0.3), (7, 1, 1, 1, 1.0, 0.1, 0.2, 0.3)");
    raw_exec(db,
             "INSERT INTO evals (run_id, step, time_s, train_loss, test_loss, test_acc) "
             "VALUES (7, 2, 3.0, 0.4, 0.5, 0.75)");
    EXPECT_EQ(raw_query_text(db, "PRAGMA user_version"), "1");
    sqlite3_close(db);
  }

  // Read-only access serves what v1 has, without migrating.
  {
    Store old = Store::open_readonly(db_path());
    EXPECT_EQ(old.user_version(), 1);
    RunWithSummary got = old.run_get(7);
    EXPECT_EQ(got.run.tag, "old run");
    EXPECT_EQ(got.run.target, "");
    EXPECT_FALSE(got.summary.has_value());
    EXPECT_EQ(old.runs_list().size(), 1u);
    EXPECT_EQ(old.steps_get(7).size(), 4u);
  }

  Store store = Store::open(db_path());
  EXPECT_EQ(store.user_version(), Store::schema_version());
  RunWithSummary got = store.run_get(7);
  EXPECT_EQ(got.run.status, RunStatus::run_completed);
  EXPECT_EQ(got.run.seed, 18446744073709551615ULL);
  EXPECT_EQ(got.run.tag, "old run");
  EXPECT_EQ(got.run.host, "node01");
  EXPECT_EQ(got.run.finished_at, "2025-05-01T10:05:00Z");
  EXPECT_EQ(store.steps_get(7).size(), 4u);
  ASSERT_EQ(store.evals_get(7).size(), 1u);
  // The finished v1 run got its summary computed from its rows while migrating.
  ASSERT_TRUE(got.summary.has_value());
  EXPECT_EQ(got.summary->timed_steps, 2);
  EXPECT_DOUBLE_EQ(got.summary->throughput_samples_per_s, 2.0 * 8.0 * 2.0 / (2.0 + 1.0));
  EXPECT_DOUBLE_EQ(*got.summary->final_test_acc, 0.75);

  // New runs go on from there.
  const int64_t next = store.run_begin(run_make());
  EXPECT_GT(next, 7);
}

TEST_F(StoreTest, FailedMigrationRollsBackAndLosesNothing) {
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 1);
    raw_exec(db, "INSERT INTO runs (id, created_at, status) VALUES (1, '2025-01-01', 'completed')");
    raw_exec(db, "CREATE TABLE summaries (x)");  // makes migration v1 -> v2 fail midway
    sqlite3_close(db);
  }
  EXPECT_THROW(Store::open(db_path()), Error);

  sqlite3* db = raw_open(db_path());
  EXPECT_EQ(raw_query_text(db, "PRAGMA user_version"), "1");
  EXPECT_EQ(raw_query_text(db, "SELECT count(*) FROM runs"), "1");
  // The ALTER TABLE that ran before the failure was rolled back as well.
  EXPECT_EQ(raw_query_text(db, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'target'"), "0");
  sqlite3_close(db);
}

TEST_F(StoreTest, MigratesAVersion2DatabaseKeepingItsDataAndReadingInjectedAsZero) {
  int64_t id = 0;
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 2);
    raw_exec(db,
             "INSERT INTO runs (id, created_at, finished_at, status, workload, workers, batch, "
             "steps, seed) VALUES (3, '2025-06-01T10:00:00Z', '2025-06-01T10:01:00Z', "
             "'completed', 'svm', 2, 8, 2, '5')");
    raw_exec(db,
             "INSERT INTO steps (run_id, rank, step, timed, start_s, step_s, fwd_s, bwd_s, opt_s, "
             "data_s, comm_s, wait_s, overlap_s, bytes_sent, train_loss) VALUES "
             "(3, 0, 0, 1, 0.0, 1.0, 0.1, 0.2, 0.3, 0.01, 0.02, 0.03, 0, 16, 0.5), "
             "(3, 1, 0, 1, 0.0, 2.0, 0.1, 0.2, 0.3, 0.01, 0.02, 0.03, 0, 16, 0.6)");
    raw_exec(db,
             "INSERT INTO summaries (run_id, throughput_samples_per_s, step_time_s, timed_steps) "
             "VALUES (3, 8.0, 1.5, 1)");
    EXPECT_EQ(raw_query_text(db, "PRAGMA user_version"), "2");
    sqlite3_close(db);
    id = 3;
  }
  // Read-only: v2 has no injected_s columns and no calibration tables; both read as absent.
  {
    Store old = Store::open_readonly(db_path());
    EXPECT_EQ(old.user_version(), 2);
    std::vector<StepRow> rows = old.steps_get(id);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].injected_s, 0.0);
    EXPECT_DOUBLE_EQ(rows[1].step_s, 2.0);
    RunWithSummary got = old.run_get(id);
    ASSERT_TRUE(got.summary.has_value());
    EXPECT_EQ(got.summary->injected_s, 0.0);
    EXPECT_DOUBLE_EQ(got.summary->step_time_s, 1.5);
    EXPECT_FALSE(old.calibration_latest().has_value());
    EXPECT_TRUE(old.calibrations_list().empty());
    EXPECT_TRUE(old.collectives_get(1).empty());
    EXPECT_THROW(old.calibration_get(1), InputError);
  }
  Store store = Store::open(db_path());
  EXPECT_EQ(store.user_version(), Store::schema_version());
  EXPECT_GE(Store::schema_version(), 3);
  // Old rows kept, their injected_s NULL in the file and 0 when read.
  EXPECT_EQ(raw_query_text(store.handle(), "SELECT count(*) FROM steps WHERE injected_s IS NULL"), "2");
  std::vector<StepRow> rows = store.steps_get(id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].injected_s, 0.0);
  EXPECT_DOUBLE_EQ(rows[0].train_loss, 0.5);
  RunWithSummary got = store.run_get(id);
  EXPECT_EQ(got.run.status, RunStatus::run_completed);
  ASSERT_TRUE(got.summary.has_value());
  EXPECT_DOUBLE_EQ(got.summary->throughput_samples_per_s, 8.0);
  EXPECT_EQ(got.summary->injected_s, 0.0);
  // New rows carry injected_s.
  const int64_t next = store.run_begin(run_make());
  StepRow row = step_make(1, 0, true, 1.0);
  row.injected_s = 0.03125;
  store.steps_append(next, {row});
  store.run_finish(next, RunStatus::run_completed, "");
  EXPECT_EQ(store.steps_get(next)[0].injected_s, 0.03125);
  EXPECT_DOUBLE_EQ(store.run_get(next).summary->injected_s, 0.03125);
  // The calibration tables exist and are empty.
  EXPECT_FALSE(store.calibration_latest().has_value());
}

TEST_F(StoreTest, InjectedDelayRoundTripsAndIsAveragedInTheSummary) {
  Store store = Store::open(db_path());
  const int64_t id = store.run_begin(run_make());
  std::vector<StepRow> rows = {step_make(0, 0, false, 1.0), step_make(1, 0, false, 1.0), step_make(0, 1, true, 1.0),
                               step_make(1, 1, true, 1.0),  step_make(0, 2, true, 1.0),  step_make(1, 2, true, 1.0)};
  rows[1].injected_s = 9.0;  // warm-up: not in the mean
  rows[3].injected_s = 0.5;
  rows[5].injected_s = 0.25;
  rows[4].injected_s = 0.0;
  rows[2].injected_s = 0.0;
  store.steps_append(id, rows);
  store.run_finish(id, RunStatus::run_completed, "");
  std::vector<StepRow> back = store.steps_get(id);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) expect_same_step(back[i], rows[i]);
  ASSERT_TRUE(store.run_get(id).summary.has_value());
  EXPECT_DOUBLE_EQ(store.run_get(id).summary->injected_s, (0.5 + 0.25) / 4);
}

// ---- calibrations ----------------------------------------------------------------------------

CalibrationRecord calibration_make(const std::string& host) {
  CalibrationRecord c;
  c.workers = 2;
  c.host = host;
  c.cpu_model = "Test CPU";
  c.mpi_version = "MPICH Version: 4.0";
  c.git_commit = "abc123";
  c.tool_version = "0.1.0";
  c.config_json = R"({"reps": 5})";
  return c;
}

TEST_F(StoreTest, CalibrationRoundTripKeepsEveryValue) {
  Store store = Store::open(db_path());
  const int64_t id = store.calibration_begin(calibration_make("node01"));
  EXPECT_GT(id, 0);
  std::vector<CollectiveRow> collectives = {
      {"allreduce", 1048576, 40, 2.5e-4, 2.4e-4, 2.7e-4, 4.194304, 4.194304, 0.08},
      {"allreduce", 4, 5000, 2.0e-6, 1.9e-6, 2.2e-6, 0.002, 0.002},  // spread unknown: NULL
      {"sendrecv", 8, 6000, 1.0e-6, 0.9e-6, 1.5e-6, 0.008, 0.008},
  };
  std::vector<FitRow> fits = {{"allreduce", 2.0e-5, 8.0e-10, 1.25e9, 0.031},
                              {"sendrecv", 1.0e-6, 4.0e-10, 2.5e9, 0.02}};
  std::vector<ProfileRow> profiles = {{"svm", "fashion-mnist", 64, 0, "weights", 1.0e-4, 2.0e-4},
                                      {"svm", "fashion-mnist", 64, 1, "bias", 1.0e-7, 3.0e-6},
                                      {"svm", "fashion-mnist", 16, 0, "weights", 3.0e-5, 6.0e-5}};
  store.collectives_append(id, collectives);
  store.fits_append(id, fits);
  store.profiles_append(id, profiles);

  CalibrationRecord got = store.calibration_get(id);
  EXPECT_EQ(got.id, id);
  EXPECT_FALSE(got.created_at.empty());
  EXPECT_EQ(got.workers, 2);
  EXPECT_EQ(got.host, "node01");
  EXPECT_EQ(got.cpu_model, "Test CPU");
  EXPECT_EQ(got.mpi_version, "MPICH Version: 4.0");
  EXPECT_EQ(got.git_commit, "abc123");
  EXPECT_EQ(got.tool_version, "0.1.0");
  EXPECT_EQ(got.config_json, R"({"reps": 5})");

  std::vector<CollectiveRow> c = store.collectives_get(id);  // by op, then bytes
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].op, "allreduce");
  EXPECT_EQ(c[0].bytes, 4);
  EXPECT_EQ(c[1].bytes, 1048576);
  EXPECT_EQ(c[1].iters, 40);
  EXPECT_EQ(c[1].time_s, 2.5e-4);
  EXPECT_EQ(c[1].time_min_s, 2.4e-4);
  EXPECT_EQ(c[1].time_max_s, 2.7e-4);
  EXPECT_EQ(c[1].algbw_gbps, 4.194304);
  EXPECT_EQ(c[1].busbw_gbps, 4.194304);
  EXPECT_EQ(c[1].spread, 0.08);
  EXPECT_TRUE(std::isnan(c[0].spread));
  EXPECT_EQ(c[2].op, "sendrecv");

  std::vector<FitRow> f = store.fits_get(id);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].op, "allreduce");
  EXPECT_EQ(f[0].alpha_s, 2.0e-5);
  EXPECT_EQ(f[0].beta_s_per_byte, 8.0e-10);
  EXPECT_EQ(f[0].bandwidth_bytes_per_s, 1.25e9);
  EXPECT_EQ(f[0].rel_error, 0.031);

  std::vector<ProfileRow> p = store.profiles_get(id);  // by workload, batch, layer
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].batch, 16);
  EXPECT_EQ(p[1].batch, 64);
  EXPECT_EQ(p[1].layer, 0);
  EXPECT_EQ(p[1].layer_name, "weights");
  EXPECT_EQ(p[1].dataset, "fashion-mnist");
  EXPECT_EQ(p[1].fwd_s, 1.0e-4);
  EXPECT_EQ(p[1].bwd_s, 2.0e-4);
  EXPECT_EQ(p[2].layer_name, "bias");

  // A duplicate (op, bytes) is refused and the batch rolled back.
  EXPECT_THROW(store.collectives_append(id, {collectives[0], collectives[0]}), Error);
  EXPECT_EQ(store.collectives_get(id).size(), 3u);
}

TEST_F(StoreTest, CalibrationLatestIsTheNewestOfTheHost) {
  Store store = Store::open(db_path());
  EXPECT_FALSE(store.calibration_latest().has_value());
  const int64_t a = store.calibration_begin(calibration_make("node01"));
  const int64_t b = store.calibration_begin(calibration_make("node02"));
  const int64_t c = store.calibration_begin(calibration_make("node01"));
  EXPECT_LT(a, b);
  EXPECT_EQ(store.calibration_latest(), c);
  EXPECT_EQ(store.calibration_latest("node01"), c);
  EXPECT_EQ(store.calibration_latest("node02"), b);
  EXPECT_FALSE(store.calibration_latest("node03").has_value());
  std::vector<CalibrationRecord> listed = store.calibrations_list();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].id, c);
  EXPECT_EQ(store.calibrations_list(1).size(), 1u);
}

// The native fabric is the newest calibration of the host that fitted an all-reduce: a
// newer profile-only calibration (no fits) does not hide it, another host's never counts.
TEST_F(StoreTest, AllreduceFitLatestSkipsProfileOnlyCalibrations) {
  Store store = Store::open(db_path());
  EXPECT_FALSE(store.allreduce_fit_latest("node01").has_value());
  const int64_t a = store.calibration_begin(calibration_make("node01"));
  store.fits_append(a, {FitRow{"allreduce", 2e-5, 1e-9, 1e9, 0.01}, FitRow{"broadcast", 1e-5, 2e-9, 5e8, 0.02}});
  const int64_t b = store.calibration_begin(calibration_make("node02"));
  store.fits_append(b, {FitRow{"allreduce", 3e-5, 1e-10, 1e10, 0.01}});
  store.calibration_begin(calibration_make("node01"));  // profile only: no fits
  const std::optional<AllreduceFit> fit = store.allreduce_fit_latest("node01");
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->calibration_id, a);
  EXPECT_EQ(fit->alpha_s, 2e-5);
  EXPECT_EQ(fit->bandwidth_bytes_per_s, 1e9);
  EXPECT_EQ(store.allreduce_fit_latest("node02")->calibration_id, b);
  EXPECT_FALSE(store.allreduce_fit_latest("node03").has_value());
}

// The host's fits newest first, profile-only calibrations and other hosts skipped, at most
// `limit` (what a simulated run compares to see the fabric move between calibrations).
TEST_F(StoreTest, AllreduceFitsAreTheHostsNewestFirstUpToTheLimit) {
  Store store = Store::open(db_path());
  EXPECT_TRUE(store.allreduce_fits("node01", 2).empty());
  const int64_t a = store.calibration_begin(calibration_make("node01"));
  store.fits_append(a, {FitRow{"allreduce", 2e-5, 1e-9, 1e9, 0.01}});
  const int64_t other = store.calibration_begin(calibration_make("node02"));
  store.fits_append(other, {FitRow{"allreduce", 3e-5, 1e-10, 1e10, 0.01}});
  const int64_t b = store.calibration_begin(calibration_make("node01"));
  store.fits_append(b, {FitRow{"allreduce", 4e-5, 1e-9, 5e8, 0.01}});
  store.calibration_begin(calibration_make("node01"));  // profile only: no fits
  const std::vector<AllreduceFit> two = store.allreduce_fits("node01", 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].calibration_id, b);
  EXPECT_EQ(two[0].bandwidth_bytes_per_s, 5e8);
  EXPECT_EQ(two[1].calibration_id, a);
  EXPECT_EQ(store.allreduce_fits("node01", 1).size(), 1u);
  EXPECT_EQ(store.allreduce_fits("node01", 5).size(), 2u);
  EXPECT_EQ(store.allreduce_fit_latest("node01")->calibration_id, b);
}

TEST_F(StoreTest, UnknownCalibrationIsAnInputError) {
  Store store = Store::open(db_path());
  CaughtInputError caught = catch_input_error([&] { store.calibration_get(9); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("calibration 9 not found"), std::string::npos) << caught.what;
  EXPECT_THROW(store.collectives_append(9, {CollectiveRow{"allreduce", 4, 1, 1e-6, 1e-6, 1e-6, 0, 0}}), InputError);
  EXPECT_THROW(store.fits_append(9, {FitRow{"allreduce", 1e-6, 1e-9, 1e9, 0}}), InputError);
  EXPECT_THROW(store.profiles_append(9, {ProfileRow{"svm", "x", 1, 0, "w", 0, 0}}), InputError);
  EXPECT_TRUE(store.collectives_get(9).empty());
  EXPECT_TRUE(store.fits_get(9).empty());
  EXPECT_TRUE(store.profiles_get(9).empty());
  CalibrationRecord bad = calibration_make("node01");
  bad.workers = 0;
  EXPECT_THROW(store.calibration_begin(bad), Error);
}

// ---- refusals that leave everything untouched -------------------------------------------------

TEST_F(StoreTest, NewerSchemaIsRefusedAndTheFileIsUntouched) {
  {
    sqlite3* db = raw_open(db_path());
    // As a newer dsgd-bench would leave it: WAL mode, closed cleanly.
    raw_exec(db,
             "PRAGMA journal_mode = WAL; CREATE TABLE runs (id INTEGER PRIMARY KEY);"
             "INSERT INTO runs VALUES (1); PRAGMA user_version = 99; PRAGMA application_id = 1146308420");
    sqlite3_close(db);
  }
  const std::string before = file_bytes(db_path());
  auto directory_listing = [&] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> files_before = directory_listing();
  for (bool readonly : {false, true}) {
    CaughtInputError caught = catch_input_error([&] {
      if (readonly) {
        Store::open_readonly(db_path());
      } else {
        Store::open(db_path());
      }
    });
    ASSERT_TRUE(caught.thrown);
    EXPECT_NE(caught.what.find("newer"), std::string::npos) << caught.what;
    EXPECT_NE(caught.what.find("v99"), std::string::npos) << caught.what;
    EXPECT_NE(caught.what.find(db_path()), std::string::npos) << caught.what;
    EXPECT_NE(caught.hint.find("upgrade dsgd-bench"), std::string::npos) << caught.hint;
  }
  EXPECT_EQ(file_bytes(db_path()), before);
  EXPECT_EQ(directory_listing(), files_before);  // no -wal, -shm or -journal left behind
}

TEST_F(StoreTest, NewerSchemaOnlyInTheWalIsRefusedWithoutCheckpointing) {
  // A crash snapshot: a newer writer's changes still in dsgd.db-wal, the main file's
  // header older. Copying a live database and its -wal mid-run makes one.
  const std::string live = db_path("live.db");
  sqlite3* writer = raw_open(live);
  raw_exec(writer,
           "PRAGMA journal_mode = WAL; CREATE TABLE runs (id INTEGER PRIMARY KEY);"
           "PRAGMA user_version = 99; PRAGMA application_id = 1146308420");
  fs::copy_file(live, db_path());
  fs::copy_file(live + "-wal", db_path() + "-wal");
  sqlite3_close(writer);

  const std::string main_before = file_bytes(db_path());
  const std::string wal_before = file_bytes(db_path() + "-wal");
  CaughtInputError caught = catch_input_error([&] { Store::open(db_path()); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("newer dsgd-bench (schema v99"), std::string::npos) << caught.what;
  EXPECT_EQ(file_bytes(db_path()), main_before);  // the WAL was not checkpointed into it
  EXPECT_EQ(file_bytes(db_path() + "-wal"), wal_before);
}

TEST_F(StoreTest, NonSqliteFileIsRefusedAndUntouched) {
  const std::string path = db_path("notes.txt");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 100; ++i) out << "these are my notes, line " << i << "\n";
  }
  const std::string before = file_bytes(path);
  CaughtInputError caught = catch_input_error([&] { Store::open(path); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("not a SQLite database"), std::string::npos) << caught.what;
  EXPECT_NE(caught.what.find(path), std::string::npos) << caught.what;
  EXPECT_THROW(Store::open_readonly(path), InputError);
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + "-wal"));
}

TEST_F(StoreTest, MissingDirectoryIsRefusedAndNothingIsCreated) {
  const fs::path missing = dir_ / "nope";
  const std::string path = (missing / "x.db").string();
  CaughtInputError caught = catch_input_error([&] { Store::open(path); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("directory '" + missing.string() + "' does not exist"), std::string::npos) << caught.what;
  EXPECT_EQ(caught.hint, "create the directory or pass another --db");
  EXPECT_FALSE(fs::exists(missing));
}

TEST_F(StoreTest, UnwritableDirectoryIsRefused) {
  // A 0555 directory stops everyone but root; /proc/self stops root too.
  fs::path locked = dir_ / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  if (::access(locked.c_str(), W_OK) == 0) locked = "/proc/self";
  if (::access(locked.c_str(), W_OK) == 0) GTEST_SKIP() << "no unwritable directory available";

  const std::string path = (locked / "dsgd.db").string();
  CaughtInputError caught = catch_input_error([&] { Store::open(path); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("not writable"), std::string::npos) << caught.what;
  EXPECT_FALSE(fs::exists(path));
}

// ---- lookups and read-only access ---------------------------------------------------------------

TEST_F(StoreTest, MissingRunIsAnInputError) {
  Store store = Store::open(db_path());
  CaughtInputError caught = catch_input_error([&] { store.run_get(42); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("run 42 not found in DB"), std::string::npos) << caught.what;
  EXPECT_THROW(store.run_finish(42, RunStatus::run_completed, ""), InputError);
  EXPECT_TRUE(store.steps_get(42).empty());
  EXPECT_TRUE(store.evals_get(42).empty());
}

TEST_F(StoreTest, ReadOnlyOpenReadsAndNeverWrites) {
  CaughtInputError missing = catch_input_error([&] { Store::open_readonly(db_path()); });
  ASSERT_TRUE(missing.thrown);
  EXPECT_NE(missing.what.find("no database at '" + db_path() + "'"), std::string::npos);
  EXPECT_EQ(missing.hint, "run `dsgd-bench run` first or pass --db");
  EXPECT_FALSE(fs::exists(db_path()));

  int64_t id = 0;
  {
    Store store = Store::open(db_path());
    id = store.run_begin(run_make());
    store.run_finish(id, RunStatus::run_interrupted, "");
  }
  const std::string before = file_bytes(db_path());
  {
    Store store = Store::open_readonly(db_path());
    EXPECT_EQ(store.run_get(id).run.status, RunStatus::run_interrupted);
    EXPECT_EQ(store.runs_list().size(), 1u);
    EXPECT_THROW(store.run_begin(run_make()), Error);
  }
  EXPECT_EQ(file_bytes(db_path()), before);
}

TEST_F(StoreTest, MovedStoreKeepsWorking) {
  Store first = Store::open(db_path());
  const int64_t id = first.run_begin(run_make());
  Store second = std::move(first);
  EXPECT_EQ(second.run_get(id).run.id, id);
  Store third = Store::open(db_path("other.db"));
  third = std::move(second);
  EXPECT_EQ(third.path(), db_path());
  EXPECT_EQ(third.runs_list().size(), 1u);
}

// ---- batched append speed --------------------------------------------------------------------

TEST_F(StoreTest, Append10kStepRowsInOneBatch) {
  Store store = Store::open(db_path());
  const int64_t id = store.run_begin(run_make());
  std::vector<StepRow> rows;
  rows.reserve(10000);
  for (int64_t step = 0; step < 2500; ++step) {
    for (int rank = 0; rank < 4; ++rank) rows.push_back(step_make(rank, step, true, 0.01));
  }
  const auto start = std::chrono::steady_clock::now();
  store.steps_append(id, rows);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing   ] steps_append of %zu rows: %.2f ms\n", rows.size(), seconds * 1e3);
  EXPECT_EQ(store.steps_get(id).size(), rows.size());
}

// v3 -> v4: evals.consensus_distance. Old rows read as empty (read-only and migrated);
// new rows keep a value, or NULL for an empty optional.
TEST_F(StoreTest, MigratesAVersion3DatabaseAddingConsensusDistance) {
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 3);
    raw_exec(db,
             "INSERT INTO runs (id, created_at, finished_at, status, workload, workers, batch, "
             "steps, seed) VALUES (4, '2025-07-01T10:00:00Z', '2025-07-01T10:01:00Z', "
             "'completed', 'svm', 2, 8, 2, '5')");
    raw_exec(db,
             "INSERT INTO evals (run_id, step, time_s, train_loss, test_loss, test_acc) VALUES "
             "(4, 0, 0.0, NULL, 0.9, 0.1), (4, 2, 1.5, 0.7, 0.6, 0.5)");
    EXPECT_EQ(raw_query_text(db, "PRAGMA user_version"), "3");
    sqlite3_close(db);
  }
  {
    Store old = Store::open_readonly(db_path());
    EXPECT_EQ(old.user_version(), 3);
    const std::vector<EvalRow> rows = old.evals_get(4);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_FALSE(rows[1].consensus_distance.has_value());
    EXPECT_DOUBLE_EQ(rows[1].test_acc, 0.5);
  }
  Store store = Store::open(db_path());
  EXPECT_EQ(store.user_version(), Store::schema_version());
  EXPECT_GE(Store::schema_version(), 4);
  EXPECT_EQ(raw_query_text(store.handle(), "SELECT count(*) FROM evals WHERE consensus_distance IS NULL"), "2");
  const std::vector<EvalRow> rows = store.evals_get(4);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].consensus_distance.has_value());
  EXPECT_DOUBLE_EQ(rows[1].test_loss, 0.6);
  const int64_t next = store.run_begin(run_make());
  EvalRow with = eval_make(10, 2.0, 0.4, 0.8);
  with.consensus_distance = 0.015625;
  EvalRow without = eval_make(20, 4.0, 0.3, 0.9);
  store.evals_append(next, {with, without});
  const std::vector<EvalRow> got = store.evals_get(next);
  ASSERT_EQ(got.size(), 2u);
  expect_same_eval(got[0], with);
  expect_same_eval(got[1], without);
  EXPECT_EQ(
      raw_query_text(store.handle(),
                     fmt::format("SELECT count(*) FROM evals WHERE run_id = {} AND consensus_distance IS NULL", next)),
      "1");
}

// v10 -> v11: evals.eval_s. An older database is read without the column (empty), both
// read-only and after migrating; a new row keeps its value.
TEST_F(StoreTest, MigratesAVersion10DatabaseAddingEvalSeconds) {
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 10);
    raw_exec(db,
             "INSERT INTO runs (id, created_at, finished_at, status, workload, workers, batch, "
             "steps, seed) VALUES (4, '2026-11-01T10:00:00Z', '2026-11-01T10:01:00Z', "
             "'completed', 'svm', 2, 8, 2, '5')");
    raw_exec(db,
             "INSERT INTO evals (run_id, step, time_s, train_loss, test_loss, test_acc) VALUES "
             "(4, 0, 0.0, NULL, 0.9, 0.1), (4, 2, 1.5, 0.7, 0.6, 0.5)");
    sqlite3_close(db);
  }
  {
    Store old = Store::open_readonly(db_path());
    EXPECT_EQ(old.user_version(), 10);
    const std::vector<EvalRow> rows = old.evals_get(4);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_FALSE(rows[1].eval_s.has_value());
    EXPECT_DOUBLE_EQ(rows[1].test_acc, 0.5);
  }
  Store store = Store::open(db_path());
  EXPECT_GE(Store::schema_version(), 11);
  EXPECT_EQ(raw_query_text(store.handle(), "SELECT count(*) FROM evals WHERE eval_s IS NULL"), "2");
  EXPECT_FALSE(store.evals_get(4)[0].eval_s.has_value());
  const int64_t next = store.run_begin(run_make());
  EvalRow with = eval_make(10, 2.0, 0.4, 0.8);
  with.eval_s = 0.125;
  store.evals_append(next, {with});
  const std::vector<EvalRow> got = store.evals_get(next);
  ASSERT_EQ(got.size(), 1u);
  expect_same_eval(got[0], with);
}

// eval_total_s (schema v14, a field-table column without a migration script): the sum of the
// evaluations' eval_s, empty when none has one.
TEST(SummaryCompute, EvaluationTimeIsTheSumOfEvalSeconds) {
  TwoRankExample ex;
  EXPECT_FALSE(summary_compute(ex.run, ex.steps, ex.evals).eval_total_s.has_value());
  ex.evals[0].eval_s = 0.25;
  ex.evals[1].eval_s = 0.5;
  const Summary s = summary_compute(ex.run, ex.steps, ex.evals);
  ASSERT_TRUE(s.eval_total_s.has_value());
  EXPECT_DOUBLE_EQ(*s.eval_total_s, 0.75);
}

// v13 -> v14: summaries.eval_total_s comes from the field table (no script). A v13 database is
// read without it (empty), read-only and after migrating; the migration adds the column and a
// run finished afterwards stores its value.
TEST_F(StoreTest, MigratesAVersion13DatabaseAddingEvalTotalFromTheFieldTable) {
  {
    sqlite3* db = raw_open(db_path());
    migrations_apply(db, 0, 13);
    raw_exec(db,
             "INSERT INTO runs (id, created_at, finished_at, status, workload, workers, batch, "
             "steps, seed) VALUES (4, '2026-11-01T10:00:00Z', '2026-11-01T10:01:00Z', "
             "'completed', 'svm', 2, 8, 2, '5')");
    raw_exec(db, "INSERT INTO summaries (run_id, throughput_samples_per_s, timed_steps) VALUES (4, 100.0, 2)");
    sqlite3_close(db);
  }
  {
    Store old = Store::open_readonly(db_path());
    EXPECT_EQ(old.user_version(), 13);
    const RunWithSummary run = old.run_get(4);
    ASSERT_TRUE(run.summary.has_value());
    EXPECT_DOUBLE_EQ(run.summary->throughput_samples_per_s, 100.0);
    EXPECT_FALSE(run.summary->eval_total_s.has_value());
  }
  Store store = Store::open(db_path());
  EXPECT_GE(store.user_version(), 14);
  EXPECT_FALSE(store.run_get(4).summary->eval_total_s.has_value());
  EXPECT_EQ(raw_query_text(store.handle(),
                           "SELECT count(*) FROM pragma_table_info('summaries') WHERE name = "
                           "'eval_total_s'"),
            "1");
  const int64_t next = store.run_begin(run_make());
  EvalRow eval = eval_make(2, 1.0, 0.5, 0.7);
  eval.eval_s = 0.125;
  store.evals_append(next, {eval});
  store.run_finish(next, RunStatus::run_completed, "");
  ASSERT_TRUE(store.run_get(next).summary->eval_total_s.has_value());
  EXPECT_DOUBLE_EQ(*store.run_get(next).summary->eval_total_s, 0.125);
}

// ---- dead runs, statuses, corrupt and foreign files ----------------------------------------------

// A pid that no longer exists: a child that has exited and been reaped.
int64_t pid_dead() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

std::string this_host() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

TEST_F(StoreTest, RunOfThisHostWhosePidIsGoneIsMarkedKilledOnOpen) {
  int64_t id = 0;
  {
    Store store = Store::open(db_path());
    RunRecord run = run_make();
    run.host = this_host();
    id = store.run_begin(run);
    store.steps_append(id, {step_make(0, 0, true, 0.5)});
    EXPECT_EQ(store.run_get(id).run.pid, static_cast<int64_t>(getpid()));
    EXPECT_FALSE(store.run_get(id).run.heartbeat_at.empty());
    raw_exec(store.handle(), fmt::format("UPDATE runs SET pid = {} WHERE id = {}", pid_dead(), id));
  }
  {
    const Store reader = Store::open_readonly(db_path());  // the database is writable: stored
    const RunWithSummary got = reader.run_get(id);
    EXPECT_EQ(got.run.status, RunStatus::run_killed);
    EXPECT_NE(got.run.error.find("process gone"), std::string::npos) << got.run.error;
    ASSERT_TRUE(got.summary.has_value());  // what was measured is kept and summarised
    EXPECT_EQ(got.summary->timed_steps, 1);
  }
  sqlite3* db = raw_open(db_path());
  EXPECT_EQ(raw_query_text(db, fmt::format("SELECT status FROM runs WHERE id = {}", id)), "killed");
  sqlite3_close(db);
}

TEST_F(StoreTest, RunWhosePidWasReusedIsKilledAndALiveOneStaysRunning) {
  Store store = Store::open(db_path());
  RunRecord run = run_make();
  run.host = this_host();
  const int64_t live = store.run_begin(run);
  const int64_t reused = store.run_begin(run);
  raw_exec(store.handle(), fmt::format("UPDATE runs SET pid_start = pid_start + 1 WHERE id = {}", reused));
  Store again = Store::open(db_path());
  EXPECT_EQ(again.run_get(live).run.status, RunStatus::run_running);  // this very process: alive
  EXPECT_EQ(again.run_get(reused).run.status, RunStatus::run_killed);
  EXPECT_NE(again.run_get(reused).run.error.find("another process"), std::string::npos);
}

TEST_F(StoreTest, UncheckableRunIsStaleAfterAnHourWithoutHeartbeatButStaysStored) {
  Store store = Store::open(db_path());
  const int64_t quiet = store.run_begin(run_make());  // host node01: cannot be checked from here
  const int64_t recent = store.run_begin(run_make());
  raw_exec(store.handle(), fmt::format("UPDATE runs SET heartbeat_at = '2020-01-01T00:00:00Z' WHERE id = {}", quiet));
  Store again = Store::open(db_path());
  EXPECT_EQ(again.run_get(quiet).run.status, RunStatus::run_stale);
  EXPECT_EQ(again.run_get(recent).run.status, RunStatus::run_running);
  EXPECT_EQ(raw_query_text(again.handle(), fmt::format("SELECT status FROM runs WHERE id = {}", quiet)), "running");
}

TEST_F(StoreTest, FinishAcceptsKilledAndDivergedButNotRunning) {
  Store store = Store::open(db_path());
  const int64_t a = store.run_begin(run_make());
  store.run_finish(a, RunStatus::run_diverged, "loss is NaN");  // the status another part adds
  EXPECT_EQ(store.run_get(a).run.status, RunStatus::run_diverged);
  const int64_t b = store.run_begin(run_make());
  store.run_finish(b, RunStatus::run_killed, "by a test");
  EXPECT_EQ(store.run_get(b).run.status, RunStatus::run_killed);
  EXPECT_THROW(store.run_finish(b, RunStatus::run_running, ""), Error);
}

TEST_F(StoreTest, LaunchIdIsRecordedAndFindsTheLaunchsRuns) {
  Store store = Store::open(db_path());
  ::setenv("DSGD_LAUNCH_ID", "123-456", 1);
  const int64_t id = store.run_begin(run_make());
  ::unsetenv("DSGD_LAUNCH_ID");
  const int64_t other = store.run_begin(run_make());
  EXPECT_EQ(store.run_get(id).run.launch_id, "123-456");
  EXPECT_EQ(store.runs_of_launch("123-456", RunStatus::run_running), std::vector<int64_t>{id});
  EXPECT_TRUE(store.run_get(other).run.launch_id.empty());
}

TEST_F(StoreTest, SqliteHeaderWithRandomContentIsNotADsgdDatabase) {
  const std::string path = db_path("random.db");
  {
    std::ofstream out(path, std::ios::binary);
    out.write("SQLite format 3", 16);
    uint32_t x = 12345;
    for (int i = 0; i < 8192; ++i) {
      x = x * 1103515245u + 12345u;
      out.put(static_cast<char>(x >> 24));
    }
  }
  const std::string before = file_bytes(path);
  for (bool readonly : {false, true}) {
    CaughtInputError caught = catch_input_error([&] {
      if (readonly) {
        Store::open_readonly(path);
      } else {
        Store::open(path);
      }
    });
    ASSERT_TRUE(caught.thrown);
    EXPECT_NE(caught.what.find("not a dsgd-bench database or it is corrupt"), std::string::npos) << caught.what;
    EXPECT_EQ(caught.what.find("newer"), std::string::npos) << caught.what;
  }
  EXPECT_EQ(file_bytes(path), before);
}

TEST_F(StoreTest, AnotherProgramsSqliteDatabaseIsRefusedAndUntouched) {
  const std::string path = db_path("other.db");
  {
    sqlite3* db = raw_open(path);
    raw_exec(db, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
    sqlite3_close(db);
  }
  const std::string before = file_bytes(path);
  CaughtInputError caught = catch_input_error([&] { Store::open(path); });
  ASSERT_TRUE(caught.thrown);
  EXPECT_NE(caught.what.find("not a dsgd-bench database"), std::string::npos) << caught.what;
  EXPECT_EQ(file_bytes(path), before);
}

TEST_F(StoreTest, CorruptPagesAreFoundBeforeAnythingIsWritten) {
  int64_t id = 0;
  {
    Store store = Store::open(db_path());
    id = store.run_begin(run_make());
    std::vector<StepRow> rows;
    for (int64_t step = 0; step < 3000; ++step) rows.push_back(step_make(0, step, true, 0.5));
    store.steps_append(id, rows);
  }
  {
    // Garbage over the middle of the file (a b-tree page of steps), the header intact.
    std::fstream file(db_path(), std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(static_cast<std::streamoff>(fs::file_size(db_path()) / 2 / 4096 * 4096));
    for (int i = 0; i < 4096; ++i) file.put(static_cast<char>(0xA5 ^ i));
  }
  const std::string before = file_bytes(db_path());
  bool thrown = false;
  try {
    Store::open(db_path());
  } catch (const Error& e) {
    thrown = true;
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(file_bytes(db_path()), before);
}

TEST_F(StoreTest, StepsAppendBeatsTheHeartbeat) {
  Store store = Store::open(db_path());
  const int64_t id = store.run_begin(run_make());
  raw_exec(store.handle(), fmt::format("UPDATE runs SET heartbeat_at = '2020-01-01T00:00:00Z' WHERE id = {}", id));
  store.steps_append(id, {step_make(0, 0, true, 0.5)});
  EXPECT_NE(store.run_get(id).run.heartbeat_at, "2020-01-01T00:00:00Z");
  EXPECT_EQ(store.run_get(id).run.status, RunStatus::run_running);
}

}  // namespace
}  // namespace dsgd
