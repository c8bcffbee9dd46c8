// Tests of the Chrome trace-event writer (results/trace.*): a 2-rank run stored in a
// temporary database is traced and parsed back with nlohmann::json; checked are the
// tracks (one thread_name per rank), event counts, that every phase event's duration
// is the stored value and that phases lie back to back in the documented order, the
// evaluation instants, the size bound (sampling every k-th step) and the --steps
// window, and refusals (unknown run, bad --steps, a bound too small for one step).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "results/store.hpp"
#include "results/trace.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

struct PhaseField {
  const char* name;
  double StepRow::*field;
};
// The documented layout order inside a step.
const PhaseField kPhaseOrder[] = {{"data", &StepRow::data_s}, {"fwd", &StepRow::fwd_s},
                                  {"bwd", &StepRow::bwd_s},   {"injected", &StepRow::injected_s},
                                  {"wait", &StepRow::wait_s}, {"comm", &StepRow::comm_s},
                                  {"opt", &StepRow::opt_s}};

RunRecord run_make(int64_t steps) {
  RunRecord run;
  run.workload = "svm";
  run.dataset = "synthetic";
  run.algorithm = "ssgd";
  run.backend = "mpi";
  run.workers = 2;
  run.batch = 32;
  run.period = 1;
  run.steps = steps;
  run.warmup = 2;
  run.seed = 7;
  run.tag = "trace \"test\"";
  run.config_json = R"({"lr": 0.1})";
  run.host = "node01";
  return run;
}

// Rank r, step s: distinct, exactly representable-ish durations; injected on rank 1 at
// odd steps only.
StepRow row_make(int rank, int64_t step, int64_t warmup) {
  StepRow row;
  row.rank = rank;
  row.step = step;
  row.timed = step >= warmup;
  row.start_s = 0.01 * static_cast<double>(step) + 1e-5 * rank;
  row.data_s = 1e-4 + 1e-6 * rank;
  row.fwd_s = 2e-4 + 1e-7 * static_cast<double>(step % 7);
  row.bwd_s = 4e-4;
  row.injected_s = (rank == 1 && step % 2 == 1) ? 3e-3 : 0.0;
  row.wait_s = 5e-5 * rank;
  row.comm_s = 1.5e-4;
  row.opt_s = 3e-5;
  row.step_s = row.data_s + row.fwd_s + row.bwd_s + row.injected_s + row.wait_s + row.comm_s + row.opt_s + 2e-6;
  row.bytes_sent = 3216;
  row.train_loss = 1.0 / (1.0 + static_cast<double>(step));
  return row;
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dsgd_trace_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Stores a finished 2-rank run of `steps` steps with evaluations every 5 steps.
  int64_t store_run(Store& store, int64_t steps) {
    const RunRecord run = run_make(steps);
    const int64_t id = store.run_begin(run);
    rows_.clear();
    for (int64_t step = 0; step < steps; ++step) {
      for (int rank = 0; rank < 2; ++rank) rows_.push_back(row_make(rank, step, run.warmup));
    }
    store.steps_append(id, rows_);
    std::vector<EvalRow> evals;
    for (int64_t step = 0; step <= steps; step += 5) {
      EvalRow e;
      e.step = step;
      e.time_s = 0.01 * static_cast<double>(step);
      e.train_loss = 0.5;
      e.test_loss = 0.6;
      e.test_acc = step == 0 ? std::nan("") : 0.8;  // NaN must come out as null
      evals.push_back(e);
    }
    store.evals_append(id, evals);
    store.run_finish(id, RunStatus::run_completed, "");
    return id;
  }

  nlohmann::json trace(const Store& store, int64_t id, const TraceOptions& options, TraceStats* stats = nullptr) {
    std::ostringstream out;
    TraceStats s = trace_write_run(store, id, options, out);
    if (stats) *stats = s;
    return nlohmann::json::parse(out.str());  // throws (fails the test) on invalid JSON
  }

  fs::path dir_;
  std::vector<StepRow> rows_;
};

size_t expected_row_events(const StepRow& row) {
  return 1 + 6 + (row.injected_s > 0 ? 1 : 0);
}

