// See sim_run.hpp.
#include "engine/sim_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "cluster/network_model.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/calibration.hpp"
#include "engine/collective_check.hpp"
#include "engine/compute_profile.hpp"
#include "engine/fabric_file.hpp"
#include "engine/memory_estimate.hpp"
#include "engine/preflight.hpp"
#include "engine/run_record.hpp"
#include "engine/run_schedule.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/shared_topology.hpp"
#include "results/optimizer_profile_store.hpp"
#include "workloads/cost_file.hpp"

namespace dsgd {

namespace {

// Timing-only runs store at most this many step rows: above it, one step per block of k
// consecutive steps (chosen by the seed), all workers' rows of that step.
constexpr size_t kTimingRowCap = 100000;

std::string profile_hint(const RunConfig& cfg) {
  std::string shape;
  for (const auto& [flag, value] : workload_shape_flags(cfg)) shape += fmt::format(" --{} {}", flag, value);
  return fmt::format(
      "run `dsgd-bench calibrate --workload {}{} --dataset {} --batches {}{}` on this host, or pass --profile-from "
      "RUN_ID (a completed real run of the same workload and model, dataset and batch)",
      cfg.workload, shape, cfg.dataset, cfg.batch,
      cfg.threads == 1 ? std::string() : fmt::format(" --threads {}", cfg.threads));
}

struct SimNetwork {
  std::optional<NetworkModel> model;
  std::optional<NetworkModel> native;  // --native-floor
  CollAlgo algo = CollAlgo::algo_auto;
  std::string description;
  std::string remeasure;  // how to measure the model's measured curves again (empty: none)
  // The host's calibration before the one `model` is from, on as many ranks (null: none): a
  // fabric that changed between them may change again before the run it predicts.
  std::shared_ptr<const MeasuredFabric> previous;
  int64_t calibration_id = 0, previous_id = 0;
};

// The host's fabric as its calibration measured it: the link of the all-reduce fit (the
// ring formula at link_ranks gives the fitted line) and the sweep's measured curves
// (cluster/measured_fabric.hpp), which the model reads instead of the line where they exist.
NetworkModel sim_network_calibrated(const Store& store, const AllreduceFit& fit, int link_ranks) {
  NetworkModel model{network_link_from_allreduce_fit(fit.alpha_s, fit.bandwidth_bytes_per_s, link_ranks), std::nullopt,
                     1};
  if (fit.workers < 2) return model;
  model.measured = std::make_shared<const MeasuredFabric>(sim_calibrated_fabric(store, fit));
  return model;
}

std::string sim_network_calibrated_describe(const NetworkModel& model) {
  if (!model.measured) return network_model_describe(model);
  return fmt::format("{}; all-reduce fit {} (other kinds, and other rank counts by its ratio)",
                     measured_fabric_describe(*model.measured), network_model_describe(model));
}

SimNetwork sim_network_links(const RunConfig& cfg, const Store* store, const std::string& host, int groups) {
  SimNetwork net;
  net.algo = groups > 1 ? CollAlgo::algo_hierarchical : CollAlgo::algo_auto;
  net.model = network_model_from_flags(cfg.bandwidth, cfg.latency, cfg.inter_bandwidth, cfg.inter_latency, groups,
                                       cfg.link_efficiency, cfg.mtu);
  if (net.model) {
    net.description = network_model_describe(*net.model);
    return net;
  }
  if (!cfg.fabric.empty()) {
    const FabricFile file = fabric_file_read(cfg.fabric);
    net.model = fabric_file_network(file);
    net.algo = CollAlgo::algo_ring;
    net.description =
        fmt::format("fabric file: {}; {}", fabric_file_describe(file), sim_network_calibrated_describe(*net.model));
    net.remeasure = "run tools/export_fabric.py again on a quieter system, or with more --reps";
    return net;
  }
  const std::vector<AllreduceFit> fits = store ? store->allreduce_fits(host, 2) : std::vector<AllreduceFit>{};
  if (!fits.empty()) {
    const AllreduceFit& fit = fits.front();
    net.model = sim_network_calibrated(*store, fit, std::max(1, fit.workers));
    net.algo = CollAlgo::algo_ring;
    net.description =
        fmt::format("calibration {} of this host: {}", fit.calibration_id, sim_network_calibrated_describe(*net.model));
    net.remeasure = "run dsgd-bench calibrate again on a quieter host, or with more --reps";
    net.calibration_id = fit.calibration_id;
    if (fits.size() > 1 && fits[1].workers == fit.workers) {
      net.previous = std::make_shared<const MeasuredFabric>(sim_calibrated_fabric(*store, fits[1]));
      net.previous_id = fits[1].calibration_id;
    }
    return net;
  }
  net.description = "ideal (no --bandwidth and no calibrated all-reduce of this host: collectives take 0 s)";
  return net;
}

// The links, and with --native-floor this host's native fabric from its latest calibrated
// all-reduce fit (the one network emulation subtracts on this host).
SimNetwork sim_network_resolve(const RunConfig& cfg, const Store* store, const std::string& host, int groups) {
  SimNetwork net = sim_network_links(cfg, store, host, groups);
  if (!cfg.native_floor) return net;
  if (const std::optional<AllreduceFit> fit = store ? store->allreduce_fit_latest(host) : std::nullopt) {
    net.native = sim_network_calibrated(*store, *fit, static_cast<int>(cfg.workers));
    net.description += fmt::format("; at least the native fabric of calibration {} ({})", fit->calibration_id,
                                   sim_network_calibrated_describe(*net.native));
    return net;
  }
  net.description += "; --native-floor without a calibrated all-reduce of this host: no floor";
  return net;
}

struct Resolved {
  std::shared_ptr<const DatasetPair> data;
  std::shared_ptr<const Topology> topology;  // kept alive: the workers share it
  std::vector<LayerView> layers;
  size_t param_count = 0;
  SimProfile profile;
  SimNetwork network;
  SimMemory memory;
  std::string details_json;
  size_t batches_per_epoch = 0;                // per worker's shard (0: no dataset, --steps given)
  std::vector<double> buffer_broadcast_bytes;  // a cost file's buffers, one broadcast per dtype
};

void sim_resolve_finish(const RunConfig& cfg, Resolved& r);
Resolved sim_resolve_cost_file(const RunConfig& cfg, const Store* store);

Resolved sim_resolve(const RunConfig& cfg, const Store* store, Store* writable, const SimProfileMissing& missing) {
  if (cost_file_workload(cfg.workload)) return sim_resolve_cost_file(cfg, store);
  Resolved r;
  const std::string host = system_info_read().host;
  const int n = static_cast<int>(cfg.workers);
  preflight_check_names(cfg);
  config_check_timing_only(cfg);  // again: the tuner's probes run without config_validate
  r.data = dataset_load_shared(cfg);
  double workload_bytes = 0;
  {
    const auto workload = workload_create(cfg, r.data->train);
    r.layers = workload->layers();
    r.param_count = workload->param_count();
    workload_bytes = workload->reserve_bytes(static_cast<size_t>(cfg.batch));
  }
  run_steps_for_shard(cfg, r.data->train.rows / static_cast<size_t>(n));  // refuses more than 1e9 steps
  {
    const auto algorithm = algorithm_create(cfg.algo, cfg);
    r.memory = sim_memory_estimate(cfg, r.data->train, r.data->test, r.param_count, workload_bytes, algorithm.get());
  }
  if (r.memory.available_bytes > 0 && r.memory.total_bytes > r.memory.available_bytes)
    DSGD_THROW(InputError,
               cfg.timing_only ? "use fewer workers" : "use fewer workers, a smaller model, or --timing-only",
               "the simulation of {} workers needs about {:.3g} GB ({:.3g} MB per worker + {:.3g} MB of shared "
               "dataset), more than the {:.3g} GB of memory available on this machine",
               n, r.memory.total_bytes / 1e9, r.memory.per_worker_bytes / 1e6, r.memory.dataset_bytes / 1e6,
               r.memory.available_bytes / 1e9);
  r.topology = variant_get(cfg.algo).reads_topology
                   ? topology_make_shared(cfg.topology, n, cfg.seed)
                   : std::make_shared<const Topology>(topology_groups(cfg.topology, n));
  r.network = sim_network_resolve(cfg, store, host, r.topology->groups);
  if (cfg.timing_only && variant_get(cfg.algo).timing_needs_neighbors && r.topology->time_varying)
    DSGD_THROW(InputError, "use a static topology (ring, torus:RxC, exp, complete, hier:GxW), or drop --timing-only",
               "--timing-only models {} on a static topology only (got --topology {})", cfg.algo, cfg.topology);
  // Last of the checks, so bad input stores no profile.
  if (missing.measure && writable && cfg.profile_from == 0) {
    const ComputeProfileFill fill =
        compute_profile_fill_missing(*writable, cfg, {cfg.batch}, missing.by, [&](const std::vector<int64_t>& batches) {
          if (missing.before) missing.before(batches);
        });
    if (!fill.batches.empty() && missing.after) missing.after(fill);
  }
  r.profile = sim_profile_resolve(cfg, store, host, r.layers);
  r.batches_per_epoch = r.data->train.rows / static_cast<size_t>(n) / static_cast<size_t>(cfg.batch);
  sim_resolve_finish(cfg, r);
  return r;
}

// A step that computes this long streams its caches before each collective: the host's
// measured curves are then read as timed after compute where the calibration has them.
// Returns whether it did (the calibration has such curves).
bool sim_network_after_compute(SimNetwork& net, double step_compute_s) {
  if (step_compute_s < kAfterComputeMinStepS) return false;
  bool used = false;
  for (std::optional<NetworkModel>* m : {&net.model, &net.native}) {
    if (!*m || !(*m)->measured || !measured_fabric_has_after_compute(*(*m)->measured)) continue;
    (*m)->measured = std::make_shared<const MeasuredFabric>(measured_fabric_after_compute(*(*m)->measured));
    used = true;
  }
  if (used)
    net.description +=
        fmt::format("; collectives as timed after compute (the step computes {:.3g} ms, at least {:.3g} ms)",
                    1e3 * step_compute_s, 1e3 * kAfterComputeMinStepS);
  return used;
}

// What a prediction reads from a measured fabric whose repetitions disagree (more than a
// compute profile may: kProfileSpreadLimit): each kind whose points around the model's size
// spread that widely, in one warning. Every variant exchanges the model or its gradient, or
// buckets or shards of it, so the points at its size are the ones the step's comm reads.
std::vector<std::string> sim_network_noise_warnings(const SimNetwork& net, double model_bytes) {
  if (!net.model || !net.model->measured) return {};
  std::string kinds;
  for (size_t k = 0; k < kCollKinds; ++k) {
    const std::optional<MeasuredNoise> noise =
        measured_fabric_noise(*net.model->measured, static_cast<CollKind>(k), model_bytes, kProfileSpreadLimit);
    if (!noise) continue;
    kinds += fmt::format("{}{} at {:.4g} KB {:.0f} %", kinds.empty() ? "" : ", ",
                         coll_kind_name(static_cast<CollKind>(k)), noise->bytes / 1e3, 100 * noise->spread);
  }
  if (kinds.empty()) return {};
  return {
      fmt::format("the measured fabric's repetitions spread widely near the model's {:.4g} KB ({}; interquartile "
                  "range over the median, above {:.0f} %): the communication predicted from their medians is that "
                  "uncertain; {}",
                  model_bytes / 1e3, kinds, 100 * kProfileSpreadLimit, net.remeasure)};
}

// The host's fabric as its previous calibration measured it, against the one the prediction
// reads: when an all-reduce of the model's size moved more than kFabricMoveLimit, one warning.
// A host whose fabric moves between calibrations (a shared machine, a network with states) may
// move again before the run; if the host or its
// network changed on purpose between them, the warning says what to ignore. Reads the curves
// timed back to back (before sim_network_after_compute swaps them), as both sweeps have them.
std::vector<std::string> sim_network_drift_warnings(const SimNetwork& net, double model_bytes) {
  if (!net.previous || !net.model || !net.model->measured) return {};
  const std::optional<double> now = measured_fabric_time(*net.model->measured, CollKind::coll_allreduce, model_bytes);
  const std::optional<double> before = measured_fabric_time(*net.previous, CollKind::coll_allreduce, model_bytes);
  if (!now || !before || !(*now > 0) || !(*before > 0)) return {};
  const double moved = stats_relative_gap(*now, *before);
  if (moved <= kFabricMoveLimit) return {};
  return {fmt::format(
      "this host's fabric moved between its calibrations: an all-reduce of the model's {:.4g} KB took {:.3g} us in "
      "calibration {}, the one read, and {:.3g} us in calibration {} before it ({:.0f} % apart, above {:.0f} %); "
      "unless the host or its network changed between them, its fabric does not hold still and the predicted "
      "communication is that uncertain: calibrate again right before the runs it predicts",
      model_bytes / 1e3, 1e6 * *now, net.calibration_id, 1e6 * *before, net.previous_id, 100 * moved,
      100 * kFabricMoveLimit)};
}

// --compute-scale on the profile, and the run's backend details.
void sim_resolve_finish(const RunConfig& cfg, Resolved& r) {
  SimComputeCost& c = r.profile.cost;
  c.model_bytes = static_cast<double>(r.param_count) * sizeof(float);
  if (cfg.workers > 1 && !(c.model_pass_s > 0))
    r.profile.warnings.push_back(fmt::format(
        "the profile has no measured model pass: {}'s passes over the model outside compute ({}) are taken as "
        "free (a run with --warmup 2 or more measures it for --profile-from; `dsgd-bench calibrate` of this "
        "version for a calibration; a cost file's device memory bandwidth)",
        cfg.algo,
        variant_get(cfg.algo).model_passes ? "the copy it sends, the mix"
                                           : "an average's divide by the worker count, if it averages"));
  const double k = cfg.compute_scale;
  c.data_s *= k;
  c.fwd_s *= k;
  c.bwd_rest_s *= k;
  c.opt_s *= k;
  c.model_pass_s *= k;
  for (double& b : c.bwd_layer_s) b *= k;
  std::vector<std::string> network_warnings = sim_network_drift_warnings(r.network, c.model_bytes);
  const bool after_compute = sim_network_after_compute(r.network, c.step_compute_s());
  for (std::string& w : sim_network_noise_warnings(r.network, c.model_bytes)) network_warnings.push_back(std::move(w));
  nlohmann::json details = {
      {"clock", "virtual"},
      {"profile", r.profile.source},
      {"compute-scale", cfg.compute_scale},
      {"step-compute-s", c.step_compute_s()},
      {"network", r.network.description},
      {"collective-algorithm", network_algo_name(r.network.algo)},
      {"timing-only", cfg.timing_only},
  };
  // A cost file's run has no model in memory to estimate: no figure rather than 0.
  if (r.memory.total_bytes > 0) details["memory-estimate-bytes"] = r.memory.total_bytes;
  if (!r.profile.warnings.empty()) details["profile-warnings"] = r.profile.warnings;
  if (!network_warnings.empty()) details["network-warnings"] = network_warnings;
  details["compute-jitter"] = r.profile.jitter.empty()         ? "none"
                              : r.profile.jitter.in_step_order ? "the profile run's, replayed per rank and step"
                                                               : "from the profile";
  if (!r.profile.jitter_source.empty()) details["compute-jitter-source"] = r.profile.jitter_source;
  if (!r.network.model) details["network-ideal"] = true;
  if (after_compute) details["network-after-compute"] = true;  // read the curves timed after compute
  r.details_json = details.dump();
}

// The compute jitter of a cost file: the exporter's per-iteration step times at the measured
// batch nearest the run's, their distribution relative to its median taken to hold at the
// run's batch. They become factors on the forward and backward (what the jitter scales), so
// that the simulated step (data + forward + backward + optimizer) has that distribution
// around the file's step at the run's batch; the forward and backward are scaled down to the
// fastest step's. None for a file without the times (an older exporter, a trace).
void profile_jitter_from_cost_file(const CostAtBatch& at, SimProfile& p) {
  const std::vector<double> f = profile_jitter_quantiles(at.step_times_s);
  if (f.empty()) {
    p.jitter_source = at.step_times_s.empty()
                          ? "none: the cost file has no per-iteration step times (exported by an older "
                            "tools/export_profile.py, or a trace)"
                          : "none: the cost file's per-iteration step times are too few or start at 0";
    return;
  }
  SimComputeCost& c = p.cost;
  double compute = c.fwd_s + c.bwd_rest_s;
  for (double b : c.bwd_layer_s) compute += b;
  const double fixed = c.data_s + c.opt_s;  // not scaled by the jitter
  const double median = stats_median(f);
  const double fastest = at.step_s / median;  // the step at the distribution's lowest quantile
  const double low = fastest - fixed;
  if (!(compute > 0) || !(low > 0)) {
    p.jitter_source = "none: the cost file's fastest step is not longer than its optimizer and unattributed parts";
    return;
  }
  std::vector<double> g(f.size());
  for (size_t k = 0; k < f.size(); ++k) g[k] = (f[k] * fastest - fixed) / low;
  g.front() = 1.0;
  const double scale = low / compute;
  c.fwd_s *= scale;
  c.bwd_rest_s *= scale;
  for (double& b : c.bwd_layer_s) b *= scale;
  p.jitter.factors = {std::move(g)};
  p.jitter_source = fmt::format(
      "from the cost file's {} per-iteration step times at batch {} ({} quantiles: the slowest step {:.2f}x the "
      "fastest, the median {:.2f}x)",
      at.step_times_s.size(), at.step_times_batch, f.size(), f.back(), median);
}

// A cost-file workload (--workload profile:FILE): the layers and compute times are the
// file's, at cfg.batch (workloads/cost_file.hpp); no dataset, no numerics (timing-only).
Resolved sim_resolve_cost_file(const RunConfig& cfg, const Store* store) {
  Resolved r;
  const CostFile file = cost_file_load(cfg.workload);
  const CostAtBatch at = cost_file_at_batch(file, cfg.batch);
  for (const CostFileLayer& l : cost_file_layers(file)) {
    r.layers.push_back(LayerView{l.name, r.param_count, l.floats});
    r.param_count += l.floats;
  }
  r.topology = variant_get(cfg.algo).reads_topology
                   ? topology_make_shared(cfg.topology, static_cast<int>(cfg.workers), cfg.seed)
                   : std::make_shared<const Topology>(topology_groups(cfg.topology, static_cast<int>(cfg.workers)));
  r.network = sim_network_resolve(cfg, store, system_info_read().host, r.topology->groups);
  SimComputeCost& c = r.profile.cost;
  c.data_s = at.data_s;
  c.fwd_s = at.fwd_s;
  c.bwd_layer_s = at.bwd_layer_s;
  c.bwd_rest_s = at.bwd_rest_s;
  c.opt_s = at.opt_s;
  // The model pass as the exporter timed it; from an older exporter's file, the parameters
  // streamed 2.5 times (the mean of a copy and y ← y + a·x) at the device's memory bandwidth
  // measured on 256 MiB (slower than a pass over a model that stays in the caches).
  std::string pass_note;
  if (file.model_pass && file.model_pass->median_s > 0) {
    c.model_pass_s = file.model_pass->median_s;
    pass_note = "; model pass as exported";
  } else if (file.device_memory_bandwidth > 0) {
    c.model_pass_s = 2.5 * static_cast<double>(file.parameter_bytes) / file.device_memory_bandwidth;
    pass_note = file.model_pass ? "; model pass from the device's memory bandwidth (the file's measured one is 0)"
                                : "; model pass from the device's memory bandwidth (the file has no measured one)";
  }
  // PyTorch DDP (the ssgd of a cost file) broadcasts the buffers from rank 0 before each forward.
  std::string buffer_note;
  if (variant_get(cfg.algo).broadcasts_buffers && cfg.workers > 1) {
    if (file.buffers && cfg.broadcast_buffers)
      for (const CostBufferGroup& b : *file.buffers)
        if (b.bytes > 0) r.buffer_broadcast_bytes.push_back(static_cast<double>(b.bytes));
    buffer_note = !cfg.broadcast_buffers
                      ? "; buffers not broadcast (--broadcast-buffers false)"
                      : fmt::format("; buffers broadcast before each forward, as DDP does: {}{}",
                                    cost_file_buffers_describe(file), file.buffers ? "" : ": not charged");
  }
  r.profile.source = fmt::format("cost file: {}; batch {} {}{}{}", cost_file_describe(file), cfg.batch, at.how,
                                 pass_note, buffer_note);
  if (cfg.compute_jitter == "profile")
    profile_jitter_from_cost_file(at, r.profile);
  else
    r.profile.jitter_source = "none: --compute-jitter " + cfg.compute_jitter;
  if (at.step_spread > kProfileSpreadLimit)
    r.profile.warnings.push_back(
        fmt::format("the cost file's step spread is {:.0f} % (above {:.0f} %): its times are "
                    "too noisy to predict from; export it again on a quiet machine",
                    100 * at.step_spread, 100 * kProfileSpreadLimit));
  sim_resolve_finish(cfg, r);
  return r;
}

// The timing-only plan of cfg: its schedule, costs, network, stragglers and dpsgd's graph.
SimTimingPlan timing_plan_make(const RunConfig& cfg, const Resolved& r, const RunSchedule& schedule) {
  SimTimingPlan plan;
  plan.workers = static_cast<int>(cfg.workers);
  plan.steps = schedule.steps;
  plan.eval_every = schedule.eval_every;
  plan.flush_every = schedule.flush_every;
  plan.period = cfg.period;
  for (const LayerView& v : r.layers) plan.layer_counts.push_back(v.count);
  plan.param_bytes = static_cast<double>(r.param_count) * sizeof(float);
  plan.cost = r.profile.cost;
  plan.stragglers = Stragglers::parse(cfg.straggler, plan.workers, cfg.seed);
  plan.stragglers.set_jitter(r.profile.jitter);
  plan.network = r.network.model;
  plan.net_algo = r.network.algo;
  plan.native = r.network.native;
  plan.buffer_broadcast_bytes = r.buffer_broadcast_bytes;
  const Variant& variant = variant_get(cfg.algo);
  if (variant.timing_needs_neighbors) {
    plan.neighbors = r.topology->neighbors;
    plan.group_of = r.topology->group_of;
  }
  if (variant.timing_plan) variant.timing_plan(cfg, plan);
  return plan;
}

// Which steps a timing-only run stores: every step, or (beyond kTimingRowCap rows) one per
// block of keep_every steps, at an offset in the block drawn from the seed (stratified).
class StoredSteps {
 public:
  StoredSteps(int64_t keep_every, int64_t steps, uint64_t seed) : keep_every_(keep_every), steps_(steps), seed_(seed) {}
  bool keep(int64_t step) {
    if (keep_every_ == 1) return true;
    const int64_t block = step / keep_every_;
    if (block != block_) {
      block_ = block;
      const int64_t len = std::min<int64_t>(keep_every_, steps_ - block * keep_every_);
      Rng rng(rng_derive_seed(seed_, 0x51D7, static_cast<uint64_t>(block)));
      chosen_ = block * keep_every_ + static_cast<int64_t>(rng.below(static_cast<uint64_t>(len)));
    }
    return step == chosen_;
  }

