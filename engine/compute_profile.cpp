// See compute_profile.hpp.
#include "engine/compute_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "algorithms/optimizer.hpp"
#include "core/clock.hpp"
#include "core/copy_aliasing.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/run_config.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "core/vector_ops.hpp"
#include "engine/calibration.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);

namespace dsgd {
namespace {

// OpenBLAS's thread count (which the layer kernels follow) set for a scope, then restored.
class OpenblasThreads {
 public:
  explicit OpenblasThreads(int64_t n) : before_(openblas_get_num_threads()) {
    openblas_set_num_threads(static_cast<int>(n));
  }
  ~OpenblasThreads() { openblas_set_num_threads(before_); }
  OpenblasThreads(const OpenblasThreads&) = delete;
  OpenblasThreads& operator=(const OpenblasThreads&) = delete;

 private:
  int before_;
};

}  // namespace
}  // namespace dsgd

namespace dsgd {

namespace {

// The layer hook's timestamps: when each layer's gradient became final.
struct LayerStamps {
  std::vector<double> at;
  std::vector<size_t> order;  // layers in completion order
};

void layer_stamp(void* ctx, size_t layer) {
  auto* stamps = static_cast<LayerStamps*>(ctx);
  stamps->at[layer] = clock_now_s();
  stamps->order.push_back(layer);
}

// Backward per layer from one backward's hook stamps, into per_layer (one slot per layer): from
// the previous layer's completion (or backward's start t1) to this one's; work after the last
// hook (until t2) goes to the last layer hooked.
void backward_per_layer(const LayerStamps& stamps, double t1, double t2, std::vector<double>& per_layer) {
  std::fill(per_layer.begin(), per_layer.end(), 0.0);
  double previous = t1;
  for (size_t layer : stamps.order) {
    per_layer[layer] += stamps.at[layer] - previous;
    previous = stamps.at[layer];
  }
  if (!stamps.order.empty()) per_layer[stamps.order.back()] += t2 - previous;
}

// The training loop the profile measures: the model, its parameters, a fixed shuffled order of
// this rank's training samples (cycled through across batch sizes) and the hook's stamps.
struct ProfileLoop {
  Workload& w;
  const Dataset& train;
  std::vector<uint32_t>& order;
  size_t& cursor;
  std::vector<float>& params;
  std::vector<float>& grads;
  float lr;
  LayerStamps& stamps;
  const LayerHook& hook;
};

// What one batch size's timed iterations measured.
struct BatchTimes {
  std::vector<double> fwd_total, step_total;
  std::vector<std::vector<double>> bwd;  // per layer
  bool missing_hook = false;
};

// Warm-up and measurement by count and by time (a fixed timing protocol): untimed
// iterations until kComputeProfileWarmup and kComputeProfileWarmupS, then timed ones until
// `iters` and kComputeProfileMinTimeS (at most kComputeProfileMaxIters). A batch of a few
// microseconds needs thousands of iterations before its caches, TLB and branch predictors
// are in the state training keeps them in, and a handful of samples is mostly noise.
BatchTimes batch_measure(ProfileLoop& p, size_t b, size_t nl, int64_t iters) {
  BatchTimes m;
  m.bwd.resize(nl);
  const size_t rows = p.train.rows;
  const double started = clock_now_s();
  double now = started, timed_from = -1;
  std::vector<double> per_layer(nl);
  for (int64_t it = 0, timed = 0;; ++it) {
    const bool warm = it >= kComputeProfileWarmup && now - started >= kComputeProfileWarmupS;
    if (warm && timed_from < 0) timed_from = now;
    if (warm && timed >= iters && (now - timed_from >= kComputeProfileMinTimeS || timed >= kComputeProfileMaxIters))
      break;
    if (p.cursor + b > rows) p.cursor = 0;
    p.w.load_batch(p.train, p.order.data() + p.cursor, b);
    p.cursor += b;
    p.stamps.order.clear();
    const double t0 = clock_now_s();
    p.w.forward(p.params.data());
    const double t1 = clock_now_s();
    p.w.backward(p.params.data(), p.grads.data(), p.hook);
    const double t2 = clock_now_s();
    // Untimed: a plain SGD step, so the iterations follow a training trajectory (a model's cost
    // can depend on its state: the SVM's backward only touches the hinge terms still active).
    for (size_t i = 0; i < p.params.size(); ++i) p.params[i] -= p.lr * p.grads[i];
    now = clock_now_s();
    if (!warm) continue;
    ++timed;
    m.fwd_total.push_back(t1 - t0);
    m.step_total.push_back(t2 - t0);
    backward_per_layer(p.stamps, t1, t2, per_layer);
    m.missing_hook = m.missing_hook || p.stamps.order.size() != nl;
    for (size_t l = 0; l < nl; ++l) m.bwd[l].push_back(per_layer[l]);
  }
  return m;
}

}  // namespace

std::vector<double> profile_jitter_quantiles(std::vector<double> times) {
  std::vector<double> out;
  if (times.size() < 2) return out;
  std::sort(times.begin(), times.end());
  if (!(times.front() > 0)) return out;
  out.resize(kProfileJitterPoints);
  const double n = static_cast<double>(times.size());
  for (size_t k = 0; k < kProfileJitterPoints; ++k) {
    // The quantile at (k + ½)/K, interpolated between order statistics at (i + ½)/n.
    const double at = std::clamp((static_cast<double>(k) + 0.5) / kProfileJitterPoints * n - 0.5, 0.0, n - 1);
    const size_t i = std::min(static_cast<size_t>(at), times.size() - 2);
    out[k] = times[i] + (at - static_cast<double>(i)) * (times[i + 1] - times[i]);
  }
  const double first = out.front();
  for (double& v : out) v /= first;
  out.front() = 1.0;
  return out;
}

ComputeProfileSetup compute_profile_setup(const RunConfig& model, const std::vector<int64_t>& batches) {
  ComputeProfileSetup s;
  s.data = dataset_load(model.dataset, kComputeProfileSeed);
  workload_prepare_data(model, s.data);
  const int64_t largest = *std::max_element(batches.begin(), batches.end());
  if (static_cast<size_t>(largest) > s.data.train.rows) {
    DSGD_THROW(InputError, "pass smaller --batches", "--batches: {} is larger than the {} training samples of '{}'",
               largest, s.data.train.rows, model.dataset);
  }
  s.workload = workload_create(model, s.data.train);
  s.workload->reserve(static_cast<size_t>(largest));
  return s;
}

std::vector<ProfileRow> compute_profile_measure(ComputeProfileSetup& s, const RunConfig& model,
                                                const std::vector<int64_t>& batches, int64_t iters,
                                                Communicator& comm) {
  const OpenblasThreads threads(model.threads);
  const std::string key = workload_profile_key(model);
  Workload& w = *s.workload;
  const std::vector<LayerView>& layers = w.layers();
  const size_t nl = layers.size();
  std::vector<float> params(w.param_count()), grads(w.param_count());
  w.init_params(params.data(), kComputeProfileSeed);
  const float lr = static_cast<float>(optimizer_default_lr("sgd"));
  double total_params = 0;
  for (const LayerView& l : layers) total_params += static_cast<double>(l.count);

  // A fixed shuffled order of the training samples (this rank's own), cycled through.
  const size_t rows = s.data.train.rows;
  std::vector<uint32_t> order(rows);
  for (size_t i = 0; i < rows; ++i) order[i] = static_cast<uint32_t>(i);
  Rng rng(rng_derive_seed(kComputeProfileSeed, static_cast<uint64_t>(comm.rank())));
  rng.shuffle(order.data(), rows);
  size_t cursor = 0;

  LayerStamps stamps;
  stamps.at.assign(nl, 0.0);
  stamps.order.reserve(nl);
  const LayerHook hook{layer_stamp, &stamps};
  ProfileLoop loop{w, s.data.train, order, cursor, params, grads, lr, stamps, hook};

  std::vector<ProfileRow> result;
  for (int64_t batch : batches) {
    const BatchTimes m = batch_measure(loop, static_cast<size_t>(batch), nl, iters);
    if (m.missing_hook) {
      DSGD_THROW(Error, "this is a bug in the workload: backward must call the hook once per layer",
                 "workload '{}' did not report every layer's gradient in backward", key);
    }
    // Per layer: fwd share, bwd; then the batch's spread and its distribution's quantiles; the
    // slowest rank's values (untimed max-reduce: the widest spread of any rank).
    const std::vector<double> jitter = profile_jitter_quantiles(m.step_total);
    std::vector<double> values(2 * nl + 1 + jitter.size());
    const double fwd_median = stats_median(m.fwd_total);
    for (size_t l = 0; l < nl; ++l) {
      values[2 * l] = fwd_median * static_cast<double>(layers[l].count) / total_params;
      values[2 * l + 1] = stats_median(m.bwd[l]);
    }
    values[2 * nl] = stats_relative_iqr(m.step_total);
    std::copy(jitter.begin(), jitter.end(), values.begin() + static_cast<std::ptrdiff_t>(2 * nl + 1));
    comm.untimed_allreduce_max(values.data(), values.size());
    for (size_t l = 0; l < nl; ++l) {
      ProfileRow& row = result.emplace_back();
      row.workload = key;
      row.dataset = model.dataset;
      row.batch = batch;
      row.layer = static_cast<int64_t>(l);
      row.layer_name = layers[l].name;
      row.fwd_s = values[2 * l];
      row.bwd_s = values[2 * l + 1];
      row.spread = values[2 * nl];
      if (l == 0 && !jitter.empty()) {
        row.jitter.assign(values.begin() + static_cast<std::ptrdiff_t>(2 * nl + 1), values.end());
        for (double& f : row.jitter) f /= row.jitter.front() > 0 ? row.jitter.front() : 1.0;  // max-reduced
        row.jitter.front() = 1.0;
        for (size_t k = 1; k < row.jitter.size(); ++k) row.jitter[k] = std::max(row.jitter[k], row.jitter[k - 1]);
      }
    }
  }
  return result;
}

std::vector<std::string> compute_profile_warnings(const std::vector<ProfileRow>& rows) {
  struct Batch {
    int64_t batch;
    double total = 0, spread = 0;
  };
  std::vector<Batch> batches;
  for (const ProfileRow& r : rows) {
    if (batches.empty() || batches.back().batch != r.batch) batches.push_back(Batch{r.batch, 0, r.spread});
    batches.back().total += r.fwd_s + r.bwd_s;
  }
  std::sort(batches.begin(), batches.end(), [](const Batch& a, const Batch& b) { return a.batch < b.batch; });
  std::vector<std::string> warnings;
  for (const Batch& b : batches) {
    if (std::isnan(b.spread))
      warnings.push_back(
          fmt::format("batch {}: the profile's spread is unknown (measured by an older version)", b.batch));
    else if (b.spread > kProfileSpreadLimit)
      warnings.push_back(fmt::format(
          "batch {}: iterations spread {:.0f} % of their median ({:.3g} ms), above the {:.0f} % the simulator can "
          "predict from (another process competing for the cores?)",
          b.batch, 100 * b.spread, 1e3 * b.total, 100 * kProfileSpreadLimit));
  }
  for (size_t i = 0; i + 1 < batches.size(); ++i)
    for (size_t j = i + 1; j < batches.size(); ++j) {
      const Batch &small = batches[i], &large = batches[j];
      const double spreads =
          (std::isnan(small.spread) ? 0 : small.spread) + (std::isnan(large.spread) ? 0 : large.spread);
      if (large.total * (1 + std::max(0.1, spreads)) < small.total)
        warnings.push_back(fmt::format(
            "batch {} measured faster than batch {} ({:.3g} vs {:.3g} ms per step): a larger batch cannot be "
            "faster, so one of them was measured under interference",
            large.batch, small.batch, 1e3 * large.total, 1e3 * small.total));
    }
  return warnings;
}

nlohmann::json compute_profile_conditions(const Dataset& train, int ranks_on_host) {
  const DatasetPaging paging = dataset_paging(train);
  return {{"loadavg-1m", system_load_average()[0]},
          {"cores", system_info_read().cores},
          {"ranks-on-host", ranks_on_host},
          {"thp", paging.thp_mode},
          {"dataset-huge-fraction", paging.huge_fraction()},
          {"copy-aliasing", copy_aliasing().state}};  // core/copy_aliasing.hpp: "slow" = copies vary by placement
}

std::string compute_profile_optimizer_key(const RunConfig& cfg) {
  std::string name = optimizer_resolve_name(cfg);
  if (name == "sgd" && (cfg.momentum > 0 || cfg.nesterov)) return "sgd+momentum";
  return name;
}

std::vector<OptimizerProfileRow> compute_profile_measure_optimizers(ComputeProfileSetup& s, const RunConfig& model,
                                                                    int64_t iters, Communicator& comm) {
  const OpenblasThreads threads(model.threads);
  const std::string key = workload_profile_key(model);
  const size_t count = s.workload->param_count();
  std::vector<float> params(count), grads(count);
  s.workload->init_params(params.data(), kComputeProfileSeed);
  for (size_t i = 0; i < count; ++i) grads[i] = 1e-3f * static_cast<float>(i % 17);
  struct Kind {
    const char* key;
    const char* optimizer;
    double momentum;
  };
  const Kind kinds[] = {{"sgd", "sgd", 0.0}, {"sgd+momentum", "sgd", 0.9}, {"adamw", "adamw", 0.0}};
  std::vector<OptimizerProfileRow> rows;
  for (const Kind& k : kinds) {
    RunConfig cfg;
    cfg.optimizer = k.optimizer;
    cfg.momentum = k.momentum;
    const std::unique_ptr<Optimizer> opt = optimizer_create(cfg, count, 1);
    std::vector<double> t;
    for (int64_t it = 0; it < kComputeProfileWarmup + iters; ++it) {
      const double t0 = clock_now_s();
      opt->step(params.data(), grads.data(), 1e-6);
      if (it >= kComputeProfileWarmup) t.push_back(clock_now_s() - t0);
    }
    double median = stats_median(t);
    comm.untimed_allreduce_max(&median, 1);
    rows.push_back(OptimizerProfileRow{key, model.dataset, k.key, static_cast<int64_t>(count), median});
  }
  // One model pass (Summary::model_pass_s): the mean of a copy and a y ← y + a·x over the
  // parameters, timed as the optimizers are.
  VectorOps& vec = vector_ops_for(kHostDevice);
  std::vector<float> scratch(count);
  const ConstBufferView x = device_view(params.data(), count, kHostDevice);
  const BufferView y = device_view(scratch.data(), count, kHostDevice);
  std::vector<double> t;
  for (int64_t it = 0; it < kComputeProfileWarmup + iters; ++it) {
    const double pass = compute_profile_model_pass_s(vec, y, x);
    if (it >= kComputeProfileWarmup) t.push_back(pass);
  }
  double median = stats_median(t);
  comm.untimed_allreduce_max(&median, 1);
  rows.push_back(OptimizerProfileRow{key, model.dataset, kModelPassProfileKey, static_cast<int64_t>(count), median});
  return rows;
}

double compute_profile_model_pass_s(VectorOps& vec, BufferView scratch, ConstBufferView params) {
  const double start = clock_now_s();
  vec.copy(scratch, params);
  vec.axpy(scratch, 0.5f, params);
  return 0.5 * (clock_now_s() - start);
}

int64_t compute_profile_threads(const CalibrationRecord& cal) {
  const nlohmann::json config = nlohmann::json::parse(cal.config_json, nullptr, false);
  if (config.is_object() && config.contains("threads") && config["threads"].is_number_integer())
    return config["threads"].get<int64_t>();
  return 0;
}

bool compute_profile_threads_differ(const CalibrationRecord& cal, const RunConfig& model) {
  const int64_t threads = compute_profile_threads(cal);
  return threads > 0 && threads != model.threads;
}

std::vector<int64_t> compute_profile_missing(const Store& store, const std::string& host, const RunConfig& model,
                                             const std::vector<int64_t>& batches) {
  const std::string key = workload_profile_key(model);
  std::vector<int64_t> have;
  for (const CalibrationRecord& cal : store.calibrations_list(0)) {
    if (cal.host != host || compute_profile_threads_differ(cal, model)) continue;
    for (const ProfileRow& row : store.profiles_get(cal.id))
      if (row.workload == key && row.dataset == model.dataset) have.push_back(row.batch);
  }
  std::vector<int64_t> missing;
  for (int64_t b : batches)
    if (std::find(have.begin(), have.end(), b) == have.end() &&
        std::find(missing.begin(), missing.end(), b) == missing.end())
      missing.push_back(b);
  return missing;
}

std::vector<std::string> compute_profile_warnings_stored(const Store& store, const std::string& host,
                                                         const RunConfig& model, const std::vector<int64_t>& batches) {
  const std::string key = workload_profile_key(model);
  std::vector<ProfileRow> rows;
  std::vector<int64_t> found;  // batches already taken from a newer calibration
  std::vector<int64_t> used;   // the calibrations the rows come from
  for (const CalibrationRecord& cal : store.calibrations_list(0)) {
    if (cal.host != host || compute_profile_threads_differ(cal, model)) continue;
    std::vector<int64_t> here;
    for (const ProfileRow& row : store.profiles_get(cal.id)) {
      if (row.workload != key || row.dataset != model.dataset) continue;
      if (std::find(batches.begin(), batches.end(), row.batch) == batches.end()) continue;
      if (std::find(found.begin(), found.end(), row.batch) != found.end()) continue;
      rows.push_back(row);
      if (std::find(here.begin(), here.end(), row.batch) == here.end()) here.push_back(row.batch);
    }
    if (!here.empty()) used.push_back(cal.id);
    found.insert(found.end(), here.begin(), here.end());
  }
  // compute_profile_warnings groups consecutive rows of one batch.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.batch < b.batch; });
  std::vector<std::string> warnings = compute_profile_warnings(rows);
  const std::string from = fmt::format("calibration{} {}", used.size() == 1 ? "" : "s", fmt::join(used, ", "));
  for (std::string& w : warnings) w = fmt::format("{} {}: {}", key, from, w);
  return warnings;
}

int64_t compute_profile_store_new(Store& store, const RunConfig& model, const std::vector<int64_t>& batches,
                                  int64_t iters, const std::string& by) {
  std::unique_ptr<Communicator> self = communicator_create_self();
  ComputeProfileSetup setup = compute_profile_setup(model, batches);
  const std::vector<ProfileRow> rows = compute_profile_measure(setup, model, batches, iters, *self);
  const std::vector<OptimizerProfileRow> optimizers = compute_profile_measure_optimizers(setup, model, iters, *self);
  const nlohmann::json config = {{"workers", 1},
                                 {"threads", model.threads},
                                 {"profile-only", true},
                                 {"by", by},
                                 {"workload", workload_profile_key(model)},
                                 {"dataset", model.dataset},
                                 {"batches", batches},
                                 {"profile_iters", iters},
                                 {"profile_warmup", kComputeProfileWarmup},
                                 {"profile_seed", kComputeProfileSeed},
                                 {"conditions", compute_profile_conditions(setup.data.train, 1)}};
  const CalibrationRecord record = calibration_record_make(*self, 1, config);
  const int64_t id = store.calibration_begin(record);
  store.profiles_append(id, rows);
  optimizer_profiles_append(store, id, optimizers);
  return id;
}

ComputeProfileFill compute_profile_fill_missing(Store& store, const RunConfig& model,
                                                const std::vector<int64_t>& batches, const std::string& by,
                                                const std::function<void(const std::vector<int64_t>&)>& before,
                                                int64_t iters) {
  ComputeProfileFill fill;
  fill.batches = compute_profile_missing(store, system_info_read().host, model, batches);
  if (fill.batches.empty()) return fill;
  if (before) before(fill.batches);
  fill.iters = iters;
  const double t0 = clock_now_s();
  fill.calibration_id = compute_profile_store_new(store, model, fill.batches, iters, by);
  fill.wall_s = clock_now_s() - t0;
  return fill;
}

}  // namespace dsgd
