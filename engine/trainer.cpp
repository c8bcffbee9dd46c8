// See trainer.hpp. Timing protocol (docs/metrics.md): per step, clock reads around the
// data, forward, backward, optimizer phases; every collective's arrival and departure
// recorded by the communicator; steps [0, warmup) untimed; evaluation and flushing
// outside the step and excluded from the training clock. Warm-up steps after the first also
// time one model pass after the update (probe_model_pass), for the simulator's profile.
#include "engine/trainer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "algorithms/algorithm.hpp"
#include "cluster/backends.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "core/clock.hpp"
#include "core/copy_aliasing.hpp"
#include "core/errors.hpp"
#include "core/huge_pages.hpp"
#include "core/output_file.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/clock_sync.hpp"
#include "engine/collective_check.hpp"
#include "engine/compute_profile.hpp"
#include "engine/layer_costs.hpp"
#include "engine/memory_estimate.hpp"
#include "engine/peak_flops.hpp"
#include "engine/run_record.hpp"
#include "engine/run_schedule.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/step_recorder.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/datasets/subset.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);

namespace dsgd {

namespace {

std::atomic<int64_t> g_active_run_id{0};
std::atomic<bool> g_past_setup{false};

// The time this rank spent inside the communication operations recorded in `log` from event
// `first` on (each one's departure minus its arrival: its wait and comm).
double events_blocked_s(const CollEventLog& log, size_t first) {
  double sum = 0;
  for (size_t i = first; i < log.size(); ++i) sum += std::max(0.0, log.data()[i].depart - log.data()[i].arrive);
  return sum;
}

// Everything a worker needs, built once.
struct Worker {
  std::shared_ptr<const DatasetPair> data;  // shared by the sim backend's workers (read-only)
  std::shared_ptr<const Dataset> eval_set;  // data->test, or its --eval-subset (shared likewise)
  std::unique_ptr<Workload> workload;
  // What an algorithm's threads use, declared before the algorithm so that its threads are
  // joined before these go: local threads 1..T−1's workloads and data streams
  // (Algorithm::local_threads), the decoupled forward's instances (Algorithm::
  // forward_instances), the rank's data stream and the straggler models.
  std::vector<std::unique_ptr<Workload>> helper_workloads;
  std::vector<std::unique_ptr<BatchSampler>> helper_samplers;
  std::vector<std::unique_ptr<Workload>> forward_workloads;
  std::unique_ptr<BatchSampler> sampler;
  Stragglers stragglers;
  std::unique_ptr<Algorithm> algorithm;
  std::unique_ptr<Optimizer> optimizer;
  LrSchedule lr_schedule;
  std::shared_ptr<const Topology> topology;          // shared by the sim backend's workers (read-only)
  std::optional<NetworkModel> emulated;              // from --bandwidth etc.; empty: no emulation
  std::unique_ptr<NetworkEmulation> emulation;       // null: nothing added to collectives
  int64_t native_calibration_id = 0;                 // calibration whose fit was subtracted (0: none)
  double peak_flops = 0;                             // MFU's peak per worker (peak_flops.hpp), FLOP/s
  HugePageVector<float> params, grads, eval_params;  // 2 MiB pages: a sparse model is read at random
  RunSchedule plan;                                  // steps, warm-up, evaluation and flush periods
};

const uint32_t* sampler_next(void* ctx) {
  return static_cast<BatchSampler*>(ctx)->next();
}

void hook_trampoline(void* ctx, size_t layer);
void forward_hook_trampoline(void* ctx, size_t);

struct HookContext {
  Algorithm* algorithm;
  TrainState* state;
};

void hook_trampoline(void* ctx, size_t layer) {
  auto* h = static_cast<HookContext*>(ctx);
  h->state->comm.compute_done(ComputePhase::phase_backward_layer, layer);
  h->state->comm.window_progress();  // others' epochs on this rank's window, if it has one
  h->algorithm->on_layer_grad_ready(*h->state, layer);
}

// Between the layers of the trainer's own forward pass (Workload::set_forward_hook).
void forward_hook_trampoline(void* ctx, size_t) {
  static_cast<HookContext*>(ctx)->state->comm.window_progress();
}

Worker worker_setup(const RunConfig& cfg, Communicator& comm) {
  // The names were checked before: by memory_preflight on real ranks, by sim_resolve once for
  // every simulated worker (not again per worker).
  RunPreflight preflight = memory_preflight(cfg, comm.size(), comm.ranks_on_this_host());  // before allocating
  Worker w;
  openblas_set_num_threads(static_cast<int>(cfg.threads));
  w.data = dataset_load_shared(cfg);
  if (w.data->test.rows == 0)
    DSGD_THROW(InputError, "use a dataset with a test split", "dataset '{}' has no test samples", cfg.dataset);
  w.eval_set = dataset_eval_set_shared(cfg, w.data);
  w.workload = preflight.workload ? std::move(preflight.workload) : workload_create(cfg, w.data->train);
  w.workload->reserve(static_cast<size_t>(cfg.batch));
  const size_t count = w.workload->param_count();
  // The model lives in host memory: a device workload needs the trainer's device buffers and
  // host staging for evaluation, which do not exist yet (GPU training end to end is planned:
  // docs/gpu.md).
  if (!w.workload->device().is_host())
    DSGD_THROW(Error, "run a host workload (docs/gpu.md)",
               "workload {} computes on {}; the trainer keeps the model in host memory (not yet implemented: GPU "
               "training end to end)",
               w.workload->name(), device_name(w.workload->device()));
  w.params.assign(count, 0.0f);
  w.grads.assign(count, 0.0f);
  w.eval_params.assign(count, 0.0f);
  w.workload->init_params(w.params.data(), cfg.seed);
  w.algorithm = preflight.algorithm ? std::move(preflight.algorithm) : algorithm_create(cfg.algo, cfg);
  // The data is shared by the ranks that compute gradients (all, except ps's dedicated servers).
  const int data_ranks = w.algorithm->worker_count(comm.size());
  w.sampler = std::make_unique<BatchSampler>(w.data->train.rows,
                                             std::max(0, w.algorithm->worker_index(comm.rank(), comm.size())),
                                             data_ranks, static_cast<size_t>(cfg.batch), cfg.seed);
  w.plan = run_schedule_make(cfg, w.sampler->batches_per_epoch());
  // Threads 1..T−1 of a rank that computes draw streams index+1 .. index+T−1 of data_ranks.
  if (const int index = w.algorithm->worker_index(comm.rank(), comm.size()); index >= 0)
    for (int k = 1; k < w.algorithm->local_threads(); ++k) {
      w.helper_workloads.push_back(workload_create(cfg, w.data->train));
      w.helper_workloads.back()->reserve(static_cast<size_t>(cfg.batch));
      w.helper_samplers.push_back(std::make_unique<BatchSampler>(w.data->train.rows, index + k, data_ranks,
                                                                 static_cast<size_t>(cfg.batch), cfg.seed));
    }
  for (int k = 0; k < w.algorithm->forward_instances(); ++k) {
    w.forward_workloads.push_back(workload_create(cfg, w.data->train));
    w.forward_workloads.back()->reserve(static_cast<size_t>(cfg.batch));
  }
  w.stragglers = Stragglers::parse(cfg.straggler, comm.size(), cfg.seed);
  w.stragglers.set_jitter(comm.compute_jitter());
  // The link classes only: a gossip variant builds its own graph (algorithms/dpsgd.cpp).
  w.topology = std::make_shared<const Topology>(topology_groups(cfg.topology, comm.size()));
  // hier:GxW: every recorded all-reduce runs in two levels (Communicator::set_hierarchy).
  comm.set_hierarchy(w.topology->groups);
  w.emulated = network_model_from_flags(cfg.bandwidth, cfg.latency, cfg.inter_bandwidth, cfg.inter_latency,
                                        w.topology->groups, cfg.link_efficiency, cfg.mtu);
  LinkClasses links;  // for algorithms that adapt to the links (adatopk)
  links.groups = w.topology->groups;
  if (w.emulated) {
    links.intra_bytes_per_s = w.emulated->intra.bytes_per_s;
    links.inter_bytes_per_s = w.emulated->inter ? w.emulated->inter->bytes_per_s : w.emulated->intra.bytes_per_s;
  }
  comm.set_link_classes(links);
  // An algorithm that owns the optimizer (zero: state for its shard only) leaves the
  // trainer's optimizer without state; the schedule still comes from it.
  w.optimizer = optimizer_create(cfg, w.algorithm->owns_optimizer() ? 0 : count, data_ranks);
  w.lr_schedule = lr_schedule_from_config(cfg, w.optimizer->base_lr(), w.plan.steps);
  return w;
}

RunRecord run_record_make(const RunConfig& cfg, const Communicator& comm, const Worker& w) {
  nlohmann::json config;
  RunRecord r = run_record_from_config(cfg, comm.size(), w.plan.steps, w.plan.warmup, w.plan.eval_every,
                                       comm.library_version(), config);
  config["model-state-bytes"] = w.algorithm->model_state_bytes(w.params.size(), comm.size());
  config["model-bytes"] = w.params.size() * sizeof(float);  // what every exchange of the model moves
  // Where the training set landed: a batch reads its rows at random, several times slower on
  // 4 KiB pages than on the 2 MiB pages the dataset asks for (core/huge_pages.hpp). Rank 0's
  // record is the one stored and printed; reading /proc/self/smaps once per sim worker (10^5 of
  // them sharing one dataset) would cost seconds for nothing.
  if (comm.rank() == 0) {
    const DatasetPaging paging = dataset_paging(w.data->train);
    config["dataset-pages"] = {
        {"thp", paging.thp_mode}, {"bytes", paging.bytes}, {"huge-fraction", paging.huge_fraction()}};
    // Whether this process's memory copies are slowed by where their buffers sit, and what was
    // done (core/copy_aliasing.hpp): a step's copies took up to 20x longer in some processes.
    const CopyAliasing& copies = copy_aliasing();
    config["copy-aliasing"] = {{"state", copies.state},
                               {"aliased-s", copies.aliased_s},
                               {"clean-s", copies.clean_s},
                               {"before-aliased-s", copies.before_aliased_s},
                               {"before-clean-s", copies.before_clean_s},
                               {"why", copies.why}};
  }
  if (w.eval_set.get() != &w.data->test) {
    if (w.data->test.tokens.empty())
      config["eval-set"] = {{"rows", w.eval_set->rows}, {"of", w.data->test.rows}, {"stratified", true}};
    else  // text: windows of seq tokens, evenly spaced
      config["eval-set"] = {{"windows", dataset_eval_windows(*w.eval_set)},
                            {"of", dataset_eval_windows(w.data->test)},
                            {"tokens-per-window", w.data->test.window - 1}};
  }
  // MFU's inputs (docs/metrics.md): the summary derives achieved model GFLOP/s and MFU from them.
  config["flops-per-sample"] = w.workload->flops_per_sample();
  config["peak-gflops-per-worker"] = w.peak_flops * 1e-9;
  if (const int computing = w.algorithm->worker_count(comm.size()); computing != comm.size())
    config["compute-workers"] = computing;  // throughput counts these ranks' samples (docs/metrics.md)
  if (w.emulation) {
    config["emulated-network"] = network_model_describe(*w.emulated);
    config["native-calibration-id"] =
        w.native_calibration_id > 0 ? nlohmann::json(w.native_calibration_id) : nlohmann::json(nullptr);
  }
  if (comm.hierarchy_groups() > 1)
    config["allreduce"] =
        fmt::format("two-level: {} groups of {}", comm.hierarchy_groups(), comm.size() / comm.hierarchy_groups());
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
  const size_t rows = w.eval_set->rows;
  const size_t n = static_cast<size_t>(comm.size());
  const size_t r = static_cast<size_t>(comm.rank());
  const size_t begin = rows * r / n;
  const size_t end = rows * (r + 1) / n;
  EvalSums local = w.workload->evaluate(model, *w.eval_set, begin, end);
  double sums[3] = {local.loss_sum, local.correct, local.count};
  comm.untimed_allreduce_sum(sums, 3);
  return EvalSums{sums[0], sums[1], sums[2]};
}

// Whether every value of the model is finite (the divergence check at evaluations).
bool all_finite(const float* x, size_t n) {
  float acc = 0.0f;  // x·0 is NaN exactly when x is NaN or ±inf; one pass, no branch
  for (size_t i = 0; i < n; ++i) acc += x[i] * 0.0f;
  return acc == 0.0f;
}

// One worker's run, in named stages. Every rank constructs one and calls run().
class Trainer {
 public:
  Trainer(const RunConfig& cfg, Communicator& comm, Store* store, const TrainerCallbacks& callbacks)
      : cfg_(cfg), comm_(comm), store_(store), callbacks_(callbacks), timers_(cfg.timers) {}