TEST_F(TraceTest, TwoRankRunHasOneTrackPerRankAndTheStoredDurations) {
  Store store = Store::open((dir_ / "t.db").string());
  const int64_t id = store_run(store, 12);
  TraceStats stats;
  const nlohmann::json j = trace(store, id, TraceOptions{}, &stats);

  EXPECT_EQ(j.at("displayTimeUnit"), "ms");
  const nlohmann::json& other = j.at("otherData");
  EXPECT_EQ(other.at("run_id"), id);
  EXPECT_EQ(other.at("algorithm"), "ssgd");
  EXPECT_EQ(other.at("tag"), "trace \"test\"");
  EXPECT_EQ(other.at("config").at("lr"), 0.1);
  EXPECT_EQ(other.at("trace").at("sample_every"), 1);
  EXPECT_EQ(other.at("trace").at("sampled"), false);

  const nlohmann::json& events = j.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  EXPECT_EQ(events.size(), stats.events);
  EXPECT_EQ(other.at("trace").at("events"), stats.events);

  // One thread_name per rank, named "rank R"; everything in pid 0.
  std::map<int, std::string> thread_names;
  size_t metadata = 0, instants = 0;
  std::map<std::pair<int, std::string>, std::vector<std::pair<double, double>>> spans;  // (tid, name) -> (ts, dur)
  for (const auto& e : events) {
    EXPECT_EQ(e.at("pid"), 0);
    const std::string ph = e.at("ph");
    if (ph == "M") {
      ++metadata;
      if (e.at("name") == "thread_name") {
        const int tid = e.at("tid");
        EXPECT_EQ(thread_names.count(tid), 0u) << "two thread_name events for tid " << tid;
        thread_names[tid] = e.at("args").at("name");
      }
    } else if (ph == "i") {
      ++instants;
      EXPECT_EQ(e.at("name"), "eval");
    } else {
      ASSERT_EQ(ph, "X");
      spans[{e.at("tid").get<int>(), e.at("name").get<std::string>()}].emplace_back(e.at("ts"), e.at("dur"));
    }
  }
  ASSERT_EQ(thread_names.size(), 2u);
  EXPECT_EQ(thread_names[0], "rank 0");
  EXPECT_EQ(thread_names[1], "rank 1");
  EXPECT_EQ(stats.ranks, 2);
  EXPECT_EQ(metadata, 1u + 2u * 2u);  // process_name; thread_name + thread_sort_index per rank
  EXPECT_EQ(instants, 3u);            // evaluations at steps 0, 5, 10

  size_t expected = metadata + instants;
  for (const StepRow& row : rows_) expected += expected_row_events(row);
  EXPECT_EQ(events.size(), expected);
  size_t injected_rows = 0;
  for (const StepRow& row : rows_) injected_rows += row.injected_s > 0 ? 1 : 0;
  EXPECT_EQ(spans[std::make_pair(1, std::string("injected"))].size(), injected_rows);
  EXPECT_EQ(spans[std::make_pair(0, std::string("injected"))].size(), 0u);

  // Every phase of every row: an event on its rank at the layout position, with the
  // stored duration (microseconds printed to the nanosecond).
  auto find = [&](int tid, const std::string& name, double ts_us) -> const std::pair<double, double>* {
    for (const auto& span : spans[{tid, name}]) {
      if (std::abs(span.first - ts_us) < 2e-3) return &span;
    }
    return nullptr;
  };
  for (const StepRow& row : rows_) {
    const auto* step = find(row.rank, "step", row.start_s * 1e6);
    ASSERT_NE(step, nullptr) << "rank " << row.rank << " step " << row.step;
    EXPECT_NEAR(step->second, row.step_s * 1e6, 1e-3);
    double cursor = row.start_s;
    for (const PhaseField& phase : kPhaseOrder) {
      const double value = row.*(phase.field);
      if (std::string(phase.name) == "injected" && value == 0) continue;
      const auto* span = find(row.rank, phase.name, cursor * 1e6);
      ASSERT_NE(span, nullptr) << phase.name << " of rank " << row.rank << " step " << row.step;
      EXPECT_NEAR(span->second, value * 1e6, 1e-3) << phase.name;
      cursor += value;
    }
    EXPECT_LE(cursor, row.start_s + row.step_s);  // phases inside the step slice
  }

  // The step slice's args carry the stored row; NaN test_acc of the step-0 eval is null.
  for (const auto& e : events) {
    if (e.at("name") == "step" && e.at("tid") == 1 && e.at("args").at("step") == 3) {
      EXPECT_EQ(e.at("args").at("timed"), true);
      EXPECT_DOUBLE_EQ(e.at("args").at("step_s").get<double>(), rows_[7].step_s);
      EXPECT_DOUBLE_EQ(e.at("args").at("train_loss").get<double>(), rows_[7].train_loss);
    }
    if (e.at("name") == "eval" && e.at("args").at("step") == 0) {
      EXPECT_TRUE(e.at("args").at("test_acc").is_null());
    }
  }
}