 private:
  int64_t keep_every_, steps_;
  uint64_t seed_;
  int64_t block_ = -1, chosen_ = -1;
};

// One worker's stored row of a timing-only step (no numerics: the loss is empty, not invented).
StepRow timing_step_row(int rank, int64_t step, int64_t warmup, const SimStepTiming& t) {
  StepRow row;
  row.rank = rank;
  row.step = step;
  row.timed = step >= warmup;
  row.start_s = t.start;
  row.step_s = t.step;
  row.fwd_s = t.fwd;
  row.bwd_s = t.bwd + t.jitter;  // the compute jitter is compute, not an injected delay
  row.opt_s = t.opt;
  row.data_s = t.data;
  row.comm_s = t.comm;
  row.wait_s = t.wait;
  row.overlap_s = t.overlap;
  row.injected_s = std::max(0.0, t.injected - t.jitter);
  row.bytes_sent = t.bytes;
  row.train_loss = std::numeric_limits<double>::quiet_NaN();
  return row;
}

TrainResult sim_run_timing(const RunConfig& cfg, const Resolved& r, Store* store, const TrainerCallbacks& callbacks) {
  // Every worker's shard has train_rows / workers samples (the batch sampler's split).
  const RunSchedule schedule = run_schedule_make(cfg, r.batches_per_epoch);
  const SimTimingPlan plan = timing_plan_make(cfg, r, schedule);
  const int64_t warmup = schedule.warmup;
  const size_t n = static_cast<size_t>(plan.workers);
  const int64_t keep_every = std::max<int64_t>(
      1, static_cast<int64_t>((n * static_cast<size_t>(plan.steps) + kTimingRowCap - 1) / kTimingRowCap));

  nlohmann::json config;
  RunRecord record = run_record_from_config(cfg, plan.workers, plan.steps, warmup, plan.eval_every,
                                            "dsgd-bench sim (virtual clock)", config);
  if (cost_file_workload(cfg.workload)) record.dataset = "none";  // a cost file's model reads no data
  config["backend-details"] = nlohmann::json::parse(r.details_json);
  config["backend-details"]["stored-steps"] =
      keep_every == 1 ? std::string("all") : fmt::format("one step per block of {} (seeded)", keep_every);
  record.config_json = config.dump();
  TrainResult result;
  result.steps = plan.steps;
  result.warmup = warmup;
  if (store) record.id = result.run_id = store->run_begin(record);
  if (callbacks.on_start) callbacks.on_start(record);

  StoredSteps stored(keep_every, plan.steps, cfg.seed);
  auto keep = [&](int64_t step) { return store != nullptr && stored.keep(step); };
  std::vector<StepRow> rows;
  rows.reserve(kTimingRowCap + n);
  auto sink = [&](int64_t step, const SimStepTiming* t) {
    for (size_t i = 0; i < n; ++i) rows.push_back(timing_step_row(static_cast<int>(i), step, warmup, t[i]));
  };
  const SimTimingResult out = sim_timing_run(plan, variant_get(cfg.algo).timing, keep, sink);
  // In the table's key order (run, rank, step): appending step-major into the
  // (run_id, rank, step) B-tree costs a page read per row once the table outgrows the cache.
  std::sort(rows.begin(), rows.end(),
            [](const StepRow& a, const StepRow& b) { return a.rank != b.rank ? a.rank < b.rank : a.step < b.step; });
  if (store && !rows.empty()) store->steps_append(result.run_id, rows);
  result.timed_wall_s = out.end_time;
  if (store) store->run_finish(result.run_id, RunStatus::run_completed, "");
  return result;
}

TrainResult sim_run_numerics(const RunConfig& cfg, const Resolved& r, Store* store, const TrainerCallbacks& callbacks) {
  SimWorldOptions options;
  options.workers = static_cast<int>(cfg.workers);
  options.network = r.network.model;
  options.algo = r.network.algo;
  options.native = r.network.native;
  options.cost = r.profile.cost;
  options.jitter = r.profile.jitter;
  options.details_json = r.details_json;
  options.group_of = r.topology->group_of;
  SimWorld world(std::move(options));
  TrainResult result;
  world.run([&](int rank) {
    try {
      TrainResult mine =
          trainer_run(cfg, world.comm(rank), rank == 0 ? store : nullptr, rank == 0 ? callbacks : TrainerCallbacks{});
      if (rank == 0) result = std::move(mine);
    } catch (const PeerFailed&) {
      // Another worker's error is the one reported.
    }
  });
  return result;
}

}  // namespace

namespace {

// The model a stored run trained: its workload, dataset and model-shape fields (the keys
// workload_profile_key reads) from its stored configuration.
RunConfig stored_model(const RunRecord& rec) {
  RunConfig m;
  m.workload = rec.workload;
  m.dataset = rec.dataset;
  const nlohmann::json config = nlohmann::json::parse(rec.config_json, nullptr, false);
  if (!config.is_object()) return m;
  nlohmann::json shape = nlohmann::json::object();
  for (const std::string& key : workload_shape_keys())
    if (config.contains(key)) shape[key] = config[key];
  run_config_apply_json(m, shape, fmt::format("run {}'s stored configuration", rec.id));
  return m;
}

// --profile-from RUN: the run's measured means per step (backward split over layers by
// parameter count); refused unless it is a completed real run of the same workload, dataset and batch.
// The compute jitter of a profile taken from a run: the empirical distribution of its timed
// steps' fwd + bwd (every rank's; at most kJitterSamples evenly spaced order statistics of
// them), relative to the lowest; the profile's fwd and bwd are scaled from their means down to
// that lowest, so that each drawn factor gives a measured step's compute, and the jittered
// compute has the run's distribution, its mean and tail included (a dedicated server's rows
// without compute do not dilute it). With `replay` (--compute-jitter replay), each rank's timed steps in step order
// instead, all relative to the lowest of all: simulated worker r's step s computes what the
// run's rank r mod its ranks computed at its step s (mod the run's timed steps), a slower
// rank, the ranks' drift and what they had in common at each step included. A run of fewer
// than kJitterMinSteps timed (rank, step) rows with compute (on its rank with fewest, for a
// replay) keeps a fixed compute, and says so.
constexpr size_t kJitterSamples = 1000, kJitterMinSteps = 20;

// At most kJitterSamples evenly spaced order statistics of `compute` (sorted here), over `lowest`.
std::vector<double> jitter_draws(std::vector<double> compute, double lowest) {
  std::sort(compute.begin(), compute.end());
  const size_t k_samples = std::min(kJitterSamples, compute.size());
  std::vector<double> f(k_samples);
  for (size_t k = 0; k < k_samples; ++k)
    f[k] = compute[k * (compute.size() - 1) / std::max<size_t>(1, k_samples - 1)] / lowest;
  return f;
}

// One rank's replay over steps first..last, over `lowest`: its measured step where it has one,
// else the rank's previous one (a step without compute, or the steps before its first); a rank
// without compute rows (a dedicated server) none at all, 1 (its compute is 0 in the simulator).
std::vector<double> jitter_replay(const std::map<int64_t, double>& by_step, int64_t first, int64_t last,
                                  double lowest) {
  if (by_step.empty()) return {1.0};
  std::vector<double> f(static_cast<size_t>(last - first + 1));
  double held = by_step.begin()->second / lowest;
  for (int64_t step = first; step <= last; ++step) {
    if (const auto it = by_step.find(step); it != by_step.end()) held = it->second / lowest;
    f[static_cast<size_t>(step - first)] = held;
  }
  return f;
}

void profile_jitter_from_steps(const Store& store, int64_t run_id, bool replay, SimProfile& p) {
  // (rank, step) → fwd + bwd of the timed rows with compute; the run's ranks and step range.
  std::map<int, std::map<int64_t, double>> by_rank;
  std::vector<double> compute;
  int ranks = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const StepRow& row : store.steps_get(run_id)) {
    if (!row.timed) continue;
    ranks = std::max(ranks, static_cast<int>(row.rank) + 1);
    first = std::min(first, row.step);
    last = std::max(last, row.step);
    if (!(row.fwd_s + row.bwd_s > 0)) continue;
    by_rank[static_cast<int>(row.rank)][row.step] = row.fwd_s + row.bwd_s;
    compute.push_back(row.fwd_s + row.bwd_s);
  }
  size_t fewest = replay && !by_rank.empty() ? SIZE_MAX : compute.size();
  if (replay)
    for (const auto& [rank, steps] : by_rank) fewest = std::min(fewest, steps.size());
  if (fewest < kJitterMinSteps) {
    p.jitter_source = fmt::format("none: run {} has {} timed steps with compute{}, {} needed", run_id, fewest,
                                  replay ? " on its rank with fewest" : "", kJitterMinSteps);
    return;
  }
  const double lowest = *std::min_element(compute.begin(), compute.end());
  const double highest = *std::max_element(compute.begin(), compute.end());
  if (!(lowest > 0)) return;
  ComputeJitter jitter;
  jitter.in_step_order = replay;
  jitter.first_step = replay ? first : 0;
  std::string medians;
  if (replay) {
    for (int rank = 0; rank < ranks; ++rank) {
      const auto it = by_rank.find(rank);
      jitter.factors.push_back(
          jitter_replay(it == by_rank.end() ? std::map<int64_t, double>{} : it->second, first, last, lowest));
      if (it == by_rank.end()) continue;
      std::vector<double> own;
      for (const auto& [step, c] : it->second) own.push_back(c);
      medians += fmt::format("{}rank {} median {:.3g} ms", medians.empty() ? "" : ", ", rank, 1e3 * stats_median(own));
    }
  } else {
    jitter.factors.push_back(jitter_draws(compute, lowest));
  }
  double base = p.cost.fwd_s;  // what the simulator charges for forward + backward, before a draw
  for (double b : p.cost.bwd_layer_s) base += b;
  if (!(base > 0)) return;
  p.cost.fwd_s *= lowest / base;
  for (double& b : p.cost.bwd_layer_s) b *= lowest / base;
  p.jitter = std::move(jitter);
  p.jitter_source =
      replay ? fmt::format("run {}'s {} timed steps replayed per rank and step (fwd+bwd {:.3g} to {:.3g} ms; {})",
                           run_id, compute.size(), 1e3 * lowest, 1e3 * highest, medians)
             : fmt::format("from run {}'s {} timed steps (fwd+bwd {:.3g} to {:.3g} ms, median {:.3g} ms)", run_id,
                           compute.size(), 1e3 * lowest, 1e3 * highest, 1e3 * stats_median(compute));
}

// The compute jitter of a calibration's profile: the batch's stored quantiles (its layer-0
// row), equally likely; the profile's per-layer medians are scaled to the lowest, so that the
// jittered compute has the measured distribution (median and mean included). None for a
// calibration stored before the distributions were.
void profile_jitter_from_calibration(const std::vector<ProfileRow>& rows, int64_t calibration_id, SimProfile& p) {
  const ProfileRow* first = nullptr;
  for (const ProfileRow& row : rows)
    if (row.layer == 0 && row.jitter.size() >= 2) first = &row;
  if (!first) {
    p.jitter_source =
        fmt::format("none: calibration {} stored no per-iteration distribution (an older version)", calibration_id);
    return;
  }
  const std::vector<double>& f = first->jitter;
  const size_t k = f.size();
  const double median = k % 2 ? f[k / 2] : 0.5 * (f[k / 2 - 1] + f[k / 2]);
  if (!(median >= 1.0) || f.front() != 1.0 || !std::is_sorted(f.begin(), f.end())) return;
  p.cost.fwd_s /= median;
  for (double& b : p.cost.bwd_layer_s) b /= median;
  p.jitter.factors = {f};
  p.jitter_source = fmt::format(
      "from calibration {}'s per-iteration distribution at batch {} ({} quantiles: the slowest {:.2f}x the fastest, "
      "the median {:.2f}x)",
      calibration_id, first->batch, k, f.back(), median);
}

SimProfile sim_profile_from_run(const RunConfig& cfg, const Store* store, const std::vector<LayerView>& layers) {
  SimProfile p;
  const size_t nl = layers.size();
  if (!store)
    DSGD_THROW(InputError, "pass --db with the run", "--profile-from {}: no database to read it from",
               cfg.profile_from);
  const RunWithSummary run = store->run_get(cfg.profile_from);
  const RunRecord& rec = run.run;
  const std::string measured = workload_profile_key(stored_model(rec)), wanted = workload_profile_key(cfg);
  if (measured != wanted || rec.dataset != cfg.dataset || rec.batch != cfg.batch)
    DSGD_THROW(InputError,
               "pass a run of the same workload and model, dataset and batch (dsgd-bench runs), or drop --profile-from",
               "--profile-from {}: run {} is a profile of workload '{}' on '{}' with batch {}; this run trains '{}' "
               "on '{}' with batch {}: a profile of another workload does not apply",
               cfg.profile_from, rec.id, measured, rec.dataset, rec.batch, wanted, cfg.dataset, cfg.batch);
  const Backend* measured_on = backend_find(rec.backend);
  if (measured_on && measured_on->has(cap_virtual_clock))
    DSGD_THROW(InputError, "pass a run measured on a real backend (mpi)",
               "--profile-from {}: run {} is itself simulated; its compute times are modelled, not measured",
               cfg.profile_from, rec.id);
  if (rec.status != RunStatus::run_completed || !run.summary || !(run.summary->fwd_s + run.summary->bwd_s > 0))
    DSGD_THROW(InputError, "pass a completed run with per-step timings (--timers true)",
               "--profile-from {}: run {} is '{}' and has no measured compute", cfg.profile_from, rec.id,
               run_status_text(rec.status));
  const Summary& s = *run.summary;
  p.cost.data_s = s.data_s;
  p.cost.fwd_s = s.fwd_s;
  p.cost.opt_s = s.opt_s;
  p.cost.model_pass_s = s.model_pass_s.value_or(0.0);
  double total = 0;
  for (const LayerView& l : layers) total += static_cast<double>(l.count);
  p.cost.bwd_layer_s.assign(nl, 0.0);
  for (size_t l = 0; l < nl; ++l)
    p.cost.bwd_layer_s[l] = total > 0 ? s.bwd_s * static_cast<double>(layers[l].count) / total : 0.0;
  p.source = fmt::format(
      "run {} (measured means per step: data, fwd, bwd split over layers by parameters, opt; model pass {})", rec.id,
      s.model_pass_s ? "timed in its warm-up" : "not measured: 0");
  if (cfg.compute_jitter != "off") profile_jitter_from_steps(*store, rec.id, cfg.compute_jitter == "replay", p);
  return p;
}

}  // namespace

