// The simulated cluster's speed (docs/sim.md):
//  - BM_SimTimingOnly: the --timing-only loop, simulated worker-steps per second
//    (goal: 1024 workers x 10,000 steps of localsgd in under 10 s, >= 1e6 worker-steps/s);
//    also dpsgd on exp (10 neighbour messages per worker-step at 1024 workers);
//  - BM_SimScale: the --timing-only loop from 100 to 100,000 workers (100 steps, no stragglers):
//    setup (the topology a gossip variant builds) and worker-steps per second; the collective
//    variants' workers are alike, so one worker is simulated for all (sim_timing.hpp); dpsgd
//    on ring and exp simulates each worker (goal: >= 1e7 worker-steps/s for the collective
//    ones at 100,000 workers);
//  - BM_SimNumericsOverhead: a simulated run with numerics (threads, baton, collectives'
//    reductions, the trainer's instrumentation and its two evaluations) against the pure
//    compute of the same worker-steps (load_batch, forward, backward, optimizer step run
//    serially on one thread), alternated in pairs; overhead_pct is the median of the
//    paired (sim − compute) / compute (goal: < 5 %).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/sim_world.hpp"
#include "cluster/topology.hpp"
#include "core/clock.hpp"
#include "core/stats.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/trainer.hpp"
#include "workloads/workload.hpp"

using namespace dsgd;

