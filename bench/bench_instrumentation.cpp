// Cost of the per-step instrumentation: the same 1-worker training run with timers on
// (clock reads around every phase, collective events, flushes) and off, alternated in
// pairs inside one benchmark so machine noise hits both alike. Reports the median
// per-step time of each and the overhead in percent (goal: < 1 % of a step).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/stats.hpp"
#include "engine/trainer.hpp"

using namespace dsgd;

namespace {

double median(std::vector<double> v) {
  return dsgd::stats_median(std::move(v));
}

void BM_InstrumentationOverhead(benchmark::State& state) {
  RunConfig cfg;
  cfg.workload = "svm";
  cfg.dataset = "synthetic:n=20000,d=784,classes=10,test=1000";
  cfg.batch = 64;
  cfg.steps = state.range(0);
  cfg.eval_every = cfg.steps;
  cfg.warmup = 10;
  auto comm = communicator_create_self();
  std::vector<double> on, off, overhead;
  for (auto _ : state) {
    cfg.timers = true;
    const auto a = trainer_run(cfg, *comm, nullptr, {});
    cfg.timers = false;
    const auto b = trainer_run(cfg, *comm, nullptr, {});
    const double timed = static_cast<double>(a.steps - a.warmup);
    on.push_back(a.timed_wall_s / timed);
    off.push_back(b.timed_wall_s / timed);
    overhead.push_back(100.0 * (on.back() - off.back()) / off.back());
  }
  const double m_on = median(on), m_off = median(off);
  state.counters["step_us_timers_on"] = m_on * 1e6;
  state.counters["step_us_timers_off"] = m_off * 1e6;
  // Median of the paired differences: both runs of a pair see the same machine state.
  state.counters["overhead_pct"] = median(overhead);
}

}  // namespace

BENCHMARK(BM_InstrumentationOverhead)->Arg(2000)->Unit(benchmark::kMillisecond)->MinTime(4.0);

BENCHMARK_MAIN();
