// Delayed model averaging, shared by cocod and dasgd: local SGD whose model average is
// computed by a non-blocking all-reduce of a snapshot while local steps continue, and
// applied d steps after it started with the correction that keeps the local progress:
//   after every step t with (t+1) ≡ 0 mod H:  s_i ← x_i;  launch r ← avg_j s_j (in flight)
//   after step t + d:                         wait;  x_i ← r + (x_i − s_i)
// 0 ≤ d ≤ H (at most one average in flight; with d = H the next snapshot is taken right
// after the previous average is applied). At the last step of the run an average still in
// flight is waited for and applied.
// Arithmetic: an element with r = s keeps x (the rule gives x exactly in real numbers; this
// avoids a float32 rounding), so d = 0 gives x_i ← r bit-identically to localsgd (x = s) and
// one worker gives its serial optimizer bit-identically (r = s).
// Memory: two model copies (s and r). Bytes per step per worker (ring): 2(n−1)/n·|x|·4 / H.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace dsgd {

class DelayedAverage {
 public:
  DelayedAverage(int64_t period, int64_t delay) : period_(period), delay_(delay) {}
  void setup(TrainState& s) {
    snapshot_.assign(s.count, 0.0f);
    reduced_.assign(s.count, 0.0f);
  }
  void progress(TrainState& s) { s.comm.progress(request_); }
  void after_update(TrainState& s) {
    if (request_.active() && s.step == apply_step_) apply(s);
    if ((s.step + 1) % period_ == 0) {
      std::copy(s.params, s.params + s.count, snapshot_.begin());
      std::copy(s.params, s.params + s.count, reduced_.begin());
      s.comm.iallreduce_average(reduced_.data(), s.count, request_);
      apply_step_ = s.step + delay_;
      if (delay_ == 0) apply(s);
    } else {
      s.comm.progress(request_);
    }
    if (request_.active() && s.step + 1 == s.total_steps) apply(s);
  }
  double bytes_sent_per_step(double param_bytes, int n) const {
    return ring_allreduce_bytes_sent(param_bytes, n) / static_cast<double>(period_);
  }

 private:
  void apply(TrainState& s) {
    s.comm.wait(request_);
    const float* r = reduced_.data();
    const float* snap = snapshot_.data();
    float* x = s.params;
    for (size_t i = 0; i < s.count; ++i)
      if (r[i] != snap[i]) x[i] = r[i] + (x[i] - snap[i]);
  }

  int64_t period_, delay_;
  int64_t apply_step_ = -1;
  std::vector<float> snapshot_, reduced_;
  CollRequest request_;
};

// The algorithm that is nothing but a DelayedAverage (cocod: delay = period; dasgd: delay
// given); name is the registry name it reports.
class DelayedAveraging final : public Algorithm {
 public:
  DelayedAveraging(std::string name, int64_t period, int64_t delay) : name_(std::move(name)), avg_(period, delay) {}
  std::string name() const override { return name_; }
  void setup(TrainState& s) override { avg_.setup(s); }
  void on_layer_grad_ready(TrainState& s, size_t) override { avg_.progress(s); }
  void after_update(TrainState& s) override { avg_.after_update(s); }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return avg_.bytes_sent_per_step(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 2; }

 private:
  std::string name_;
  DelayedAverage avg_;
};

}  // namespace dsgd
