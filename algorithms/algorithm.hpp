// The SGD-variant interface. The trainer owns the step sequence
//   data → forward → backward (on_layer_grad_ready per layer) → reduce_gradients →
//   optimizer step → after_update
// and an algorithm fills in the communication at those seams, through the Communicator
// only, so it runs unchanged on every backend. Each variant is one file stating its
// update rule and the bytes it sends per step, and one line in algorithms/registry.cpp.
//
// Memory: params and grads are pointers in TrainState::device's memory (host, or a GPU's with
// a device backend). An algorithm written for any device passes views (param_view(),
// grad_view(), slices) to the Communicator, does its elementwise math through vec()
// (core/vector_ops.hpp) and keeps its own state in DeviceBuffers on that device, allocated in
// setup. Parts that only run on the host (compressors, one-sided windows, zero's 4-bit codes)
// take host pointers (BufferView::host_f32) and are refused up front on a device backend
// (Variant::host_only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "cluster/communicator.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "core/buffer.hpp"
#include "core/run_config.hpp"
#include "core/vector_ops.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

// Per-layer costs for an algorithm that plans its communication from them (dreamddp), resolved
// by the trainer before setup (engine/layer_costs.hpp) and identical on every rank.
struct LayerCosts {
  std::vector<double> bwd_s;            // per layer: backward compute seconds of one step
  double fwd_s = 0;                     // forward seconds of one step (for printing predictions)
  std::string compute_source;           // where bwd_s came from (calibration, run, estimate)
  std::optional<NetworkModel> network;  // the link all-reduces run on; empty: free (0 s)
  CollAlgo algo = CollAlgo::algo_auto;  // the all-reduce algorithm to cost them with
  std::string network_source;
};

// A helper thread's own resources (algorithms with local_threads() > 1), made by the trainer:
// a workload instance (a workload reserves its activations once and is not re-entrant, so
// every thread needs its own) and its data stream's next batch.
struct LocalStream {
  Workload* workload = nullptr;
  const uint32_t* (*next_batch)(void* ctx) = nullptr;  // indices of its next batch (`batch` entries)
  void* ctx = nullptr;
  size_t batch = 0;
};

// One step's forward pass when the algorithm runs the forward passes itself
// (Algorithm::forward_instances() > 0, pdasgd): the instance that holds the step's
// activations, the parameters they were computed with (backward runs at the same ones), and
// the minibatch loss.
struct ForwardPass {
  Workload* workload = nullptr;
  const float* params = nullptr;
  double loss = 0;
};

// What an algorithm acts on; owned by the trainer.
struct TrainState {
  Communicator& comm;
  Workload& workload;
  Optimizer& optimizer;     // the local (inner) optimizer
  float* params = nullptr;  // this worker's model (param_count floats, in device memory)
  float* grads = nullptr;   // this step's gradient (in device memory)
  size_t count = 0;
  int64_t step = 0;         // index of the current step, from 0
  int64_t total_steps = 0;  // steps of the run (an algorithm must not leave requests in flight after the last)
  double step_start = 0;    // comm.now() at the current step's start (0 when timers are off)
  double lr = 0;            // this step's learning rate (schedule applied), for algorithms that own the optimizer
  double loss = 0;          // this step's minibatch training loss on this worker (set after forward; localsgd adacomm)
  const LayerCosts* layer_costs = nullptr;  // set for algorithms with wants_layer_costs()
  const Dataset* train = nullptr;           // the training set (read-only; helper threads draw batches from it)
  std::vector<LocalStream> streams{};       // threads 1..T−1 of local_threads() (empty when T = 1)
  // With forward_instances() = k > 0: the k workload instances of the forward passes in flight
  // (the trainer's own, `workload`, then only evaluates) and this rank's data stream, which
  // the algorithm draws from in the trainer's place (its workload field is unused).
  std::vector<Workload*> forward_workloads{};
  LocalStream own_stream{};
  const Stragglers* stragglers = nullptr;  // the run's straggler models (nullptr: none)
  // Mean staleness of the updates this rank applied or read in this step (ps, adpsgd;
  // docs/metrics.md). The trainer sets NaN (none) before each step and records it.
  double staleness = std::numeric_limits<double>::quiet_NaN();
  // Where params and grads live (default: the host).
  Device device{};

