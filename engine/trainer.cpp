// See trainer.hpp. Timing protocol (docs/metrics.md): per step, clock reads around the
// data, forward, backward, optimizer phases; every collective's arrival and departure
// recorded by the communicator; steps [0, warmup) untimed; evaluation and flushing
// outside the step and excluded from the training clock.
#include "engine/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "algorithms/algorithm.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/clock_sync.hpp"
#include "engine/collective_check.hpp"
#include "engine/layer_costs.hpp"
#include "engine/memory_estimate.hpp"
#include "engine/peak_flops.hpp"
#include "engine/run_record.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/shared_topology.hpp"
#include "engine/step_recorder.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);

namespace dsgd {

namespace {

std::atomic<int64_t> g_active_run_id{0};
std::atomic<bool> g_past_setup{false};

// Everything a worker needs, built once.
struct Worker {
  std::shared_ptr<const DatasetPair> data;  // shared by the sim backend's workers (read-only)
  std::unique_ptr<Workload> workload;
  std::unique_ptr<Algorithm> algorithm;
  std::unique_ptr<Optimizer> optimizer;
  LrSchedule schedule;
  std::unique_ptr<BatchSampler> sampler;
  Stragglers stragglers;
  std::shared_ptr<const Topology> topology;  // shared by the sim backend's workers (read-only)
  std::optional<NetworkModel> emulated;          // from --bandwidth etc.; empty: no emulation
  std::unique_ptr<NetworkEmulation> emulation;  // null: nothing added to collectives
  int64_t native_calibration_id = 0;            // calibration whose fit was subtracted (0: none)
  double peak_flops = 0;                         // MFU's peak per worker (peak_flops.hpp), FLOP/s
  std::vector<float> params, grads, eval_params;
  int64_t steps = 0, warmup = 0, eval_every = 0, flush_every = 0;
};

void hook_trampoline(void* ctx, size_t layer);

struct HookContext {
  Algorithm* algorithm;
  TrainState* state;
};

void hook_trampoline(void* ctx, size_t layer) {
  auto* h = static_cast<HookContext*>(ctx);
  h->state->comm.compute_done(ComputePhase::phase_backward_layer, layer);
  h->algorithm->on_layer_grad_ready(*h->state, layer);
}

Worker worker_setup(const RunConfig& cfg, Communicator& comm) {
  const RunPreflight preflight = memory_preflight(cfg, comm.size(), comm.ranks_on_this_host());  // before allocating
  Worker w;
  openblas_set_num_threads(static_cast<int>(cfg.threads));
  if (!algorithm_exists(cfg.algo)) algorithm_create(cfg.algo, cfg);  // throws the listing error
  workload_check_name(cfg.workload);
  target_parse(cfg.target);
  w.data = dataset_load_shared(cfg);
  if (w.data->test.rows == 0)
    DSGD_THROW(InputError, "use a dataset with a test split", "dataset '{}' has no test samples", cfg.dataset);
  w.workload = workload_create(cfg, w.data->train);
  w.workload->reserve(static_cast<size_t>(cfg.batch));
  const size_t count = w.workload->param_count();
  w.params.assign(count, 0.0f);
  w.grads.assign(count, 0.0f);
  w.eval_params.assign(count, 0.0f);
  w.workload->init_params(w.params.data(), cfg.seed);
  w.algorithm = algorithm_create(cfg.algo, cfg);
  // The data is shared by the ranks that compute gradients (all, except ps's dedicated servers).
  const int data_ranks = w.algorithm->worker_count(comm.size());
  w.sampler = std::make_unique<BatchSampler>(w.data->train.rows,
                                             std::max(0, w.algorithm->worker_index(comm.rank(), comm.size())),
                                             data_ranks, static_cast<size_t>(cfg.batch), cfg.seed);
  if (cfg.steps > 0) {
    w.steps = cfg.steps;
  } else {
    const double epochs = cfg.epochs > 0 ? cfg.epochs : 1.0;
    w.steps = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(epochs * double(w.sampler->batches_per_epoch()))));
  }
  w.warmup = std::min<int64_t>(cfg.warmup, w.steps - 1);
  w.eval_every = cfg.eval_every > 0 ? cfg.eval_every : std::max<int64_t>(1, w.steps / 10);
  w.flush_every = std::min<int64_t>(w.eval_every, 1000);
  w.stragglers = Stragglers::parse(cfg.straggler, comm.size(), cfg.seed);
  w.topology = topology_make_shared(cfg.topology, comm.size(), cfg.seed);
  // hier:GxW: every recorded all-reduce runs in two levels (Communicator::set_hierarchy).
  comm.set_hierarchy(w.topology->groups);
  w.emulated = network_model_from_flags(cfg.bandwidth, cfg.latency, cfg.inter_bandwidth, cfg.inter_latency,
                                        w.topology->groups);
  // An algorithm that owns the optimizer (zero: state for its shard only) leaves the
  // trainer's optimizer without state; the schedule still comes from it.
  w.optimizer = optimizer_create(cfg, w.algorithm->owns_optimizer() ? 0 : count, data_ranks);
  w.schedule = lr_schedule_from_config(cfg, w.optimizer->base_lr(), w.steps);
  return w;
}

