// summary_compute: a run's summary metrics from its stored step and evaluation rows.
// The definitions (docs/metrics.md) are pinned by tests/unit/test_store.cpp:
// - over timed step rows (timed = 1) of all ranks: step_time_s, fwd_s, bwd_s, opt_s,
//   data_s, comm_s, wait_s, overlap_s, injected_s and bytes_sent_per_step are arithmetic
//   means over the (rank, step) rows; compute_s = fwd_s + bwd_s + opt_s (the injected
//   straggler delay is reported on its own, not inside compute_s);
// - timed_steps = number of distinct timed steps;
// - throughput_samples_per_s = workers x batch x timed_steps / sum over timed steps of
//   (max over ranks of step_s): each step costs what its slowest rank took; 0 when there
//   are no timed steps (or their total time is not positive, or NaN); workers = the ranks
//   that compute gradients: the config's "compute-workers" when present (ps with dedicated
//   servers), otherwise all;
// - staleness_mean / staleness_max = mean / max of the step rows' staleness over timed
//   (rank, step) rows that have one; null when none has;
// - final_* = the last evaluation's (by step), null without evaluations;
// - time_to_target_s / steps_to_target = time_s / step of the first evaluation (by step)
//   that reaches the run's target, null when there is no target or it is not reached;
// - model_gflops = flops_per_sample x throughput_samples_per_s / workers / 1e9 (per worker,
//   over the whole step, communication and waiting included); peak_gflops = the config's
//   "peak-gflops-per-worker"; mfu = model_gflops / peak_gflops; null without both inputs.
// - eval_total_s = the sum of the evaluations' eval_s (rank 0's wall time of each evaluation);
//   null when no evaluation has one.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "results/store.hpp"
#include "results/target.hpp"

namespace dsgd {

namespace {

// Means over the timed (rank, step) rows (step, phases, bytes, staleness) into `summary`;
// returns the (step, step_s) of every timed row, for each timed step's slowest rank.
std::vector<std::pair<int64_t, double>> step_means(const std::vector<StepRow>& steps, Summary& summary) {
  double sum_step = 0, sum_fwd = 0, sum_bwd = 0, sum_opt = 0, sum_data = 0;
  double sum_comm = 0, sum_wait = 0, sum_overlap = 0, sum_injected = 0, sum_bytes = 0;
  double sum_stale = 0, max_stale = 0;
  int64_t stale_rows = 0;
  std::vector<std::pair<int64_t, double>> step_times;  // (step, step_s) of timed rows
  step_times.reserve(steps.size());
  for (const StepRow& row : steps) {
    if (!row.timed) continue;
    sum_step += row.step_s;
    sum_fwd += row.fwd_s;
    sum_bwd += row.bwd_s;
    sum_opt += row.opt_s;
    sum_data += row.data_s;
    sum_comm += row.comm_s;
    sum_wait += row.wait_s;
    sum_overlap += row.overlap_s;
    sum_injected += row.injected_s;
    sum_bytes += row.bytes_sent;
    if (row.staleness && !std::isnan(*row.staleness)) {
      sum_stale += *row.staleness;
      max_stale = stale_rows == 0 ? *row.staleness : std::max(max_stale, *row.staleness);
      ++stale_rows;
    }
    step_times.emplace_back(row.step, row.step_s);
  }
  if (!step_times.empty()) {
    const double rows = static_cast<double>(step_times.size());
    summary.step_time_s = sum_step / rows;
    summary.fwd_s = sum_fwd / rows;
    summary.bwd_s = sum_bwd / rows;
    summary.opt_s = sum_opt / rows;
    summary.data_s = sum_data / rows;
    summary.comm_s = sum_comm / rows;
    summary.wait_s = sum_wait / rows;
    summary.overlap_s = sum_overlap / rows;
    summary.injected_s = sum_injected / rows;
    summary.bytes_sent_per_step = sum_bytes / rows;
  }
  summary.compute_s = summary.fwd_s + summary.bwd_s + summary.opt_s;
  if (stale_rows > 0) {
    summary.staleness_mean = sum_stale / static_cast<double>(stale_rows);
    summary.staleness_max = max_stale;
  }
  return step_times;
}

// The timed steps (counted into `summary`) and the sum over them of each one's slowest rank's
// time (NaN when one is NaN).
double slowest_rank_total(std::vector<std::pair<int64_t, double>>& step_times, Summary& summary) {
  // Sorted by step only: step_s may be NaN, which has no order.
  std::sort(step_times.begin(), step_times.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double slowest_total = 0;
  for (size_t begin = 0; begin < step_times.size();) {
    size_t end = begin;
    double slowest = step_times[begin].second;
    while (end < step_times.size() && step_times[end].first == step_times[begin].first) {
      const double time = step_times[end].second;
      if (time > slowest || std::isnan(time)) slowest = time;  // NaN stays: no throughput
      ++end;
    }
    slowest_total += slowest;
    ++summary.timed_steps;
    begin = end;
  }
  return slowest_total;
}

// Throughput (samples per second over the slowest ranks' time) and, where the run's config
// has the model's FLOPs and the peak, the model GFLOP/s and MFU.
void throughput_and_mfu(const RunRecord& run, double slowest_total, Summary& summary) {
  const nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  auto config_number = [&](const char* key) -> std::optional<double> {
    if (config.is_object() && config.contains(key) && config[key].is_number()) return config[key].get<double>();
    return std::nullopt;
  };
  const double workers = config_number("compute-workers").value_or(static_cast<double>(run.workers));
  if (summary.timed_steps > 0 && slowest_total > 0) {
    summary.throughput_samples_per_s =
        workers * static_cast<double>(run.batch) * static_cast<double>(summary.timed_steps) / slowest_total;
  }
  const std::optional<double> flops = config_number("flops-per-sample");
  const std::optional<double> peak = config_number("peak-gflops-per-worker");
  if (flops && peak && *peak > 0 && workers > 0 && summary.throughput_samples_per_s > 0) {
    summary.model_gflops = *flops * summary.throughput_samples_per_s / workers * 1e-9;
    summary.peak_gflops = *peak;
    summary.mfu = *summary.model_gflops / *peak;
  }
}

// The evaluations' total time, the final metrics and the time and steps to the target.
void eval_metrics(const RunRecord& run, const std::vector<EvalRow>& evals, Summary& summary) {
  // Evaluations in step order (stable: for equal steps the later-appended one is last).
  std::vector<const EvalRow*> ordered;
  ordered.reserve(evals.size());
  for (const EvalRow& eval : evals) ordered.push_back(&eval);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const EvalRow* a, const EvalRow* b) { return a->step < b->step; });
  for (const EvalRow* eval : ordered)
    if (eval->eval_s) summary.eval_total_s = summary.eval_total_s.value_or(0.0) + *eval->eval_s;
  if (!ordered.empty()) {
    const EvalRow& last = *ordered.back();
    summary.final_train_loss = last.train_loss;
    summary.final_test_loss = last.test_loss;
    summary.final_test_acc = last.test_acc;
  }
  if (std::optional<Target> target = target_parse(run.target)) {
    for (const EvalRow* eval : ordered) {
      if (target_reached(*target, *eval)) {
        summary.time_to_target_s = eval->time_s;
        summary.steps_to_target = eval->step;
        break;
      }
    }
  }
}

}  // namespace

