// dreamddp: DreamDDP (Tang et al. 2025, "DreamDDP: Accelerating Data Parallel Distributed
// LLM Training with Layer-wise Scheduled Partial Synchronization"): partial local SGD. The
// layers are split into H slots S_0..S_{H−1} (algorithms/dreamddp_schedule.hpp); at step t
//   every layer l:        x_i,l ← x_i,l − η·opt(g_i,l)             (local update)
//   l ∈ S_(t mod H) ∪ E_(t mod H):  x_i,l ← avg_j x_j,l            (after the local update)
// so every layer is averaged once per H steps by its slot (E: extra averages that fill idle
// link time; --dreamddp-fill false: none, the pure schedule). With H = 1 every layer is averaged every step: avg_j(x −
// η·g_j) = x − η·avg g_j, ssgd up to float32 rounding. Overlap: the moment a synchronised layer's gradient is final
// (backward hook), its local update is computed into a scratch copy (the workload may still read the layer's weights
// later in backward: ResNet computes dX with W after dW) and a non-blocking all-reduce of
// that copy is launched; it runs while earlier layers' backward and the other layers'
// updates compute, and is waited for after the optimizer step, when the average is copied
// into the model. The optimizer is owned here, one per layer (elementwise rules: identical
// to one optimizer over the whole model).
// Bytes sent per step per worker (ring): (1/H)·Σ_h Σ_{l ∈ S_h ∪ E_h} 2(n−1)/n·4·|x_l|
// (4·|x|·2(n−1)/n / H without extra syncs).
// --compress KIND (Qsparse-local-SGD's rule, Basu et al. 2019, per layer): each layer has its
// own compressor (own error feedback; seed + layer index) and its last average x̂_l (identical
// on every worker, x_0 before the first). A synchronised layer's hook computes the local
// update x'_l into the scratch copy, then starts D_l ← C_avg(x'_l − x̂_l) (the compressor's
// non-blocking form) in place of the all-reduce; after the optimizer step every launched
// compressor's next phase is launched (advance: PowerSGD's Q), then each is finished, both
// in launch order (the same on every rank), and x_l ← x̂_l + D_l, x̂_l ← x_l. At identity
// settings (topk:1, qsgd:bits=32) this is uncompressed dreamddp to float rounding
// (x̂ + avg(x' − x̂) vs avg(x')). The schedule is searched with the compressed per-layer
// costs (GradientCompressor::modelled_time); bytes per step: as above with each layer's
// all-reduce replaced by its compressor's bytes per call.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/dreamddp_schedule.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

constexpr int64_t kScheduleNodes = 2000000;  // the schedule search's node budget

// Each layer's modelled all-reduce time on `network` (0 without one or with one worker): the
// comm costs the uncompressed schedule is searched with.
std::vector<double> layer_allreduce_s(const std::optional<NetworkModel>& network, CollAlgo algo,
                                      const std::vector<size_t>& counts, int n) {
  std::vector<double> out(counts.size(), 0.0);
  if (!network || n <= 1) return out;
  for (size_t l = 0; l < counts.size(); ++l)
    out[l] = network_collective_time(*network, CollKind::coll_allreduce, algo, double(counts[l]) * sizeof(float), n);
  return out;
}

// [slot · layers + layer]: 1 when the layer is averaged at that slot (S_h ∪ E_h).
std::vector<uint8_t> synced_table(const DreamDdpSchedule& schedule, size_t nl) {
  std::vector<uint8_t> synced(static_cast<size_t>(schedule.period) * nl, 0);
  for (int64_t h = 0; h < schedule.period; ++h) {
    for (size_t l : schedule.slots[h]) synced[h * nl + l] = 1;
    for (size_t l : schedule.extra[h]) synced[h * nl + l] = 1;
  }
  return synced;
}

class DreamDdp final : public Algorithm {
 public:
  explicit DreamDdp(const RunConfig& cfg) : cfg_(cfg), period_(cfg.period) {}
  std::string name() const override { return "dreamddp"; }
  bool wants_layer_costs() const override { return true; }
  bool owns_optimizer() const override { return true; }

