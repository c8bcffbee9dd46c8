// dpsgd: decentralised parallel SGD (D-PSGD; Lian et al., "Can Decentralized Algorithms
// Outperform Centralized Algorithms?", NeurIPS 2017), gossip over the --topology's mixing
// matrix W (cluster/topology.hpp), neighbour exchange by point-to-point messages.
//
//   --dpsgd-delay 0 (default, adapt-then-combine):
//       x_i ← Σ_j W_ij (x_j − η·opt(g_j(x_j)))
//     local step first, then a blocking exchange of the updated model with the neighbours.
//     On `complete` (W = 11ᵀ/n) this is ssgd up to float rounding (averaging models instead
//     of gradients: tolerance 1e-5, as localsgd H = 1).
//   --dpsgd-delay 1 (Lian et al.'s Algorithm 1 as written):
//       x_i ← Σ_j W_ij x_j − η·opt(g_i(x_i))
//     the exchange of x_t is launched non-blocking right after the previous update and
//     completes while g_i(x_t) is computed (overlap recorded); the mix is applied after
//     backward, then the local step (its weight-decay term sees the mixed model).
// Gossip rounds every H steps (the oldsgd variant, algorithms/oldsgd.cpp; dpsgd itself is H = 1):
//   blocking: the adapt-then-combine mix above, after every H-th step only;
//   overlapped (OLDSGD, overlapping local decentralized SGD): after every H-th step,
//       wait for the exchange launched a round before, x_i ← Σ_j W_ij s_j + (x_i − s_i) (the
//       snapshots' mix plus the local progress since the snapshot; an element whose mix equals
//       s_i keeps x_i, as delayed_average.hpp), then s_i ← x_i and launch the exchange of s_i,
//       which runs during the next H local steps; at the last step the exchange in flight is
//       waited for and applied. At H = 1 the overlapped form is Lian et al.'s delay-1 rule above
//       (the same in real arithmetic, Σ_j W_ij s_j − η·opt(g_i(s_i)), but mixed before the local
//       step: that code path is kept for H = 1).
// random-perm (time-varying): the step's matching from topology_partner_at_step, W = 1/2.
// Bytes sent per step by rank i: d_i · 4|x| / H (d_i its degree); bytes_sent_per_step reports the
// mean over ranks. Limits: a rank's neighbours must have room for d_i model copies (recv
// buffer d_max · |x| floats); topologies without neighbours (disconnected, gap 0) are refused.
#include "algorithms/dpsgd.hpp"

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"

namespace dsgd {

void dpsgd_check_topology(const Topology& t) {
  if (t.workers <= 1) return;
  for (int r = 0; r < t.workers; ++r)
    if (!t.time_varying && t.neighbors[static_cast<size_t>(r)].empty())
      DSGD_THROW(InputError, "use a connected topology: complete, ring, torus:RxC, exp, hier:GxW, random-perm",
                 "--topology {}: rank {} has no neighbours, dpsgd cannot mix", t.spec, r);
  if (!(t.spectral_gap > 0))
    DSGD_THROW(InputError, "use a connected topology", "--topology {}: spectral gap 0 (disconnected), dpsgd cannot mix",
               t.spec);
}

namespace {

// Mean degree of the topology (the average number of model copies a rank sends per step).
double topology_mean_degree(const Topology& t) {
  if (t.workers <= 1) return 0.0;
  if (t.time_varying) return t.workers % 2 == 0 ? 1.0 : double(t.workers - 1) / t.workers;
  double sum = 0;
  for (const auto& nb : t.neighbors) sum += double(nb.size());
  return sum / t.workers;
}

class Dpsgd final : public Algorithm {
 public:
  Dpsgd(std::string name, std::string topology, uint64_t seed, bool delay, int64_t period)
      : name_(std::move(name)), spec_(std::move(topology)), seed_(seed), delay_(delay), period_(period) {}
  std::string name() const override { return name_; }

  void setup(TrainState& s) override {
    const int n = s.comm.size();
    rank_ = s.comm.rank();
    topo_ = topology_make(spec_, n, seed_);
    dpsgd_check_topology(topo_);
    size_t max_degree = 1;
    for (const auto& nb : topo_.neighbors) max_degree = std::max(max_degree, nb.size());
    send_.assign(s.device, s.count);
    recv_.assign(s.device, max_degree * s.count);
    peers_.reserve(max_degree);
    weights_.reserve(max_degree);
    if (rounds()) {
      mixed_.assign(s.device, s.count);
      return;
    }
    if (delay_) launch(s, 0);
  }

  void on_layer_grad_ready(TrainState& s, size_t) override {
    if (rounds()) s.comm.progress(request_);
  }

  void reduce_gradients(TrainState& s) override {
    if (!delay_ || rounds()) return;
    // The exchange of x_t was launched after the previous update (or in setup); an evaluation
    // between steps is not compute, so the overlap counts from this step's start.
    request_.launch = std::max(request_.launch, s.step_start);
    s.comm.wait(request_, s.comm.now());
    mix(s, s.param_view(), send_.view());
    s.comm.model_passes_done(1 + peers_.size());
  }