RunRecord run_record_make(const RunConfig& cfg, const Communicator& comm, const Worker& w) {
  nlohmann::json config;
  RunRecord r = run_record_from_config(cfg, comm.size(), w.steps, w.warmup, w.eval_every, comm.library_version(), config);
  config["model-state-bytes"] = w.algorithm->model_state_bytes(w.params.size(), comm.size());
  // MFU's inputs (docs/metrics.md): the summary derives achieved model GFLOP/s and MFU from them.
  config["flops-per-sample"] = w.workload->flops_per_sample();
  config["peak-gflops-per-worker"] = w.peak_flops * 1e-9;
  if (const int computing = w.algorithm->worker_count(comm.size()); computing != comm.size())
    config["compute-workers"] = computing;  // throughput counts these ranks' samples (docs/metrics.md)
  if (w.emulation) {
    config["emulated-network"] = network_model_describe(*w.emulated);
    config["native-calibration-id"] = w.native_calibration_id > 0 ? nlohmann::json(w.native_calibration_id)
                                                                   : nlohmann::json(nullptr);
  }
  if (comm.hierarchy_groups() > 1)
    config["allreduce"] = fmt::format("two-level: {} groups of {}", comm.hierarchy_groups(),
                                      comm.size() / comm.hierarchy_groups());
  if (const std::string details = comm.backend_details(); !details.empty())
    config["backend-details"] = nlohmann::json::parse(details);
  if (const std::string details = w.algorithm->details_json(); !details.empty())
    config["algorithm-details"] = nlohmann::json::parse(details);
  r.config_json = config.dump();
  return r;
}

// The model to evaluate: the average of the replicas (untimed all-reduce) unless the
// algorithm keeps them identical.
const float* consensus_model(Worker& w, Communicator& comm) {
  if (w.algorithm->replicas_identical() || comm.size() == 1) return w.params.data();
  std::copy(w.params.begin(), w.params.end(), w.eval_params.begin());
  comm.untimed_allreduce_sum(w.eval_params.data(), w.eval_params.size());
  const float scale = 1.0f / static_cast<float>(comm.size());
  for (auto& x : w.eval_params) x *= scale;
  return w.eval_params.data();
}

// Consensus distance (1/n)·Σ_i ‖x_i − x̄‖² (docs/metrics.md), with x̄ the consensus model;
// untimed. Empty when the algorithm keeps the replicas identical.
std::optional<double> consensus_distance(Worker& w, Communicator& comm, const float* mean) {
  if (w.algorithm->replicas_identical()) return std::nullopt;
  double sq = 0;
  const float* x = w.params.data();
  for (size_t i = 0; i < w.params.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(mean[i]);
    sq += d * d;
  }
  comm.untimed_allreduce_sum(&sq, 1);
  return sq / static_cast<double>(comm.size());
}

// The algorithm's global model (ps: the servers'), read with the event log detached, or the
// consensus model.
const float* evaluation_model(Worker& w, Communicator& comm, TrainState& state, CollEventLog* log) {
  comm.attach_log(nullptr);
  const float* global = w.algorithm->global_model(state);
  comm.attach_log(log);
  return global ? global : consensus_model(w, comm);
}