  TrainResult run() {
    setup();
    resolve_emulation();
    measure_peak();
    begin_record();
    train();
    return finish();
  }

 private:
  // Setup on every rank, then agreement: a rank that failed makes every rank throw.
  void setup() {
    std::exception_ptr setup_error;
    try {
      w_ = worker_setup(cfg_, comm_);
    } catch (...) {
      setup_error = std::current_exception();
    }
    collective_check(comm_, setup_error);
    g_past_setup = true;
    target_ = target_parse(cfg_.target);  // checked by worker_setup

    state_ = std::make_unique<TrainState>(TrainState{comm_, *w_.workload, *w_.optimizer, w_.params.data(),
                                                     w_.grads.data(), w_.params.size(), 0, w_.plan.steps});
    state_->train = &w_.data->train;
    for (size_t k = 0; k < w_.helper_workloads.size(); ++k)
      state_->streams.push_back(LocalStream{w_.helper_workloads[k].get(), sampler_next, w_.helper_samplers[k].get(),
                                            w_.helper_samplers[k]->batch()});
    for (const auto& f : w_.forward_workloads) state_->forward_workloads.push_back(f.get());
    state_->own_stream = LocalStream{w_.workload.get(), sampler_next, w_.sampler.get(), w_.sampler->batch()};
    if (!w_.stragglers.empty()) state_->stragglers = &w_.stragglers;
    decoupled_ = w_.algorithm->forward_instances() > 0;
    if (w_.algorithm->wants_layer_costs()) {  // per-layer costs, for algorithms that plan from them
      layer_costs_ = layer_costs_resolve(cfg_, comm_, store_, *w_.workload, w_.emulated, w_.topology->groups);
      state_->layer_costs = &layer_costs_;
    }
    w_.algorithm->setup(*state_);
    hook_ctx_ = HookContext{w_.algorithm.get(), state_.get()};
    w_.workload->set_forward_hook(LayerHook{forward_hook_trampoline, &hook_ctx_});
    computes_ = w_.algorithm->worker_index(comm_.rank(), comm_.size()) >= 0;
    recorder_.reserve(static_cast<size_t>(w_.plan.flush_every),
                      static_cast<size_t>(std::max(1, w_.algorithm->max_collectives_per_step())));
  }