  void after_update(TrainState& s) override {
    if (rounds()) {
      overlapped_round(s);
      return;
    }
    if (delay_) {
      if (s.step + 1 < s.total_steps) launch(s, s.step + 1);
      return;
    }
    if ((s.step + 1) % period_ != 0) return;
    select_peers(s.comm.size(), s.step);
    s.vec().copy(send_.view(), s.param_view());
    s.comm.model_passes_done(1);
    s.comm.neighbor_exchange(send_.view(), peers_.data(), peers_.size(), recv_.slice(0, peers_.size() * s.count));
    mix(s, s.param_view(), send_.view());
    s.comm.model_passes_done(1 + peers_.size());
  }

  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return topology_mean_degree(topology_make(spec_, n, seed_)) * param_bytes / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return 1; }
  // Parameters, gradient, velocity, the send copy and d_max received models.
  double model_state_bytes(size_t count, int n) const override {
    const Topology t = topology_make(spec_, n, seed_);
    size_t max_degree = 1;
    for (const auto& nb : t.neighbors) max_degree = std::max(max_degree, nb.size());
    return sizeof(float) * double(count) * double(4 + max_degree + (rounds() ? 1 : 0));
  }

 private:
  // OLDSGD: --dpsgd-delay 1 with --period H > 1 (gossip rounds overlapped with local steps).
  bool rounds() const { return delay_ && period_ > 1; }

  // After every step of an overlapped run: polls; after every H-th, applies the round in
  // flight (x ← mix(s) + (x − s)) and launches the next; at the last step applies only.
  void overlapped_round(TrainState& s) {
    const bool last = s.step + 1 == s.total_steps;
    const bool sync = (s.step + 1) % period_ == 0;
    if (!sync && !last) {
      s.comm.progress(request_);
      return;
    }
    if (request_.active()) {
      s.comm.wait(request_, s.comm.now());
      mix(s, mixed_.view(), send_.view());
      s.vec().rebase(s.param_view(), mixed_.view(), send_.view(), true);  // x ← m + (x − s) where m ≠ s
      s.comm.model_passes_done(2 + peers_.size());
    }
    if (sync && !last) launch(s, s.step);
  }

  // peers_ and weights_ for the exchange whose result is mixed at `step`.
  void select_peers(int n, int64_t step) {
    peers_.clear();
    weights_.clear();
    if (topo_.time_varying) {
      topology_partner_at_step(n, step, seed_, partner_, scratch_);
      const int p = partner_[static_cast<size_t>(rank_)];
      self_weight_ = p == rank_ ? 1.0f : 0.5f;
      if (p != rank_) {
        peers_.push_back(p);
        weights_.push_back(0.5f);
      }
      return;
    }
    const size_t r = static_cast<size_t>(rank_);
    self_weight_ = static_cast<float>(topo_.self_weight[r]);
    for (size_t k = 0; k < topo_.neighbors[r].size(); ++k) {
      peers_.push_back(topo_.neighbors[r][k]);
      weights_.push_back(static_cast<float>(topo_.neighbor_weights[r][k]));
    }
  }

  void launch(TrainState& s, int64_t step) {
    select_peers(s.comm.size(), step);
    s.vec().copy(send_.view(), s.param_view());
    s.comm.model_passes_done(1);
    s.comm.ineighbor_exchange(send_.view(), peers_.data(), peers_.size(), recv_.slice(0, peers_.size() * s.count),
                              request_);
  }

  // out ← W_ii·self + Σ_k W_i,peer_k · recv_k (peers in ascending order).
  // out ← w_ii·self + Σ_k w_ik·recv_k.
  void mix(const TrainState& s, BufferView out, ConstBufferView self) const {
    VectorOps& vec = s.vec();
    vec.scale_copy(out, self_weight_, self);
    for (size_t k = 0; k < peers_.size(); ++k) vec.axpy(out, weights_[k], recv_.slice(k * out.count, out.count));
  }

  std::string name_;
  std::string spec_;
  uint64_t seed_;
  bool delay_;
  int64_t period_;
  int rank_ = 0;
  Topology topo_;
  DeviceBuffer send_, recv_, mixed_;  // mixed_: OLDSGD's mix of the snapshots
  std::vector<int> peers_, partner_, scratch_;
  std::vector<float> weights_;
  float self_weight_ = 1.0f;
  CollRequest request_;
};

}  // namespace

std::unique_ptr<Algorithm> dpsgd_create(const RunConfig& cfg, const std::string& name, bool overlap, int64_t period) {
  return std::make_unique<Dpsgd>(name, cfg.topology, cfg.seed, overlap, period);
}

std::unique_ptr<Algorithm> algorithm_create_dpsgd(const RunConfig& cfg) {
  return dpsgd_create(cfg, "dpsgd", cfg.dpsgd_delay == 1, 1);
}

namespace {

void dpsgd_validate(const RunConfig& cfg) {
  if (cfg.dpsgd_delay != 0 && cfg.dpsgd_delay != 1)
    config_fail("dpsgd-delay", fmt::format("must be 0 or 1 (got {})", cfg.dpsgd_delay), "pass --dpsgd-delay 0 or 1");
}

}  // namespace

const Variant& variant_dpsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "dpsgd";
    v.description = "D-PSGD: gossip averaging with the topology's neighbours (mixing matrix W) every step";
    v.knobs = "--topology, --dpsgd-delay 0|1";
    v.flags = {{"dpsgd-delay"}};
    v.gossip_every_step = true;
    v.reads_topology = true;
    v.model_passes = true;
    v.no_compress = "it exchanges models point-to-point with its neighbours (gossip), not by all-reduce";
    v.validate = dpsgd_validate;
    v.create = algorithm_create_dpsgd;
    v.needs = [](const RunConfig&) -> uint32_t { return cap_point_to_point; };
    v.timing = timing_step_gossip;
    v.timing_applies = [](const RunConfig& cfg) { return cfg.dpsgd_delay == 0; };
    v.timing_text = "dpsgd (--dpsgd-delay 0, static topology)";
    v.timing_needs_neighbors = true;
    return v;
  }();
  return v;
}

}  // namespace dsgd