  void setup(TrainState& s) override {
    const int n = s.comm.size();
    const auto& layers = s.workload.layers();
    const size_t nl = layers.size();
    size_t covered = 0;
    for (const LayerView& v : layers) {
      if (v.offset + v.count > s.count)
        DSGD_THROW(Error, "this is a bug in the workload's layer views", "dreamddp: layer '{}' lies outside the model",
                   v.name);
      covered += v.count;
    }
    if (covered != s.count)
      DSGD_THROW(Error, "dreamddp needs layers that partition the parameters",
                 "dreamddp: the layers cover {} of {} parameters", covered, s.count);
    for (const LayerView& v : layers) optimizers_.push_back(optimizer_create(cfg_, v.count, n, s.device));
    lr_schedule_ = lr_schedule_from_config(cfg_, s.optimizer.base_lr(), s.total_steps);

    // Costs: the trainer's (calibrated or estimated); without them (a caller outside the
    // trainer) compute split by parameters and a free network.
    LayerCosts fallback;
    const LayerCosts* costs = s.layer_costs;
    if (!costs || costs->bwd_s.size() != nl) {
      for (const LayerView& v : layers) fallback.bwd_s.push_back(static_cast<double>(v.count) * 1e-9);
      fallback.compute_source = "none given: parameter counts at 1 ns each";
      fallback.network_source = "none given: free";
      costs = &fallback;
    }
    costs_ = *costs;
    if (!cfg_.compress.empty()) {
      for (size_t l = 0; l < nl; ++l) {
        compressors_.push_back(compressor_create(cfg_.compress));
        compressors_.back()->setup(s.comm, {LayerView{layers[l].name, 0, layers[l].count}}, layers[l].count,
                                   cfg_.seed + l);
      }
      anchor_.assign_copy(s.param_view());
    }
    std::vector<size_t> counts;
    counts.reserve(layers.size());
    for (const LayerView& v : layers) counts.push_back(v.count);
    comm_s_ = layer_allreduce_s(costs_.network, costs_.algo, counts, n);
    if (!compressors_.empty() && costs_.network && n > 1)
      for (size_t l = 0; l < nl; ++l)
        comm_s_[l] = compressors_[l]->modelled_time(*costs_.network, costs_.algo, layers[l].count, n);
    schedule_ = dreamddp_schedule_search(costs_.bwd_s, comm_s_, period_, kScheduleNodes, cfg_.dreamddp_fill);
    synced_ = synced_table(schedule_, nl);
    max_collectives_ = 1;
    double bytes = 0;
    for (int64_t h = 0; h < period_; ++h) {
      int collectives = 0;
      for (size_t l = 0; l < nl; ++l) {
        if (!synced_[h * nl + l]) continue;
        if (compressors_.empty()) {
          bytes += ring_allreduce_bytes_sent(double(layers[l].count) * sizeof(float), n);
          collectives += 1;
        } else {
          bytes += compressors_[l]->bytes_sent_per_call(layers[l].count, n);
          collectives += compressors_[l]->collectives_per_call();
        }
      }
      max_collectives_ = std::max(max_collectives_, collectives);
    }
    bytes_per_step_ = bytes / static_cast<double>(period_);
    full_model_comm_s_ = costs_.network && n > 1
                             ? network_collective_time(*costs_.network, CollKind::coll_allreduce, costs_.algo,
                                                       double(s.count) * sizeof(float), n)
                             : 0.0;

    scratch_.assign(s.device, s.count);
    requests_.assign(nl, CollRequest{});
    launched_.assign(nl, 0);
    updated_.assign(nl, 0);
    launch_order_.assign(nl, 0);
    layers_ = layers;
    details_ = details(layers).dump();
    if (cfg_.schedule && s.comm.rank() == 0) print(layers);
  }

  void on_layer_grad_ready(TrainState& s, size_t layer) override {
    const size_t nl = layers_.size();
    const size_t h = static_cast<size_t>(s.step % period_);
    if (layer < nl && synced_[h * nl + layer]) {
      const LayerView& v = layers_[layer];
      const BufferView x = scratch_.slice(v.offset, v.count);
      VectorOps& vec = s.vec();
      vec.copy(x, s.param_view().slice(v.offset, v.count));
      optimizers_[layer]->step(x.f32(), s.grads + v.offset, lr_schedule_.lr_at(s.step));
      if (compressors_.empty()) {
        s.comm.iallreduce_average(x, requests_[layer]);
      } else {
        vec.sub(x, x, anchor_.slice(v.offset, v.count));
        compressors_[layer]->start(s.comm, x.host_f32("dreamddp --compress"), v.count, s.step);
      }
      updated_[layer] = 1;
      launched_[layer] = 1;
      launch_order_[n_launched_++] = layer;
    }
    progress(s);
  }

  void reduce_gradients(TrainState& s) override { progress(s); }