  // Network emulation: rank 0 looks up this host's latest calibration (the native fabric's
  // all-reduce fit) and every rank gets the same numbers, so every rank holds a collective
  // for the same extra time. Without a calibration nothing is subtracted (docs/cluster.md).
  void resolve_emulation() {
    if (!w_.emulated) return;
    double native[3] = {0, 0, 0};  // calibration id, alpha, bus bandwidth
    if (store_) {
      if (const std::optional<AllreduceFit> fit = store_->allreduce_fit_latest(system_info_read().host)) {
        native[0] = static_cast<double>(fit->calibration_id);
        native[1] = fit->alpha_s;
        native[2] = fit->bandwidth_bytes_per_s;
      }
    }
    comm_.untimed_broadcast(native, 3, 0);
    std::optional<NetworkModel> native_model;
    if (native[0] > 0) {
      native_model = NetworkModel{network_link_from_allreduce_fit(native[1], native[2], comm_.size()), std::nullopt, 1};
      w_.native_calibration_id = static_cast<int64_t>(native[0]);
    }
    const CollAlgo algo = w_.topology->groups > 1 ? CollAlgo::algo_hierarchical : CollAlgo::algo_auto;
    w_.emulation = std::make_unique<NetworkEmulation>(*w_.emulated, native_model, comm_.size(), algo);
    comm_.set_emulation(w_.emulation->hook());
  }