TEST_F(TraceTest, LargeRunIsSampledWithinTheBound) {
  Store store = Store::open((dir_ / "t.db").string());
  const int64_t id = store_run(store, 1000);  // 2000 rows, ~15 000 events
  TraceOptions options;
  options.max_events = 1000;
  TraceStats stats;
  const nlohmann::json j = trace(store, id, options, &stats);
  const nlohmann::json& events = j.at("traceEvents");
  EXPECT_LE(events.size(), 1000u);
  EXPECT_EQ(events.size(), stats.events);
  EXPECT_GT(stats.sample_every, 1);
  const nlohmann::json& t = j.at("otherData").at("trace");
  EXPECT_EQ(t.at("sampled"), true);
  EXPECT_EQ(t.at("sample_every"), stats.sample_every);
  EXPECT_EQ(t.at("max_events"), 1000);
  EXPECT_NE(t.at("sampling").get<std::string>().find("every"), std::string::npos);
  // The kept steps are every k-th from the first, and the smallest such k is used.
  std::set<int64_t> kept;
  for (const auto& e : events) {
    if (e.at("name") == "step") kept.insert(e.at("args").at("step").get<int64_t>());
  }
  EXPECT_EQ(static_cast<int64_t>(kept.size()), stats.steps_written);
  for (int64_t step : kept) EXPECT_EQ(step % stats.sample_every, 0) << step;
  EXPECT_GT(events.size(), 1000u * (stats.sample_every - 1) / stats.sample_every - 20);
  EXPECT_EQ(*kept.begin(), 0);

  // Without a bound problem nothing is sampled: the default bound holds all of it.
  TraceStats all;
  trace(store, id, TraceOptions{}, &all);
  EXPECT_EQ(all.sample_every, 1);
  EXPECT_EQ(all.steps_written, 1000);
}

TEST_F(TraceTest, StepsWindowSelectsFullResolution) {
  Store store = Store::open((dir_ / "t.db").string());
  const int64_t id = store_run(store, 1000);
  TraceOptions options;
  options.window = trace_parse_steps("100:110");
  options.window_given = true;
  options.max_events = 1000;
  TraceStats stats;
  const nlohmann::json j = trace(store, id, options, &stats);
  EXPECT_EQ(stats.sample_every, 1);
  EXPECT_EQ(stats.steps_written, 10);
  EXPECT_EQ(stats.first_step, 100);
  EXPECT_EQ(stats.last_step, 109);
  EXPECT_EQ(j.at("otherData").at("trace").at("steps_window"), "100:110");
  std::set<int64_t> kept;
  size_t evals = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("name") == "step") kept.insert(e.at("args").at("step").get<int64_t>());
    if (e.at("name") == "eval") ++evals;
  }
  EXPECT_EQ(kept.size(), 10u);
  EXPECT_EQ(*kept.begin(), 100);
  EXPECT_EQ(*kept.rbegin(), 109);
  EXPECT_EQ(evals, 3u);  // after steps 100, 105, 110
}

TEST(TraceParseSteps, AcceptsWindowsAndRejectsTheRest) {
  StepWindow w = trace_parse_steps("3:9");
  EXPECT_EQ(w.begin, 3);
  EXPECT_EQ(w.end, 9);
  w = trace_parse_steps("100:");
  EXPECT_EQ(w.begin, 100);
  EXPECT_EQ(w.end, std::numeric_limits<int64_t>::max());
  w = trace_parse_steps(":50");
  EXPECT_EQ(w.begin, 0);
  EXPECT_EQ(w.end, 50);
  for (const char* bad : {"", ":", "5", "5:5", "9:3", "a:b", "-1:5", "1:2:3", "1.5:4", "3: 9"}) {
    try {
      trace_parse_steps(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST_F(TraceTest, RefusesUnknownRunsEmptyWindowsAndTooSmallBounds) {
  Store store = Store::open((dir_ / "t.db").string());
  const int64_t id = store_run(store, 20);
  std::ostringstream out;
  EXPECT_THROW(trace_write_run(store, id + 1, TraceOptions{}, out), InputError);

  TraceOptions outside;
  outside.window = trace_parse_steps("50:60");
  outside.window_given = true;
  try {
    trace_write_run(store, id, outside, out);
    ADD_FAILURE() << "empty window accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stored: steps 0..19"), std::string::npos) << e.what();
  }

  TraceOptions tiny;
  tiny.max_events = 10;  // 5 metadata + 5 evaluations leave no room for a step
  EXPECT_THROW(trace_write_run(store, id, tiny, out), InputError);

  const int64_t empty = store.run_begin(run_make(5));  // no step rows
  EXPECT_THROW(trace_write_run(store, empty, TraceOptions{}, out), InputError);
}

}  // namespace
}  // namespace dsgd