  void optimizer_step(TrainState& s) override {
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (updated_[l]) continue;
      const LayerView& v = layers_[l];
      optimizers_[l]->step(s.params + v.offset, s.grads + v.offset, s.lr);
    }
  }

  void after_update(TrainState& s) override {
    // In launch order, so that a request's overlap ends where computing stopped.
    const double compute_end = s.comm.now();
    if (!compressors_.empty())
      for (size_t i = 0; i < n_launched_; ++i) compressors_[launch_order_[i]]->advance(s.comm);
    for (size_t i = 0; i < n_launched_; ++i) {
      const size_t l = launch_order_[i];
      const LayerView& v = layers_[l];
      const BufferView x = s.param_view().slice(v.offset, v.count);
      VectorOps& vec = s.vec();
      if (compressors_.empty()) {
        s.comm.wait(requests_[l], compute_end);
        vec.copy(x, scratch_.slice(v.offset, v.count));
      } else {
        compressors_[l]->finish(s.comm, compute_end);
        const BufferView a = anchor_.slice(v.offset, v.count);
        vec.add(x, a, scratch_.slice(v.offset, v.count));  // x = x̂ + D
        vec.copy(a, x);
      }
      launched_[l] = 0;
    }
    n_launched_ = 0;
    std::fill(updated_.begin(), updated_.end(), 0);
  }

  bool replicas_identical() const override { return period_ == 1; }
  double model_state_bytes(size_t count, int n) const override {
    // params, grads, optimizer state (SGD: velocity; AdamW: m and v), the scratch copy
    // (--compress: + the last averages x̂; the compressors' buffers are not counted).
    const double per_param =
        (optimizer_resolve_name(cfg_) == "adamw" ? 5.0 : 4.0) + (cfg_.compress.empty() ? 0.0 : 1.0);
    return per_param * sizeof(float) * double(count);
  }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    if (bytes_per_step_ > 0) return bytes_per_step_;
    return ring_allreduce_bytes_sent(param_bytes, n) / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return max_collectives_; }
  std::string details_json() const override { return details_; }

 private:
  void progress(TrainState& s) {
    for (size_t i = 0; i < n_launched_; ++i) {
      if (compressors_.empty()) {
        s.comm.progress(requests_[launch_order_[i]]);
      } else {
        compressors_[launch_order_[i]]->progress(s.comm);
      }
    }
  }

  std::vector<std::string> names(const std::vector<size_t>& ls, const std::vector<LayerView>& layers) const {
    std::vector<std::string> out;
    out.reserve(ls.size());
    for (size_t l : ls) out.push_back(layers[l].name.empty() ? fmt::format("#{}", l) : layers[l].name);
    return out;
  }

  nlohmann::json details(const std::vector<LayerView>& layers) const {
    nlohmann::json slots = nlohmann::json::array();
    for (int64_t h = 0; h < period_; ++h) {
      slots.push_back({{"slot", h},
                       {"layers", schedule_.slots[h]},
                       {"layer-names", names(schedule_.slots[h], layers)},
                       {"extra", schedule_.extra[h]},
                       {"comm-s", schedule_.comm_s[h]},
                       {"hidden-s", schedule_.comm_s[h] - schedule_.exposed_s[h]},
                       {"exposed-s", schedule_.exposed_s[h]},
                       {"predicted-step-s", costs_.fwd_s + schedule_.backward_s + schedule_.exposed_s[h]}});
    }
    return {{"schedule", slots},
            {"period", period_},
            {"compress", cfg_.compress},
            {"search", schedule_.optimal ? "optimal" : "node budget reached: best found"},
            {"fill", cfg_.dreamddp_fill},
            {"search-nodes", schedule_.nodes},
            {"compute-source", costs_.compute_source},
            {"network-source", costs_.network_source},
            {"layer-bwd-s", costs_.bwd_s},
            {"layer-comm-s", comm_s_},
            {"backward-s", schedule_.backward_s},
            {"exposed-primary-s", schedule_.exposed_primary_s},
            {"full-model-allreduce-s", full_model_comm_s_}};
  }

  void print(const std::vector<LayerView>& layers) const {
    double exposed = 0, comm = 0;
    for (int64_t h = 0; h < period_; ++h) {
      exposed += schedule_.exposed_s[h];
      comm += schedule_.comm_s[h];
    }
    fmt::print("# dreamddp schedule: H = {}, {} layers\n", period_, layers.size());
    fmt::print("#   compute: {}\n#   network: {}\n", costs_.compute_source, costs_.network_source);
    fmt::print("#   search: {} ({} nodes); every layer is in exactly one slot, extra = idle link time filled\n",
               schedule_.optimal ? "optimal" : "node budget reached, best found", schedule_.nodes);
    fmt::print("# {:>4}  {:>8} {:>9} {:>9} {:>9}  {}\n", "slot", "comm ms", "hidden ms", "exposed", "step ms",
               "layers (backward order) [+ extra]");
    for (int64_t h = 0; h < period_; ++h) {
      const std::string extra = schedule_.extra[h].empty()
                                    ? std::string()
                                    : fmt::format(" [+ {}]", fmt::join(names(schedule_.extra[h], layers), " "));
      fmt::print("  {:>4}  {:>8.3f} {:>9.3f} {:>9.3f} {:>9.3f}  {}{}\n", h, schedule_.comm_s[h] * 1e3,
                 (schedule_.comm_s[h] - schedule_.exposed_s[h]) * 1e3, schedule_.exposed_s[h] * 1e3,
                 (costs_.fwd_s + schedule_.backward_s + schedule_.exposed_s[h]) * 1e3,
                 schedule_.slots[h].empty() ? std::string("-")
                                            : fmt::format("{}", fmt::join(names(schedule_.slots[h], layers), " ")),
                 extra);
    }
    if (!cfg_.compress.empty())
      fmt::print("#   per-layer communication: --compress {} (each layer's compressed collectives)\n", cfg_.compress);
    fmt::print(
        "# per period: {:.3f} ms of all-reduce, {:.3f} ms hidden behind backward, {:.3f} ms exposed "
        "(localsgd at this H: one {:.3f} ms uncompressed model all-reduce, none hidden)\n",
        comm * 1e3, (comm - exposed) * 1e3, exposed * 1e3, full_model_comm_s_ * 1e3);
    std::fflush(stdout);
  }

  RunConfig cfg_;
  int64_t period_;
  std::vector<std::unique_ptr<Optimizer>> optimizers_;  // one per layer
  LrSchedule lr_schedule_;
  LayerCosts costs_;
  std::vector<double> comm_s_;
  DreamDdpSchedule schedule_;
  std::vector<uint8_t> synced_;  // [slot · layers + layer]: averaged at that slot
  std::vector<LayerView> layers_;
  DeviceBuffer scratch_;  // locally updated copies of the layers being averaged (--compress: x' − x̂)
  std::vector<std::unique_ptr<GradientCompressor>> compressors_;  // --compress: one per layer
  DeviceBuffer anchor_;                                           // --compress: x̂, each layer's last average
  std::vector<CollRequest> requests_;
  std::vector<uint8_t> launched_, updated_;
  std::vector<size_t> launch_order_;
  size_t n_launched_ = 0;
  int max_collectives_ = 1;
  double bytes_per_step_ = 0;
  double full_model_comm_s_ = 0;
  std::string details_;
};