  // MFU's peak (docs/metrics.md): every rank measures SGEMM at --threads at the same time
  // (sharing the host as in training); rank 0 records the best rank's rate and takes the
  // highest its database has seen for this host and thread count, so a busy moment does not
  // lower the peak. The sim backend's workers share one process: rank 0 measures, and a
  // --compute-scale k device is modelled as 1/k times this host's peak.
  void measure_peak() {
    const Backend& backend = backend_get(cfg_.backend);
    const bool shared = backend.launch == BackendLaunch::launch_in_process;  // workers share this process
    double peak = (shared && comm_.rank() != 0) ? 0.0 : peak_flops_measure(static_cast<int>(cfg_.threads));
    comm_.untimed_allreduce_max(&peak, 1);
    if (store_ && comm_.rank() == 0)
      peak = store_->host_peak_record(system_info_read().host, static_cast<int>(cfg_.threads), peak * 1e-9) * 1e9;
    comm_.untimed_broadcast(&peak, 1, 0);
    if (backend.has(cap_virtual_clock) && cfg_.compute_scale > 0) peak /= cfg_.compute_scale;
    w_.peak_flops = peak;
  }

  void begin_record() {
    if (timers_) comm_.attach_log(&recorder_.events());
    result_.steps = w_.plan.steps;
    result_.warmup = w_.plan.warmup;
    RunRecord record = run_record_make(cfg_, comm_, w_);
    if (store_) {
      result_.run_id = store_->run_begin(record);
      record.id = result_.run_id;  // on_start sees the stored id (a thread-safe alternative to trainer_active_run_id)
      g_active_run_id = result_.run_id;
    }
    if (callbacks_.on_start) callbacks_.on_start(record);
    offsets_prev_ = clock_sync_measure(comm_);
    time_origin_ = offsets_prev_.taken_at;  // rank 0's clock at start (rank 0 only)
  }