  BufferView param_view() const { return device_view(params, count, device); }
  BufferView grad_view() const { return device_view(grads, count, device); }
  // The elementwise operations of the model's device.
  VectorOps& vec() const { return vector_ops_for(device); }
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // Allocates what the algorithm needs (called once, before the first step).
  virtual void setup(TrainState& state) {}
  // At the start of each step of a rank that computes, before its data phase (state.lr is
  // already this step's learning rate); its time counts in data_s.
  virtual void begin_step(TrainState& state) {}
  // Decoupled forward (pdasgd): the number of workload instances whose forward passes the
  // algorithm runs ahead of the trainer's steps (0: the trainer runs each step's data and
  // forward phases itself). The trainer then makes them (TrainState::forward_workloads), leaves
  // the data stream to the algorithm and, after begin_step, takes the step's forward pass from
  // forward() (it blocks until that pass is done; the blocked time is the step's fwd_s) and
  // runs backward on it. Injected straggler delays are then split (Stragglers::delay_s with
  // with_fixed): the trainer holds the backward's share, the algorithm applies the forward's.
  virtual int forward_instances() const { return 0; }
  virtual ForwardPass forward(TrainState& state) { return {}; }
  // Called from backward the moment `layer`'s gradient is final.
  virtual void on_layer_grad_ready(TrainState& state, size_t layer) {}
  // After backward, before the optimizer step: turn grads into what the optimizer applies.
  virtual void reduce_gradients(TrainState& state) {}
  // After the optimizer step (model averaging and the like).
  virtual void after_update(TrainState& state) {}
  // Once after the run's last step (or the step an evaluation stopped the run at), on every
  // rank together, outside the steps' timing and the event log, before the final evaluation:
  // what ends the run rather than a step (adpsgd: all ranks meet, passives reload the shared
  // model), so that a rank's wait for the slowest is not counted in its last step.
  virtual void end_run(TrainState& state) {}
  // zero: the algorithm applies the optimizer itself, to state it owns (its shard). The
  // trainer then calls optimizer_step in place of its own optimizer, which holds no state.
  virtual bool owns_optimizer() const { return false; }
  virtual void optimizer_step(TrainState& state) {}
  // Data streams that compute gradients, of n ranks, and this rank's (first) stream among
  // them (it draws that share of the data): the ranks, or with local threads (lasgd,
  // hogwild) T streams per rank, the rank's threads drawing streams index..index+T−1;
  // −1: this rank only serves (ps --ps-placement dedicated): the
  // trainer skips its data, forward, backward and optimizer and calls after_update only.
  virtual int worker_count(int n) const { return n; }
  virtual int worker_index(int rank, int n) const { return rank; }
  // Threads that compute gradients inside this rank (lasgd, hogwild: --local-threads T);
  // the trainer gives threads 1..T−1 their own workload and data stream (TrainState::streams).
  virtual int local_threads() const { return 1; }
  // The model to evaluate when it lives outside the replicas (ps: in the servers' shards),
  // on every rank; nullptr: the trainer's consensus model. Called by every rank at each
  // evaluation and at the end, untimed (the trainer detaches the event log).
  virtual const float* global_model(TrainState& state) { return nullptr; }
  // Bytes of model state one worker holds (the largest over workers; docs/metrics.md):
  // parameters, gradient and optimizer state (SgdOptimizer keeps one velocity buffer), plus
  // the algorithm's own buffers where it reports them. Stored as "model-state-bytes" in the
  // run's config JSON.
  virtual double model_state_bytes(size_t count, int n) const { return 3.0 * sizeof(float) * double(count); }
  // True when every worker holds the same model after each step (no averaging needed
  // before an evaluation).
  virtual bool replicas_identical() const = 0;
  // Mean bytes one worker sends per step (ring all-reduce accounting), for a model of
  // param_bytes on n workers.
  virtual double bytes_sent_per_step(double param_bytes, int n) const = 0;
  // Upper bound on recorded collectives in one step (sizes the event log).
  virtual int max_collectives_per_step() const = 0;
  // True when setup needs TrainState::layer_costs (the trainer resolves them only then).
  virtual bool wants_layer_costs() const { return false; }
  // What the algorithm decided in setup (a JSON object's text; empty: nothing), stored as
  // "algorithm-details" in the run's config JSON.
  virtual std::string details_json() const { return {}; }
};

// The registry (algorithms/registry.cpp).
std::unique_ptr<Algorithm> algorithm_create(const std::string& name, const RunConfig& cfg);

}  // namespace dsgd
