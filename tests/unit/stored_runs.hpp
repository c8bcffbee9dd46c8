// Test helpers: stored runs (RunWithSummary) as the history, tracking and report tests build
// them, without a database.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "results/store.hpp"

namespace dsgd::testing {

// A completed 2-rank MPI SVM run of commit `commit` with this step time (throughput from a
// global batch of 128): one point of a history series.
inline RunWithSummary history_run(int64_t id, const std::string& commit, double step_time,
                                  const std::string& host = "node1") {
  RunWithSummary r;
  r.run.id = id;
  r.run.status = RunStatus::run_completed;
  r.run.workload = "svm";
  r.run.dataset = "fashion-mnist";
  r.run.algorithm = "ssgd";
  r.run.backend = "mpi";
  r.run.workers = 2;
  r.run.batch = 64;
  r.run.steps = 100;
  r.run.host = host;
  r.run.cpu_model = "cpu";
  r.run.git_commit = commit;
  r.run.config_json = "{}";
  Summary s;
  s.step_time_s = step_time;
  s.throughput_samples_per_s = 128 / step_time;
  r.summary = s;
  return r;
}

// A 4-worker simulated SVM run of one configuration (algorithm, H, batch, seed as its
// repetition tag) with this throughput and a 60/30/10 compute/comm/wait split; no summary
// unless completed: one bar of the HTML report.
inline RunWithSummary report_run(int64_t id, const std::string& algorithm, int64_t period, int64_t batch,
                                 double throughput, uint64_t seed, RunStatus status = RunStatus::run_completed) {
  RunWithSummary r;
  r.run.id = id;
  r.run.status = status;
  r.run.workload = "svm";
  r.run.dataset = "fashion-mnist";
  r.run.algorithm = algorithm;
  r.run.backend = "sim";
  r.run.workers = 4;
  r.run.batch = batch;
  r.run.period = period;
  r.run.steps = 100;
  r.run.seed = seed;
  r.run.host = "node1";
  r.run.cpu_model = "cpu";
  r.run.git_commit = "c0";
  r.run.config_json = fmt::format(R"({{"algo":"{}","period":{},"batch":{},"seed":{},"tag":"rep={}"}})", algorithm,
                                  period, batch, seed, seed);
  if (status == RunStatus::run_completed) {
    Summary s;
    s.throughput_samples_per_s = throughput;
    s.step_time_s = batch * 4 / throughput;
    s.compute_s = s.step_time_s * 0.6;
    s.comm_s = s.step_time_s * 0.3;
    s.wait_s = s.step_time_s * 0.1;
    s.timed_steps = 90;
    r.summary = s;
  }
  return r;
}

}  // namespace dsgd::testing