  // The step loop: evaluations every eval_every steps and after the last; per-step timings
  // flushed when the recorder is full. Stops early, on every rank together, when an
  // evaluation finds the run diverged or a stop rule holds (stop_rule).
  void train() {
    evaluate(0);  // ends with every rank together
    loop_start_ = comm_.now();
    for (int64_t step = 0; step < w_.plan.steps; ++step) {
      if (step == w_.plan.warmup) {
        timed_start_ = comm_.now();
        timed_excluded_at_start_ = excluded_s_;
      }
      step_once(step);
      const int64_t done = step + 1;
      if (callbacks_.on_progress) callbacks_.on_progress(TrainProgress{done, w_.plan.steps, last_loss_});
      const bool last = done == w_.plan.steps;
      if (last) {
        result_.timed_wall_s = timed_wall();
        end_algorithm_run();
      }
      if (done % w_.plan.eval_every == 0 || last) {
        if (evaluate(done)) {
          result_.timed_wall_s = done > w_.plan.warmup ? timed_wall() : 0.0;
          if (!last) end_algorithm_run();
          break;
        }
      } else if (timers_ && recorder_.full()) {
        const double t_flush = comm_.now();
        flush();
        comm_.untimed_barrier();  // rank 0's database write is no other rank's wait in the next step
        excluded_s_ += comm_.now() - t_flush;
      }
    }
  }

  // The algorithm's end of the run (Algorithm::end_run), after the last step's timing and
  // with the event log detached: what it does there belongs to no step.
  void end_algorithm_run() {
    comm_.attach_log(nullptr);
    w_.algorithm->end_run(*state_);
    if (timers_) comm_.attach_log(&recorder_.events());
  }

  double timed_wall() const { return (comm_.now() - timed_start_) - (excluded_s_ - timed_excluded_at_start_); }

