// Benchmarks of the HTML report at its design size: 1,000 runs x 10,000 steps of
// synthetic rows (per-step training loss, 11 evaluations each). BM_html_report renders
// the whole document (goal: < 5 s, < 5 MB; the size is reported as the `html_MB`
// counter). The reference measured in the same run, BM_lttb_only, is the downsampling of
// the same curves alone, so the ratio shows what writing the SVG/HTML costs on top.
// BM_csv_runs prints the 1,000-row runs table as CSV for scale.
#include <benchmark/benchmark.h>

#include <cmath>
#include <sstream>

#include "results/html_downsample.hpp"
#include "results/html_report.hpp"
#include "results/report_print.hpp"

namespace {

using namespace dsgd;

const HtmlReportInput& synthetic_input() {
  static const HtmlReportInput input = [] {
    HtmlReportInput in;
    in.context.generated_at = "2026-11-30T00:00:00Z";
    in.context.selection = "synthetic";
    for (int64_t i = 0; i < 1000; ++i) {
      HtmlRunData d;
      RunRecord& r = d.run.run;
      r.id = i + 1;
      r.status = RunStatus::run_completed;
      r.workload = "svm";
      r.dataset = "synthetic";
      r.algorithm = i % 2 ? "localsgd" : "ssgd";
      r.workers = 1 + static_cast<int>(i % 8);
      r.batch = 64;
      r.period = 4;
      r.steps = 10000;
      r.tag = "suite=bench,rep=" + std::to_string(i / 8);
      r.host = "node";
      r.config_json = "{}";
      Summary s;
      s.throughput_samples_per_s = 1000.0 * r.workers * (1 - 0.02 * r.workers);
      s.step_time_s = 0.01 + 1e-5 * static_cast<double>(i);
      s.compute_s = 0.006;
      s.comm_s = 0.003;
      s.wait_s = 0.001;
      s.timed_steps = 9990;
      s.final_test_acc = 0.8;
      d.run.summary = s;
      d.loss_steps.resize(10000);
      d.loss_values.resize(10000);
      for (size_t k = 0; k < 10000; ++k) {
        d.loss_steps[k] = static_cast<double>(k);
        d.loss_values[k] = 2.0 / (1.0 + 1e-3 * k) + 0.05 * std::sin(0.37 * k + i);
      }
      for (int e = 0; e <= 10; ++e)
        d.evals.push_back({e * 1000, e * 10.0, 1.0 / (1 + e), 1.1 / (1 + e), 0.5 + 0.03 * e, std::nullopt});
      in.runs.push_back(std::move(d));
    }
    return in;
  }();
  return input;
}

void BM_html_report(benchmark::State& state) {
  const HtmlReportInput& input = synthetic_input();
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream out;
    html_report_write(out, input);
    bytes = out.str().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["html_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["runs"] = 1000;
  state.counters["steps_per_run"] = 10000;
}
BENCHMARK(BM_html_report)->Unit(benchmark::kMillisecond);

void BM_lttb_only(benchmark::State& state) {
  const HtmlReportInput& input = synthetic_input();
  for (auto _ : state) {
    size_t kept = 0;
    for (const HtmlRunData& r : input.runs) kept += lttb_indices(r.loss_steps, r.loss_values, 60).size();
    benchmark::DoNotOptimize(kept);
  }
}
BENCHMARK(BM_lttb_only)->Unit(benchmark::kMillisecond);

void BM_csv_runs(benchmark::State& state) {
  std::vector<RunWithSummary> runs;
  for (const HtmlRunData& r : synthetic_input().runs) runs.push_back(r.run);
  for (auto _ : state) {
    std::ostringstream out;
    report_write_csv(out, report_runs_table(runs));
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_csv_runs)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