// Timing-only (--backend sim --timing-only; with --bandwidth, or one worker, so that the link
// the trainer's layer costs name, engine/layer_costs.hpp, is the simulated one): the schedule
// searched as setup does, from the plan's per-layer backward costs (the same profile × the
// compute scale) and each layer's all-reduce time on that link; then at step t the layers of
// S_(t mod H) ∪ E_(t mod H) all-reduced from their hooks and waited for after the update, in
// launch order (timing_step_layers). opt as the trainer charges it: once, after
// optimizer_step (the hooks' updates are part of it).
void dreamddp_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                     SimStepTiming* rows) {
  const size_t nl = plan.layer_counts.size();
  if (state.synced.empty()) {
    const DreamDdpSchedule schedule = dreamddp_schedule_search(
        plan.cost.bwd_layer_s, layer_allreduce_s(plan.network, plan.net_algo, plan.layer_counts, plan.workers),
        plan.period, kScheduleNodes, plan.fill);
    state.synced = synced_table(schedule, nl);
  }
  const size_t h = static_cast<size_t>(step % plan.period);
  std::vector<uint8_t> launch(nl);
  for (size_t l = 0; l < nl; ++l) launch[l] = state.synced[h * nl + l] != 0;
  timing_step_layers(plan, state, step, clock, rows, launch);
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_dreamddp(const RunConfig& cfg) {
  return std::make_unique<DreamDdp>(cfg);
}

const Variant& variant_dreamddp() {
  static const Variant v = [] {
    Variant v;
    v.name = "dreamddp";
    v.description =
        "DreamDDP: partial local SGD, each layer averaged once per H steps at its scheduled slot, "
        "overlapped with backward";
    v.knobs = "--period H, --schedule, --dreamddp-fill";
    v.flags = {{"schedule"}, {"dreamddp-fill"}};
    v.takes_period = true;
    v.create = algorithm_create_dreamddp;
    v.timing = dreamddp_timing;
    v.timing_applies = [](const RunConfig& cfg) { return cfg.workers == 1 || !cfg.bandwidth.empty(); };
    v.timing_text = "dreamddp (with --bandwidth)";
    v.timing_plan = [](const RunConfig& cfg, SimTimingPlan& plan) { plan.fill = cfg.dreamddp_fill; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