  // One step, the same body with timers on or off: with timers off no clock is read
  // (except for a straggler's delay) and nothing is recorded.
  void step_once(int64_t step) {
    TrainState& state = *state_;
    StepTiming* t = timers_ ? &recorder_.begin_step(step) : nullptr;
    auto clock = [&] { return t ? comm_.now() : 0.0; };
    state.step = step;
    state.staleness = std::nan("");
    const double t0 = clock();
    if (t) {
      t->start = t0;
      state.step_start = t0;
    }
    state.lr = w_.lr_schedule.lr_at(step);
    if (!computes_) return serve_once(t, t0);
    w_.algorithm->begin_step(state);
    const bool stragglers = !w_.stragglers.empty();
    double t1 = t0;  // a decoupled forward (pdasgd) has no data phase here: its wait is fwd_s
    const ForwardPass pass = decoupled_ ? w_.algorithm->forward(state) : forward_here(t || stragglers, t1);
    const double loss = pass.loss;
    state.loss = loss;
    const double t2 = (t || stragglers) ? comm_.now() : 0.0;
    pass.workload->backward(pass.params, w_.grads.data(), LayerHook{hook_trampoline, &hook_ctx_});
    comm_.compute_done(ComputePhase::phase_backward);
    double t3 = (t || stragglers) ? comm_.now() : 0.0;
    if (stragglers) {
      // The step's compute: forward and backward, or with a decoupled forward the backward
      // (the forward thread applies its share, Algorithm::forward_instances).
      const double compute = decoupled_ ? t3 - t2 : t3 - t1;
      double jitter = 0;  // the simulator's compute jitter: compute (bwd_s), not an injected delay
      const double delay = w_.stragglers.delay_s(comm_.rank(), step, compute, true, &jitter);
      if (delay > 0) {
        comm_.hold_until(t3 + delay);
        if (t) {
          const double held = comm_.now();
          t->row.injected_s = std::max(0.0, held - t3 - jitter);
          t3 = held;
        }
      }
    }
    w_.algorithm->reduce_gradients(state);
    const double t4 = clock();
    const size_t events_before_opt = t ? recorder_.events().size() : 0;
    if (w_.algorithm->owns_optimizer()) {
      w_.algorithm->optimizer_step(state);
    } else {
      w_.optimizer->step(w_.params.data(), w_.grads.data(), state.lr);
    }
    comm_.compute_done(ComputePhase::phase_optimizer);
    const double t5 = clock();
    // A variant that communicates in its optimizer step (ps's push, sharded all-gathers): the
    // time inside those operations is comm and wait, not optimizer compute.
    const double opt_blocked = t ? events_blocked_s(recorder_.events(), events_before_opt) : 0.0;
    if (step > 0 && step < w_.plan.warmup) probe_model_pass(state);
    w_.algorithm->after_update(state);
    if (t) {
      StepRow& row = t->row;
      row.train_loss = loss;
      row.data_s = t1 - t0;
      row.fwd_s = t2 - t1;
      row.bwd_s = t3 - t2 - row.injected_s;
      row.opt_s = std::max(0.0, t5 - t4 - opt_blocked);
      row.step_s = comm_.now() - t0;
      if (!std::isnan(state.staleness)) row.staleness = state.staleness;
      recorder_.end_step(*t);
    }
    loss_sum_ += loss;
    loss_count_ += 1;
    last_loss_ = loss;
    if (!std::isfinite(loss) && first_nonfinite_step_ < 0) first_nonfinite_step_ = step;
  }

  // The step's data and forward phases on the trainer's instance and model; t1 is set
  // between them when timed.
  ForwardPass forward_here(bool timed, double& t1) {
    const uint32_t* idx = w_.sampler->next();
    w_.workload->load_batch(w_.data->train, idx, w_.sampler->batch());
    comm_.compute_done(ComputePhase::phase_data);
    if (timed) t1 = comm_.now();
    const double loss = w_.workload->forward(w_.params.data());
    comm_.compute_done(ComputePhase::phase_forward);
    return ForwardPass{w_.workload.get(), w_.params.data(), loss};
  }

  // A step of a rank that only serves (ps dedicated): no data, gradient or optimizer.
  void serve_once(StepTiming* t, double t0) {
    w_.algorithm->after_update(*state_);
    if (t) {
      t->row.train_loss = std::nan("");  // it trains nothing
      t->row.step_s = comm_.now() - t0;
      if (!std::isnan(state_->staleness)) t->row.staleness = state_->staleness;
      recorder_.end_step(*t);
    }
  }