void summary_conditions(const RunRecord& run, const std::vector<std::pair<int64_t, CpuTimes>>& begin_cpu,
                        Summary& summary) {
  if (run.backend == "sim") return;  // a virtual clock: the host's load does not change its figures
  const double load = system_load_average()[0];
  const int cores = system_info_read().cores;
  // The run's own processes on this host: its MPI ranks, or the one simulating process.
  const double own = run.backend == "mpi" ? static_cast<double>(run.workers) : 1.0;
  if (load >= 0 && cores > 0) summary.host_load = std::max(0.0, load - own) / cores;
  for (const auto& [id, begin] : begin_cpu) {
    if (id != run.id) continue;
    const std::optional<CpuTimes> end = system_cpu_times();
    if (end && end->total > begin.total)
      summary.cpu_steal = double(end->steal - begin.steal) / double(end->total - begin.total);
  }
}

Summary summary_compute(const RunRecord& run, const std::vector<StepRow>& steps, const std::vector<EvalRow>& evals) {
  Summary summary;
  // Means over timed (rank, step) rows, and each timed step's slowest rank.
  std::vector<std::pair<int64_t, double>> step_times = step_means(steps, summary);
  const double slowest_total = slowest_rank_total(step_times, summary);
  throughput_and_mfu(run, slowest_total, summary);
  eval_metrics(run, evals, summary);
  if (const double se = summary_step_standard_error(steps); se > 0) summary.step_time_se_s = se;
  return summary;
}

double summary_step_standard_error(const std::vector<StepRow>& steps) {
  std::map<int64_t, std::pair<double, int>> per_step;  // step → (sum of its ranks' step_s, ranks)
  for (const StepRow& row : steps)
    if (row.timed) {
      auto& [sum, ranks] = per_step[row.step];
      sum += row.step_s;
      ++ranks;
    }
  const size_t n = per_step.size();
  if (n < 4) return 0;
  std::vector<double> mean_of_step;  // in step order (a map iterates its keys in order)
  mean_of_step.reserve(n);
  for (const auto& [step, acc] : per_step) mean_of_step.push_back(acc.first / acc.second);
  const auto batches = static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  std::vector<double> means(batches, 0.0);
  for (size_t b = 0; b < batches; ++b) {
    const size_t lo = b * n / batches, hi = (b + 1) * n / batches;
    for (size_t i = lo; i < hi; ++i) means[b] += mean_of_step[i];
    means[b] /= static_cast<double>(hi - lo);
  }
  double mean = 0, var = 0;
  for (double m : means) mean += m / static_cast<double>(batches);
  for (double m : means) var += (m - mean) * (m - mean) / static_cast<double>(batches - 1);
  return std::sqrt(var / static_cast<double>(batches));
}

}  // namespace dsgd