namespace {

// The optimizer step of cfg's optimizer on workload/dataset (or another of the calibration's
// optimizer rows: `key`, e.g. kModelPassProfileKey): from calibration `first` if it has one,
// else from the newest calibration of `host` that has; empty when none (before schema v10).
std::optional<double> optimizer_profile_find(const Store& store, const std::string& host, const RunConfig& cfg,
                                             int64_t first, const std::string& key) {
  const std::string model = workload_profile_key(cfg);
  auto in = [&](int64_t id) -> std::optional<double> {
    for (const OptimizerProfileRow& r : optimizer_profiles_get(store, id))
      if (r.workload == model && r.dataset == cfg.dataset && r.optimizer == key) return r.opt_s;
    return std::nullopt;
  };
  if (const auto opt = in(first)) return opt;
  for (const CalibrationRecord& cal : store.calibrations_list(0))
    if (cal.host == host)
      if (const auto opt = in(cal.id)) return opt;
  return std::nullopt;
}

}  // namespace

SimProfile sim_profile_resolve(const RunConfig& cfg, const Store* store, const std::string& host,
                               const std::vector<LayerView>& layers) {
  if (cfg.profile_from > 0) return sim_profile_from_run(cfg, store, layers);
  SimProfile p;
  const size_t nl = layers.size();
  const std::string model = workload_profile_key(cfg);
  std::vector<int64_t> other_batches, other_threads;
  if (store) {
    for (const CalibrationRecord& cal : store->calibrations_list(0)) {
      if (cal.host != host) continue;
      const int64_t threads = compute_profile_threads(cal);
      if (threads > 0 && threads != cfg.threads) {
        other_threads.push_back(threads);
        continue;
      }
      std::vector<ProfileRow> rows;
      for (const ProfileRow& row : store->profiles_get(cal.id)) {
        if (row.workload != model || row.dataset != cfg.dataset) continue;
        if (row.batch == cfg.batch)
          rows.push_back(row);
        else
          other_batches.push_back(row.batch);
      }
      if (rows.empty()) continue;
      if (rows.size() != nl)
        DSGD_THROW(InputError, profile_hint(cfg),
                   "calibration {} profiles {} layers of '{}', the workload has {}: it was made by another version",
                   cal.id, rows.size(), model, nl);
      p.cost.bwd_layer_s.assign(nl, 0.0);
      for (const ProfileRow& row : rows) {
        p.cost.fwd_s += row.fwd_s;
        p.cost.bwd_layer_s[static_cast<size_t>(row.layer) % nl] = row.bwd_s;
      }
      const std::optional<double> opt =
          optimizer_profile_find(*store, host, cfg, cal.id, compute_profile_optimizer_key(cfg));
      const std::optional<double> pass = optimizer_profile_find(*store, host, cfg, cal.id, kModelPassProfileKey);
      p.cost.opt_s = opt.value_or(0.0);
      p.cost.model_pass_s = pass.value_or(0.0);
      p.source = fmt::format("calibration {} (per-layer fwd/bwd; opt {}; model pass {}; data not profiled: 0)", cal.id,
                             opt ? compute_profile_optimizer_key(cfg) : std::string("not profiled: 0"),
                             pass ? "profiled" : "not profiled: 0");
      for (const std::string& w : compute_profile_warnings(rows))
        p.warnings.push_back(fmt::format("calibration {}: {}", cal.id, w));
      if (threads == 0)
        p.warnings.push_back(fmt::format(
            "calibration {} does not record the threads per worker it measured with (a profile measured "
            "automatically before they were recorded ran at OpenBLAS's default, every core); --threads is {}: "
            "re-measure with `dsgd-bench calibrate --threads {}`",
            cal.id, cfg.threads, cfg.threads));
      if (cfg.compute_jitter == "profile") profile_jitter_from_calibration(rows, cal.id, p);
      return p;
    }
  }
  for (std::vector<int64_t>* v : {&other_batches, &other_threads}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  DSGD_THROW(
      InputError, profile_hint(cfg),
      "no compute profile of workload '{}' on '{}' with batch {} and {} thread{} for host '{}'{}{}", model, cfg.dataset,
      cfg.batch, cfg.threads, cfg.threads == 1 ? "" : "s", host,
      other_batches.empty() ? std::string() : fmt::format(" (calibrated batches: {})", fmt::join(other_batches, ", ")),
      other_threads.empty()
          ? std::string()
          : fmt::format(" (calibrations at other threads per worker: {})", fmt::join(other_threads, ", ")));
}

SimMemory sim_memory_estimate(const RunConfig& cfg, const Dataset& train, const Dataset& test, size_t param_count,
                              double workload_bytes, const Algorithm* algorithm) {
  // Every worker in this process, sharing one dataset (engine/memory_estimate.hpp).
  return memory_estimate(cfg, train, test, param_count, workload_bytes, algorithm, static_cast<int>(cfg.workers), 1);
}

TrainResult sim_run(const RunConfig& cfg, Store* store, const TrainerCallbacks& callbacks,
                    const SimProfileMissing& missing) {
  const Resolved r = sim_resolve(cfg, store, store, missing);
  return cfg.timing_only ? sim_run_timing(cfg, r, store, callbacks) : sim_run_numerics(cfg, r, store, callbacks);
}

TrainResult sim_run_unstored(const RunConfig& cfg, const Store& read, const TrainerCallbacks& callbacks) {
  const Resolved r = sim_resolve(cfg, &read, nullptr, SimProfileMissing{});
  return cfg.timing_only ? sim_run_timing(cfg, r, nullptr, callbacks) : sim_run_numerics(cfg, r, nullptr, callbacks);
}

MeasuredFabric sim_calibrated_fabric(const Store& store, const AllreduceFit& fit) {
  std::vector<MeasuredPoint> points;
  for (const CollectiveRow& row : store.collectives_get(fit.calibration_id))
    points.push_back({row.op, static_cast<double>(row.bytes), row.time_s, row.spread});
  return measured_fabric_build(fit.calibration_id, fit.workers, points);
}

}  // namespace dsgd