// Each rank evaluates its slice of the test set; sums are all-reduced.
EvalSums evaluate_test(Worker& w, Communicator& comm, const float* model) {
  const size_t rows = w.data->test.rows;
  const size_t n = static_cast<size_t>(comm.size());
  const size_t r = static_cast<size_t>(comm.rank());
  const size_t begin = rows * r / n;
  const size_t end = rows * (r + 1) / n;
  EvalSums local = w.workload->evaluate(model, w.data->test, begin, end);
  double sums[3] = {local.loss_sum, local.correct, local.count};
  comm.untimed_allreduce_sum(sums, 3);
  return EvalSums{sums[0], sums[1], sums[2]};
}

}  // namespace

int64_t trainer_active_run_id() { return g_active_run_id.load(); }
bool trainer_past_setup() { return g_past_setup.load(); }

TrainResult trainer_run(const RunConfig& cfg, Communicator& comm, Store* store, const TrainerCallbacks& callbacks) {
  // ---- setup: every rank, then agreement ---------------------------------------------
  Worker w;
  std::exception_ptr setup_error;
  try {
    w = worker_setup(cfg, comm);
  } catch (...) {
    setup_error = std::current_exception();
  }
  collective_check(comm, setup_error);
  g_past_setup = true;

  TrainState state{comm, *w.workload, *w.optimizer, w.params.data(), w.grads.data(), w.params.size(), 0, w.steps};
  LayerCosts layer_costs;  // per-layer compute and network costs, for algorithms that plan from them
  if (w.algorithm->wants_layer_costs()) {
    layer_costs = layer_costs_resolve(cfg, comm, store, *w.workload, w.emulated, w.topology->groups);
    state.layer_costs = &layer_costs;
  }
  w.algorithm->setup(state);
  HookContext hook_ctx{w.algorithm.get(), &state};
  const LayerHook hook{hook_trampoline, &hook_ctx};

  StepRecorder recorder;
  recorder.reserve(static_cast<size_t>(w.flush_every),
                   static_cast<size_t>(std::max(1, w.algorithm->max_collectives_per_step())));
  // Network emulation: rank 0 looks up this host's latest calibration (the native fabric's
  // all-reduce fit) and every rank gets the same numbers, so every rank holds a collective
  // for the same extra time. Without a calibration nothing is subtracted (docs/cluster.md).
  if (w.emulated) {
    double native[3] = {0, 0, 0};  // calibration id, alpha, bus bandwidth
    if (store) {
      if (auto id = store->calibration_latest(system_info_read().host)) {
        for (const FitRow& fit : store->fits_get(*id)) {
          if (fit.op == "allreduce" && fit.bandwidth_bytes_per_s > 0) {
            native[0] = static_cast<double>(*id);
            native[1] = fit.alpha_s;
            native[2] = fit.bandwidth_bytes_per_s;
          }
        }
      }
    }
    comm.untimed_broadcast(native, 3, 0);
    std::optional<NetworkModel> native_model;
    if (native[0] > 0) {
      native_model = NetworkModel{network_link_from_allreduce_fit(native[1], native[2], comm.size()), std::nullopt, 1};
      w.native_calibration_id = static_cast<int64_t>(native[0]);
    }
    const CollAlgo algo = w.topology->groups > 1 ? CollAlgo::algo_hierarchical : CollAlgo::algo_auto;
    w.emulation = std::make_unique<NetworkEmulation>(*w.emulated, native_model, comm.size(), algo);
    comm.set_emulation(w.emulation->hook());
  }
  const bool timers = cfg.timers;
  if (timers) comm.attach_log(&recorder.events());
  // MFU's peak (docs/metrics.md): every rank measures SGEMM at --threads at the same time
  // (sharing the host as in training); rank 0 records the best rank's rate and takes the
  // highest its database has seen for this host and thread count, so a busy moment does not
  // lower the peak. The sim backend's workers share one process: rank 0 measures, and a
  // --compute-scale k device is modelled as 1/k times this host's peak.
  {
    double peak = (cfg.backend == "sim" && comm.rank() != 0) ? 0.0 : peak_flops_measure(static_cast<int>(cfg.threads));
    comm.untimed_allreduce_max(&peak, 1);
    if (store && comm.rank() == 0)
      peak = store->host_peak_record(system_info_read().host, static_cast<int>(cfg.threads), peak * 1e-9) * 1e9;
    comm.untimed_broadcast(&peak, 1, 0);
    if (cfg.backend == "sim" && cfg.compute_scale > 0) peak /= cfg.compute_scale;
    w.peak_flops = peak;
  }

  TrainResult result;
  result.steps = w.steps;
  result.warmup = w.warmup;

  const RunRecord record = run_record_make(cfg, comm, w);
  if (store) {
    result.run_id = store->run_begin(record);
    g_active_run_id = result.run_id;
  }
  if (callbacks.on_start) callbacks.on_start(record);

  ClockOffsets offsets_prev = clock_sync_measure(comm);
  const double time_origin = offsets_prev.taken_at;  // rank 0's clock at start (rank 0 only)

  // Training clock (rank 0): wall time since the loop started, minus evaluation and flush time.
  double excluded_s = 0;
  double loop_start = 0;
  double timed_start = 0;
  double timed_excluded_at_start = 0;
  double loss_sum = 0;
  double loss_count = 0;

  auto flush = [&]() {
    ClockOffsets now = clock_sync_measure(comm);
    std::vector<StepRow> rows = recorder.flush(comm, offsets_prev, now, time_origin, w.warmup);
    offsets_prev = std::move(now);
    if (store && !rows.empty()) store->steps_append(result.run_id, rows);
  };

  auto evaluate = [&](int64_t steps_done) {
    const double t_eval = comm.now();
    if (timers && recorder.used() > 0) flush();
    double loss[2] = {loss_sum, loss_count};
    comm.untimed_allreduce_sum(loss, 2);
    loss_sum = loss_count = 0;
    const float* model = evaluation_model(w, comm, state, timers ? &recorder.events() : nullptr);
    const EvalSums sums = evaluate_test(w, comm, model);
    EvalRow row;
    row.consensus_distance = consensus_distance(w, comm, model);
    row.step = steps_done;
    row.time_s = steps_done == 0 ? 0.0 : (t_eval - loop_start) - excluded_s;
    row.train_loss = loss[1] > 0 ? loss[0] / loss[1] : std::nan("");
    row.test_loss = sums.count > 0 ? sums.loss_sum / sums.count : std::nan("");
    row.test_acc = sums.count > 0 ? sums.correct / sums.count : std::nan("");
    if (comm.rank() == 0) {
      if (store) store->evals_append(result.run_id, {row});
      if (callbacks.on_eval) callbacks.on_eval(row);
    }
    if (steps_done > 0) excluded_s += comm.now() - t_eval;
  };

  evaluate(0);
  comm.untimed_barrier();
  loop_start = comm.now();

  // ---- the step loop -------------------------------------------------------------------
  const bool computes = w.algorithm->worker_index(comm.rank(), comm.size()) >= 0;
  for (int64_t step = 0; step < w.steps; ++step) {
    if (step == w.warmup) {
      timed_start = comm.now();
      timed_excluded_at_start = excluded_s;
    }
    state.step = step;
    state.staleness = std::nan("");
    if (!computes) {  // a rank that only serves (ps dedicated): no data, gradient or optimizer
      StepTiming* t = timers ? &recorder.begin_step(step) : nullptr;
      const double t0 = comm.now();
      if (t) {
        t->start = t0;
        t->loss = std::nan("");  // it trains nothing
      }
      state.step_start = t0;
      w.algorithm->after_update(state);
      if (t) {
        t->step_s = comm.now() - t0;
        t->staleness = state.staleness;
        recorder.end_step(*t);
      }
    } else if (timers) {
      StepTiming& t = recorder.begin_step(step);
      const double t0 = comm.now();
      t.start = t0;
      state.step_start = t0;
      const uint32_t* idx = w.sampler->next();
      w.workload->load_batch(w.data->train, idx, w.sampler->batch());
      comm.compute_done(ComputePhase::phase_data);
      const double t1 = comm.now();
      t.loss = w.workload->forward(w.params.data());
      comm.compute_done(ComputePhase::phase_forward);
      const double t2 = comm.now();
      w.workload->backward(w.params.data(), w.grads.data(), hook);
      comm.compute_done(ComputePhase::phase_backward);
      double t3 = comm.now();
      if (!w.stragglers.empty()) {
        const double delay = w.stragglers.delay_s(comm.rank(), step, t3 - t1);
        if (delay > 0) {
          comm.hold_until(t3 + delay);
          const double t3_held = comm.now();
          t.injected_s = t3_held - t3;
          t3 = t3_held;
        }
      }
      w.algorithm->reduce_gradients(state);
      const double t4 = comm.now();
      state.lr = w.schedule.lr_at(step);
      if (w.algorithm->owns_optimizer()) {
        w.algorithm->optimizer_step(state);
      } else {
        w.optimizer->step(w.params.data(), w.grads.data(), state.lr);
      }
      comm.compute_done(ComputePhase::phase_optimizer);
      const double t5 = comm.now();
      w.algorithm->after_update(state);
      const double t6 = comm.now();
      t.data_s = t1 - t0;
      t.fwd_s = t2 - t1;
      t.bwd_s = t3 - t2 - t.injected_s;
      t.opt_s = t5 - t4;
      t.step_s = t6 - t0;
      t.staleness = state.staleness;
      recorder.end_step(t);
      loss_sum += t.loss;
    } else {
      const uint32_t* idx = w.sampler->next();
      w.workload->load_batch(w.data->train, idx, w.sampler->batch());
      comm.compute_done(ComputePhase::phase_data);
      const double t1 = w.stragglers.empty() ? 0.0 : comm.now();
      loss_sum += w.workload->forward(w.params.data());
      comm.compute_done(ComputePhase::phase_forward);
      w.workload->backward(w.params.data(), w.grads.data(), hook);
      comm.compute_done(ComputePhase::phase_backward);
      if (!w.stragglers.empty()) {
        const double t3 = comm.now();
        const double delay = w.stragglers.delay_s(comm.rank(), step, t3 - t1);
        if (delay > 0) comm.hold_until(t3 + delay);
      }
      w.algorithm->reduce_gradients(state);
      state.lr = w.schedule.lr_at(step);
      if (w.algorithm->owns_optimizer()) {
        w.algorithm->optimizer_step(state);
      } else {
        w.optimizer->step(w.params.data(), w.grads.data(), state.lr);
      }
      comm.compute_done(ComputePhase::phase_optimizer);
      w.algorithm->after_update(state);
    }
    if (computes) loss_count += 1;

    const int64_t done = step + 1;
    const bool last = done == w.steps;
    if (last) result.timed_wall_s = (comm.now() - timed_start) - (excluded_s - timed_excluded_at_start);
    if (done % w.eval_every == 0 || last) {
      evaluate(done);
    } else if (timers && recorder.full()) {
      const double t_flush = comm.now();
      flush();
      excluded_s += comm.now() - t_flush;
    }
  }
  comm.attach_log(nullptr);
  comm.set_emulation({});
  comm.set_hierarchy(1);
  if (recorder.events().dropped() > 0)
    DSGD_THROW(Error, "this is a bug: max_collectives_per_step is too small for the algorithm",
               "{} collective events were dropped", recorder.events().dropped());

  const float* model = evaluation_model(w, comm, state, nullptr);
  if (comm.rank() == 0) result.final_params.assign(model, model + w.params.size());
  if (comm.rank() == 0 && !cfg.save_params.empty()) {
    std::ofstream out(cfg.save_params, std::ios::binary);
    out.write(reinterpret_cast<const char*>(model), static_cast<std::streamsize>(w.params.size() * sizeof(float)));
    if (!out)
      DSGD_THROW(InputError, "pass a writable path to --save-params", "cannot write parameters to '{}'",
                 cfg.save_params);
  }
  if (store) {
    store->run_finish(result.run_id, "completed", "");
    g_active_run_id = 0;
  }
  return result;
}

}  // namespace dsgd