  void flush() {
    ClockOffsets now = clock_sync_measure(comm_);
    std::vector<StepRow> rows = recorder_.flush(comm_, offsets_prev_, now, time_origin_, w_.plan.warmup);
    offsets_prev_ = std::move(now);
    if (store_ && !rows.empty()) store_->steps_append(result_.run_id, rows);
  }

  // Collective. Evaluates the consensus (or global) model on the test set and checks the
  // run for divergence: a non-finite minibatch loss on any rank since the start, or a
  // non-finite value in the evaluated model. Returns true when the run stops here: it
  // diverged (the evaluation row then carries NaN test metrics, so no target is ever reached
  // by it), or a stop rule holds (stop_rule).
  bool evaluate(int64_t steps_done) {
    const double t_eval = comm_.now();
    if (timers_ && recorder_.used() > 0) flush();
    double loss[2] = {loss_sum_, loss_count_};
    comm_.untimed_allreduce_sum(loss, 2);
    loss_sum_ = loss_count_ = 0;
    const float* model = evaluation_model(w_, comm_, *state_, timers_ ? &recorder_.events() : nullptr);
    // Divergence, agreed by every rank: [0] minus the first step with a non-finite loss
    // (max over ranks: the earliest), [1] whether some rank's model is not finite.
    double bad[2] = {first_nonfinite_step_ >= 0 ? -static_cast<double>(first_nonfinite_step_) : -1e300,
                     all_finite(model, w_.params.size()) ? 0.0 : 1.0};
    comm_.untimed_allreduce_max(bad, 2);
    const bool loss_bad = bad[0] > -1e299, model_bad = bad[1] > 0, diverged = loss_bad || model_bad;
    EvalRow row;
    row.step = steps_done;
    row.time_s = steps_done == 0 ? 0.0 : (t_eval - loop_start_) - excluded_s_;
    row.train_loss = loss[1] > 0 ? loss[0] / loss[1] : std::nan("");
    if (diverged) {
      row.test_loss = row.test_acc = std::nan("");
      result_.status = RunStatus::run_diverged;
      result_.diverged_step = loss_bad ? static_cast<int64_t>(-bad[0]) : steps_done;
      result_.error =
          loss_bad
              ? fmt::format("diverged: non-finite training loss at step {} (evaluation after step {} stopped the run)",
                            result_.diverged_step, steps_done)
              : fmt::format("diverged: non-finite model parameters at the evaluation after step {}", steps_done);
    } else {
      const EvalSums sums = evaluate_test(w_, comm_, model);
      row.consensus_distance = consensus_distance(w_, comm_, model);
      row.test_loss = sums.count > 0 ? sums.loss_sum / sums.count : std::nan("");
      row.test_acc = sums.count > 0 ? sums.correct / sums.count : std::nan("");
    }
    const bool stop = !diverged && stop_rule(row);
    row.eval_s = comm_.now() - t_eval;
    if (comm_.rank() == 0) {
      if (store_) store_->evals_append(result_.run_id, {row});
      if (callbacks_.on_eval) callbacks_.on_eval(row);
    }
    // Every rank resumes together: rank 0's write and progress line are excluded from the
    // training time, so they must not reappear as the other ranks' wait in the next step.
    comm_.untimed_barrier();
    if (steps_done > 0) excluded_s_ += comm_.now() - t_eval;
    return diverged || stop;
  }

