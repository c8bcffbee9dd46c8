// ssgd: synchronous data-parallel SGD.
//   x ← x − η·opt(avg_i g_i)   every step.
// Blocking (default): one all-reduce of the whole gradient after backward.
// --overlap true (wait-free backprop): each layer's gradient all-reduce is launched
// non-blocking from the backward hook the moment that layer's gradient is final, is
// progressed at later hooks while earlier layers still compute, and is waited for before
// the optimizer step; the time in flight is recorded as overlap_s. Same result either way.
// Bytes sent per step per worker (ring): 2(n−1)/n · |x|·4.
// Limits: one request per layer (no bucketing by size yet: issue "SGD variants").
#include "algorithms/algorithm.hpp"
#include "core/clock.hpp"

namespace dsgd {

namespace {

class Ssgd final : public Algorithm {
 public:
  explicit Ssgd(bool overlap) : overlap_(overlap) {}
  std::string name() const override { return "ssgd"; }
  void setup(TrainState& s) override {
    if (overlap_) {
      requests_.assign(s.workload.layers().size(), CollRequest{});
      launch_order_.assign(requests_.size(), 0);
    }
  }
  void on_layer_grad_ready(TrainState& s, size_t layer) override {
    if (!overlap_) return;
    const LayerView& view = s.workload.layers()[layer];
    s.comm.iallreduce_average(s.grads + view.offset, view.count, requests_[layer]);
    launch_order_[launched_++] = layer;
    for (CollRequest& r : requests_) s.comm.progress(r);
  }
  void reduce_gradients(TrainState& s) override {
    if (!overlap_) {
      s.comm.allreduce_average(s.grads, s.count);
      return;
    }
    // In launch order: a request's wait call then marks the end of its time in flight
    // during compute, not time spent blocked on another request.
    const double compute_end = s.comm.now();
    for (size_t i = 0; i < launched_; ++i) s.comm.wait(requests_[launch_order_[i]], compute_end);
    launched_ = 0;
  }
  bool replicas_identical() const override { return true; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n);
  }
  int max_collectives_per_step() const override {
    return overlap_ ? static_cast<int>(requests_.size()) : 1;
  }

 private:
  bool overlap_;
  std::vector<CollRequest> requests_;  // one per layer
  std::vector<size_t> launch_order_;   // layers in the order their requests were launched
  size_t launched_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_ssgd(const RunConfig& cfg) { return std::make_unique<Ssgd>(cfg.overlap); }

}  // namespace dsgd
