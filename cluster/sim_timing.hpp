// The timing-only fast path of the simulated cluster (`--backend sim --timing-only`): no
// numerics, no threads, only the virtual clocks of N workers advanced step by step by the
// same rules the threaded simulator applies (sim_world.hpp), for throughput and breakdown
// predictions of thousands of workers.
//
// The driver here owns the clocks, the evaluation / flush points and the stored rows; each
// variant that has a timing model declares its step rule (a SimTimingStep) in its registry
// entry (algorithms/variant.hpp), stated next to its update rule, with the same arithmetic
// the threaded simulator applies to its communication. Per worker i and step t (costs from
// the compute profile, δ from the straggler models) a rule starts from
//   arrive_i = start_i + data + fwd + bwd + δ_i(t, fwd + bwd)
// (sim_timing_compute) and sets end_i; start_i(t+1) = end_i(t). Like the trainer, every
// worker leaves an evaluation or flush point at the latest worker's time (untimed collectives
// synchronise); those points are the trainer's: before step 0, after steps that are
// multiples of eval_every, the last step, and whenever flush_every steps have passed since
// the previous one. The threaded simulator gives the same times for the same configuration
// (up to float rounding of sums in a different order); tests/integration/sim_backend.sh and
// tests/unit/test_sim_world.cpp check that per variant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/network_model.hpp"
#include "cluster/sim_world.hpp"
#include "cluster/straggler.hpp"

namespace dsgd {

struct SimTimingPlan {
  int workers = 1;
  int64_t steps = 0;
  int64_t eval_every = 1;
  int64_t flush_every = 1;
  int64_t period = 1;      // H (--period)
  double param_bytes = 0;  // |x|·4
  SimComputeCost cost;
  Stragglers stragglers;
  std::optional<NetworkModel> network;  // empty: ideal
  std::optional<NetworkModel> native;   // --native-floor (SimWorldOptions::native)
  CollAlgo net_algo = CollAlgo::algo_auto;
  // dpsgd: each rank's neighbours (ascending) and the ranks' groups (link classes).
  std::vector<std::vector<int>> neighbors;
  std::vector<int> group_of;
  // Layer sizes in floats, in layer order (ssgd --overlap's buckets, dreamddp's layers).
  std::vector<size_t> layer_counts;

  // Variant settings, filled from the run's configuration by the variant's timing_plan hook
  // (algorithms/variant.hpp).
  // The length of a round starting at step t when it varies over the run (localsgd
  // --period-schedule qsr); empty: every round is `period`.
  std::function<int64_t(int64_t)> period_at;
  int64_t delay = 0;              // d (--delay, dasgd)
  bool overlap = false;           // ssgd --overlap
  double bucket_bytes = 0;        // ssgd --overlap: --bucket-mb · 1e6
  double first_bucket_bytes = 0;  // its first bucket's: --first-bucket-mb · 1e6 (0: bucket_bytes)
  bool fill = true;               // dreamddp: --dreamddp-fill
  // ssgd of a cost file that records its buffers (--broadcast-buffers true; filled by the
  // engine, which reads the file): the bytes of each broadcast DDP makes from worker 0 before
  // every forward (one per dtype); empty: none.
  std::vector<double> buffer_broadcast_bytes;
  int64_t forward_depth = 0;  // pdasgd: S, the forward passes run ahead on a second core

  // Tests: simulate every worker even when they are alike (see sim_timing_run).
  bool simulate_each_worker = false;
};

// What a variant's timing rule carries from one step to the next. sim_timing_run starts every
// run with a fresh one; each rule uses only its own part.
struct SimTimingState {
  // A non-blocking model average in flight (timing_step_background: cocod, dasgd,
  // overlap-local).
  struct Background {
    bool started = false;
    int64_t wait_step = -1;      // the step whose update waits for it (−1: none in flight)
    double done = 0;             // its completion
    double link_free = 0;        // the end of the last collective on the link
    std::vector<double> launch;  // per worker: when it launched
    std::vector<double> seen;    // per worker: when a poll saw it complete (0: not yet)
  } background;
  // The end of the last per-layer or per-bucket all-reduce on the link (ssgd --overlap,
  // dreamddp): the next one starts no earlier.
  double link_free = 0;
  // localsgd with a varying period (qsr): step + 1 of the current round's last step (0: the
  // first round has not started).
  int64_t round_end = 0;
  // dreamddp: per slot h of the H-step cycle and layer l, whether l is averaged at slot h
  // (index h · layers + l); empty until its schedule is searched at the first step.
  std::vector<uint8_t> synced;
  // pdasgd (S ≥ 1): per worker i, when its latest forward ended (f_i), and when step j's
  // model became available, a_i(j), at index i · (S + 1) + j mod (S + 1).
  std::vector<double> forward_end;
  std::vector<double> available;
};

// One worker's timings in one step (seconds on the virtual clock; start relative to 0).
struct SimStepTiming {
  double start = 0, step = 0, data = 0, fwd = 0, bwd = 0, opt = 0, comm = 0, wait = 0, injected = 0, bytes = 0;
  double overlap = 0;  // a non-blocking request's time in flight during compute (docs/metrics.md)
  double jitter = 0;   // the compute jitter's part of `injected` (stored as compute: bwd_s)
};

// A variant's timing rule for one step: clock[i] holds worker i's time at the step's start;
// the rule fills rows[i] (every field), moves clock[i] to the step's end and keeps what the
// next step needs in `state`.
using SimTimingStep = void (*)(const SimTimingPlan& plan, SimTimingState& state, int64_t step,
                               std::vector<double>& clock, SimStepTiming* rows);

// The compute part of a step, the same for every variant.
struct SimTimingCompute {
  double bwd = 0;             // Σ backward (per layer and the rest)
  double compute_before = 0;  // data + fwd + bwd: from the step's start to the end of backward
  double fwd_bwd = 0;         // what the straggler models scale
};
SimTimingCompute sim_timing_compute(const SimComputeCost& c);
// Worker i's injected straggler delay at `step` (0 without stragglers), the compute jitter
// included; row.jitter is set to the jitter's part.
double sim_timing_delay(const SimTimingPlan& plan, int i, int64_t step, double fwd_bwd, SimStepTiming& row);
// Fills a row's compute fields (data, fwd, bwd, opt) from the plan's cost.
void sim_timing_fill_compute(const SimTimingPlan& plan, const SimTimingCompute& k, SimStepTiming& row);

struct SimTimingResult {
  double end_time = 0;       // the latest worker's clock at the end
  int64_t worker_steps = 0;  // workers × steps simulated
};

// Workers alike: without stragglers and without a gossip graph (plan.neighbors empty), every
// worker starts each step at the same time and pays the same costs, so every rule gives every
// worker the same timings. The run then simulates one worker (the rule sees a clock of one
// entry; collective costs still use plan.workers) and hands the sink `workers` copies of its
// row: O(steps) instead of O(workers × steps). tests/unit/test_sim_world.cpp checks the rows
// equal the per-worker path's, bit for bit, for every variant with a rule.
// Runs the plan with a variant's step rule. keep(step) says whether the step's per-worker timings are wanted; when it
// returns true, sink(step, timings) receives `workers` entries (valid during the call).
SimTimingResult sim_timing_run(const SimTimingPlan& plan, SimTimingStep rule, const std::function<bool(int64_t)>& keep,
                               const std::function<void(int64_t, const SimStepTiming*)>& sink);

}  // namespace dsgd