  // Collective (the same on every rank: the configuration's rules). --stop-at-target and
  // --time-limit, decided on rank 0's evaluation (its training clock; the test metrics are the
  // same on every rank) and broadcast, so every rank stops after the same step. Not at the
  // evaluation before the first step.
  bool stop_rule(const EvalRow& row) {
    if (row.step == 0 || !(cfg_.stop_at_target || cfg_.time_limit > 0)) return false;
    double decided = 0;  // 1: the target, 2: the time limit
    if (comm_.rank() == 0) {
      if (cfg_.stop_at_target && target_ && target_reached(*target_, row))
        decided = 1;
      else if (cfg_.time_limit > 0 && row.time_s >= cfg_.time_limit)
        decided = 2;
    }
    comm_.untimed_broadcast(&decided, 1, 0);
    if (decided == 1)
      result_.stopped =
          fmt::format("target {} reached at {:.4g} s (step {})", target_format(*target_), row.time_s, row.step);
    else if (decided == 2)
      result_.stopped =
          fmt::format("time limit of {:.4g} s reached at {:.4g} s (step {})", cfg_.time_limit, row.time_s, row.step);
    return decided > 0;
  }

  // One model pass where an algorithm makes its own (after the update, the model in whatever
  // cache state the step left it; compute_profile_model_pass_s: the model is only read).
  // Host memory only, not on a virtual clock.
  void probe_model_pass(TrainState& s) {
    if (comm_.virtual_clock() || !s.device.is_host() || s.count == 0) return;
    if (pass_scratch_.size() != s.count) pass_scratch_.assign(s.device, s.count);
    pass_probes_.push_back(compute_profile_model_pass_s(s.vec(), pass_scratch_.view(), s.param_view()));
  }

  TrainResult finish() {
    comm_.attach_log(nullptr);
    comm_.set_emulation({});
    comm_.set_hierarchy(1);
    comm_.set_link_classes({});
    if (recorder_.events().dropped() > 0)
      DSGD_THROW(Error, "this is a bug: max_collectives_per_step is too small for the algorithm",
                 "{} collective events were dropped", recorder_.events().dropped());
    const float* model = evaluation_model(w_, comm_, *state_, nullptr);
    if (comm_.rank() == 0) result_.final_params.assign(model, model + w_.params.size());
    if (comm_.rank() == 0 && !cfg_.save_params.empty()) {
      OutputFile out(cfg_.save_params, "parameters", "--save-params");  // checked writes, no partial file
      out.stream().write(reinterpret_cast<const char*>(model),
                         static_cast<std::streamsize>(w_.params.size() * sizeof(float)));
      out.commit();
    }
    pass_scratch_.release();
    if (store_) {
      if (!pass_probes_.empty()) store_->run_note_model_pass(result_.run_id, stats_median(pass_probes_));
      store_->run_finish(result_.run_id, result_.status, result_.error);
      g_active_run_id = 0;
    }
    return std::move(result_);
  }

  const RunConfig& cfg_;
  Communicator& comm_;
  Store* store_;
  const TrainerCallbacks& callbacks_;
  const bool timers_;
  std::optional<Target> target_;  // --target (the stop rule's), parsed once setup agreed it is valid

  Worker w_;
  std::unique_ptr<TrainState> state_;
  LayerCosts layer_costs_;
  DeviceBuffer pass_scratch_;        // probe_model_pass's vector, freed at finish
  std::vector<double> pass_probes_;  // its timings, one per warm-up step after the first
  HookContext hook_ctx_{nullptr, nullptr};
  bool computes_ = true;
  bool decoupled_ = false;  // the algorithm runs the forward passes (Algorithm::forward_instances)
  StepRecorder recorder_;
  TrainResult result_;

  ClockOffsets offsets_prev_;
  double time_origin_ = 0;
  // Training clock (rank 0): wall time since the loop started, minus evaluation and flush time.
  double excluded_s_ = 0, loop_start_ = 0, timed_start_ = 0, timed_excluded_at_start_ = 0;
  double loss_sum_ = 0, loss_count_ = 0;  // minibatch losses since the last evaluation
  double last_loss_ = std::nan("");       // the last step's minibatch loss (progress line)
  int64_t first_nonfinite_step_ = -1;     // first step whose loss was not finite (-1: none)
};

}  // namespace

int64_t trainer_active_run_id() {
  return g_active_run_id.load();
}
bool trainer_past_setup() {
  return g_past_setup.load();
}

TrainResult trainer_run(const RunConfig& cfg, Communicator& comm, Store* store, const TrainerCallbacks& callbacks) {
  Trainer trainer(cfg, comm, store, callbacks);
  return trainer.run();
}

}  // namespace dsgd
