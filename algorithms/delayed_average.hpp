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
//
// --compress KIND (Qsparse-local-SGD, Basu et al. 2019, on the delayed average): what is
// averaged is the difference of the snapshot to the last applied average x̂ (identical on
// every worker; x̂ = x_0 before the first), compressed with the compressor's error feedback
// (per worker) and aggregated in the background by its non-blocking form:
//   at the snapshot:   s_i ← x_i;  start D ← C_avg(s_i − x̂)
//   d steps later:     finish;  r = x̂ + D;  x_i ← r + (x_i − s_i);  x̂ ← r
// A multi-phase compressor (PowerSGD: P, then Q all-reduce) launches its next phase at the
// first layer hook of step t + 1 + ⌊(d−1)/2⌋ (or that step's after_update when the
// workload has no layer hooks): a point of the program that is the same on every rank, as
// MPI and the sim require for the order of collectives. At identity settings r = x̂ +
// avg(s_i − x̂) equals avg(s_i) to float rounding; d = 0 is localsgd --compress
// bit-identically. Bytes per step: the compressor's bytes per call / H. Memory: + x̂ and
// the compressor's buffers.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/background_poll.hpp"
#include "algorithms/compress/compressor.hpp"

namespace dsgd {

class DelayedAverage {
 public:
  DelayedAverage(int64_t period, int64_t delay, const std::string& compress = "", uint64_t seed = 0)
      : period_(period), delay_(delay), seed_(seed) {
    if (!compress.empty()) compressor_ = compressor_create(compress);
  }
  void setup(TrainState& s) {
    if (keep_) keep_->assign_copy(s.param_view());  // x_0 until the first average
    snapshot_.assign(s.device, s.count);
    reduced_.assign(s.device, s.count);
    if (compressor_) {
      compressor_->setup(s.comm, s.workload.layers(), s.count, seed_);
      base_.assign_copy(s.param_view());
    }
  }
  // From the layer hooks: polls, and launches a compressor's next phase when it is due.
  void progress(TrainState& s) { background_average_poll(s, compressor_.get(), request_, advance_step_); }

  void after_update(TrainState& s) {
    if (in_flight() && s.step == advance_step_) progress(s);  // no layer hook this step
    if (in_flight() && s.step == apply_step_) apply(s);
    if ((s.step + 1) % period_ == 0) {
      VectorOps& vec = s.vec();
      vec.copy(snapshot_.view(), s.param_view());
      if (compressor_) {
        vec.sub(reduced_.view(), s.param_view(), base_.view());
        compressor_->start(s.comm, reduced_.view().host_f32("--compress"), s.count, s.step);
        advance_step_ = s.step + 1 + std::max<int64_t>(0, (delay_ - 1) / 2);
      } else {
        vec.copy(reduced_.view(), s.param_view());
        s.comm.iallreduce_average(reduced_.view(), request_);
      }
      apply_step_ = s.step + delay_;
      if (delay_ == 0) apply(s);
    } else if (compressor_) {
      compressor_->progress(s.comm);
    } else {
      s.comm.progress(request_);
    }
    if (in_flight() && s.step + 1 == s.total_steps) apply(s);
  }
  double bytes_sent_per_step(double param_bytes, int n) const {
    const double per_call = compressor_ ? compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / 4.0), n)
                                        : ring_allreduce_bytes_sent(param_bytes, n);
    return per_call / static_cast<double>(period_);
  }
  // Recorded collectives of one average (a step can apply one average and, at the last
  // step, the one it just started).
  int collectives_per_average() const { return compressor_ ? compressor_->collectives_per_call() : 1; }
  // Each applied average r (avg_j s_j; compressed: x̂ + D) is also copied into *out (sized in
  // setup to the model), for a variant that uses the last global model (palsgd).
  void keep_applied(DeviceBuffer* out) { keep_ = out; }

 private:
  bool in_flight() const { return compressor_ ? compressor_->in_flight() : request_.active(); }
  void apply(TrainState& s) {
    VectorOps& vec = s.vec();
    if (compressor_) {
      compressor_->finish(s.comm);  // r = D = C_avg(s_i − x̂)
      advance_step_ = -1;
      vec.add(reduced_.view(), reduced_.view(), base_.view());  // r = x̂ + D
      vec.copy(base_.view(), reduced_.view());                  // x̂ ← r
    } else {
      s.comm.wait(request_);
    }
    // x ← r + (x − s) where the average changed (elsewhere x stays bit-exact).
    vec.rebase(s.param_view(), reduced_.view(), snapshot_.view(), true);
    if (keep_) vec.copy(keep_->view(), reduced_.view());
  }

  int64_t period_, delay_;
  uint64_t seed_;
  int64_t apply_step_ = -1;
  int64_t advance_step_ = -1;  // step whose first layer hook launches the compressor's next phase
  DeviceBuffer snapshot_, reduced_;
  CollRequest request_;
  std::unique_ptr<GradientCompressor> compressor_;
  DeviceBuffer base_;             // x̂: the last applied average (compressed only)
  DeviceBuffer* keep_ = nullptr;  // keep_applied's copy of each applied average
};

// The algorithm that is nothing but a DelayedAverage (cocod: delay = period; dasgd: delay
// given); name is the registry name it reports.
class DelayedAveraging final : public Algorithm {
 public:
  DelayedAveraging(std::string name, int64_t period, int64_t delay, const std::string& compress = "", uint64_t seed = 0)
      : name_(std::move(name)), avg_(period, delay, compress, seed) {}
  std::string name() const override { return name_; }
  void setup(TrainState& s) override { avg_.setup(s); }
  void on_layer_grad_ready(TrainState& s, size_t) override { avg_.progress(s); }
  void after_update(TrainState& s) override { avg_.after_update(s); }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return avg_.bytes_sent_per_step(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 2 * avg_.collectives_per_average(); }

 private:
  std::string name_;
  DelayedAverage avg_;
};

}  // namespace dsgd