namespace {

double median(std::vector<double> v) {
  return dsgd::stats_median(std::move(v));
}

void BM_SimTimingOnly(benchmark::State& state, const char* algo) {
  SimTimingPlan plan;
  plan.workers = static_cast<int>(state.range(0));
  plan.steps = state.range(1);
  plan.eval_every = std::max<int64_t>(1, plan.steps / 10);
  plan.flush_every = std::min<int64_t>(plan.eval_every, 1000);
  const Variant& variant = variant_get(algo);
  plan.period = 8;
  if (variant.timing_needs_neighbors) {  // neighbour exchanges on the exp topology (log2 n peers)
    const Topology t = topology_make("exp", plan.workers, 1);
    plan.neighbors = t.neighbors;
    plan.group_of = t.group_of;
  }
  plan.param_bytes = 7850 * 4.0;
  plan.cost.data_s = 2e-6;
  plan.cost.fwd_s = 30e-6;
  plan.cost.bwd_layer_s = {40e-6, 1e-6};
  plan.cost.opt_s = 5e-6;
  plan.stragglers = Stragglers::parse("lognormal:sigma=0.2", plan.workers, 1);
  plan.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
  double worker_steps = 0;
  double end = 0;
  for (auto _ : state) {
    const SimTimingResult r = sim_timing_run(plan, variant.timing, nullptr, nullptr);
    worker_steps += static_cast<double>(r.worker_steps);
    end = r.end_time;
  }
  state.counters["worker_steps_per_s"] = benchmark::Counter(worker_steps, benchmark::Counter::kIsRate);
  state.counters["virtual_s"] = end;
}

// algo: a variant with a timing rule; topology: the gossip graph ("" for a collective variant).
void BM_SimScale(benchmark::State& state, const char* algo, const char* topology) {
  SimTimingPlan plan;
  plan.workers = static_cast<int>(state.range(0));
  plan.steps = 100;
  plan.eval_every = 10;
  plan.flush_every = 10;
  plan.period = 8;
  plan.param_bytes = 7850 * 4.0;
  plan.cost.data_s = 2e-6;
  plan.cost.fwd_s = 30e-6;
  plan.cost.bwd_layer_s = {40e-6, 1e-6};
  plan.cost.opt_s = 5e-6;
  plan.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
  const Variant& variant = variant_get(algo);
  double setup_s = 0, worker_steps = 0, loop_s = 0;
  for (auto _ : state) {
    const double t0 = clock_now_s();
    if (*topology) {
      const Topology t = topology_make(topology, plan.workers, 1);
      plan.neighbors = t.neighbors;
      plan.group_of = t.group_of;
    }
    const double t1 = clock_now_s();
    const SimTimingResult r = sim_timing_run(plan, variant.timing, nullptr, nullptr);
    setup_s += t1 - t0;
    loop_s += clock_now_s() - t1;
    worker_steps += static_cast<double>(r.worker_steps);
  }
  state.counters["setup_s"] = setup_s / static_cast<double>(state.iterations());
  state.counters["worker_steps_per_s"] = worker_steps / loop_s;
}

RunConfig overhead_config(int64_t steps) {
  RunConfig cfg;
  cfg.workload = "svm";
  cfg.dataset = "synthetic:n=40000,d=784,classes=10,test=200";
  cfg.algo = "ssgd";
  cfg.backend = "sim";
  cfg.batch = 64;
  cfg.steps = steps;
  cfg.eval_every = steps;
  cfg.warmup = 0;
  return cfg;
}

// The same worker-steps' compute, serially: what the simulator must at least spend.
double pure_compute_s(const RunConfig& cfg, int workers, const DatasetPair& data) {
  std::vector<std::unique_ptr<Workload>> w;
  std::vector<std::unique_ptr<BatchSampler>> samplers;
  std::vector<std::unique_ptr<SgdOptimizer>> opts;
  std::vector<std::vector<float>> params, grads;
  for (int r = 0; r < workers; ++r) {
    w.push_back(workload_create(cfg, data.train));
    w.back()->reserve(static_cast<size_t>(cfg.batch));
    params.emplace_back(w.back()->param_count());
    grads.emplace_back(w.back()->param_count());
    w.back()->init_params(params.back().data(), cfg.seed);
    samplers.push_back(std::make_unique<BatchSampler>(data.train.rows, r, workers, cfg.batch, cfg.seed));
    opts.push_back(
        std::make_unique<SgdOptimizer>(SgdOptions{cfg.lr, 0.0, cfg.weight_decay, false}, w.back()->param_count()));
  }
  const double t0 = clock_now_s();
  for (int64_t s = 0; s < cfg.steps; ++s) {
    for (int r = 0; r < workers; ++r) {
      w[r]->load_batch(data.train, samplers[r]->next(), samplers[r]->batch());
      benchmark::DoNotOptimize(w[r]->forward(params[r].data()));
      w[r]->backward(params[r].data(), grads[r].data(), LayerHook{});
      opts[r]->step(params[r].data(), grads[r].data());
    }
  }
  return clock_now_s() - t0;
}

double sim_numerics_s(const RunConfig& cfg, int workers) {
  SimWorldOptions o;
  o.workers = workers;
  o.network = NetworkModel{LinkModel{50e-6, 1.25e8}, std::nullopt, 1};
  o.cost.fwd_s = 30e-6;
  o.cost.bwd_layer_s = {40e-6, 1e-6};
  SimWorld world(std::move(o));
  RunConfig c = cfg;
  c.workers = workers;
  const double t0 = clock_now_s();
  world.run([&](int r) { trainer_run(c, world.comm(r), nullptr, {}); });
  return clock_now_s() - t0;
}

void BM_SimNumericsOverhead(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const RunConfig cfg = overhead_config(state.range(1));
  const auto data = dataset_load_shared(cfg);  // loaded once, outside the timing
  std::vector<double> sim, pure, overhead;
  for (auto _ : state) {
    const double a = sim_numerics_s(cfg, workers);
    const double b = pure_compute_s(cfg, workers, *data);
    sim.push_back(a);
    pure.push_back(b);
    overhead.push_back(100.0 * (a - b) / b);
  }
  const double worker_steps = static_cast<double>(workers * cfg.steps);
  state.counters["sim_us_per_worker_step"] = median(sim) / worker_steps * 1e6;
  state.counters["compute_us_per_worker_step"] = median(pure) / worker_steps * 1e6;
  state.counters["overhead_pct"] = median(overhead);
}

}  // namespace

BENCHMARK_CAPTURE(BM_SimTimingOnly, localsgd, "localsgd")->Args({1024, 10000})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimTimingOnly, dpsgd_exp, "dpsgd")->Args({1024, 1000})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimScale, ssgd, "ssgd", "")
    ->RangeMultiplier(10)
    ->Range(100, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimScale, localsgd, "localsgd", "")
    ->RangeMultiplier(10)
    ->Range(100, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimScale, diloco, "diloco", "")
    ->RangeMultiplier(10)
    ->Range(100, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimScale, dpsgd_ring, "dpsgd", "ring")
    ->RangeMultiplier(10)
    ->Range(100, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimScale, dpsgd_exp, "dpsgd", "exp")
    ->RangeMultiplier(10)
    ->Range(100, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimNumericsOverhead)->Args({8, 300})->Unit(benchmark::kMillisecond)->MinTime(3.0);

BENCHMARK_MAIN();
