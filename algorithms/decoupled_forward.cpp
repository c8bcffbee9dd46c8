// See decoupled_forward.hpp.
#include "algorithms/decoupled_forward.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "core/errors.hpp"

namespace dsgd {

DecoupledForward::~DecoupledForward() {
  stop();
}

void DecoupledForward::setup(TrainState& s, int64_t depth, Ops ops) {
  ops_ = ops;
  depth_ = depth;
  total_ = s.total_steps;
  rank_ = s.comm.rank();
  instances_ = s.forward_workloads;
  stream_ = s.own_stream;
  train_ = s.train;
  stragglers_ = s.stragglers;
  const size_t k = static_cast<size_t>(depth + 1);
  if (depth < 1 || instances_.size() != k || !stream_.next_batch || !train_)
    DSGD_THROW(Error, "this is a bug: the trainer makes forward_instances() instances and passes its data stream",
               "decoupled forward of depth {} with {} instances", depth, instances_.size());
  loss_.assign(k, 0.0);
  avail_.assign(k, 0.0);
  inline_ = s.comm.virtual_clock();
  if (!inline_) thread_ = std::thread([this] { loop(); });
}

void DecoupledForward::run_pass(int64_t u) {
  const size_t k = instances_.size();
  Workload& wl = *instances_[static_cast<size_t>(u) % k];
  if (u > 0) wl.copy_training_state(*instances_[static_cast<size_t>(u - 1) % k]);
  const uint32_t* idx = stream_.next_batch(stream_.ctx);
  wl.load_batch(*train_, idx, stream_.batch);
  const double t0 = inline_ ? 0.0 : clock_now_s();
  loss_[static_cast<size_t>(u) % k] = wl.forward(ops_.weights(ops_.ctx, u));
  if (!inline_ && stragglers_) {
    const double t1 = clock_now_s();
    const double delay = stragglers_->delay_s(rank_, u, t1 - t0, false);
    if (delay > 0) clock_hold_until(t1 + delay);
  }
}

ForwardPass DecoupledForward::wait(TrainState& s) {
  const int64_t t = s.step;
  const size_t k = instances_.size();
  if (inline_) {
    const double now = s.comm.now();
    if (t == 0) avail_[0] = now;  // x_0 is there when training starts
    run_pass(t);
    const double fwd = s.comm.compute_cost_s(ComputePhase::phase_forward);
    const double delay = stragglers_ ? stragglers_->delay_s(rank_, t, fwd, false) : 0.0;
    const double start = std::max(lane_end_, avail_[static_cast<size_t>(t - std::min(t, depth_)) % k]);
    lane_end_ = start + s.comm.compute_cost_s(ComputePhase::phase_data) + fwd + delay;
    s.comm.hold_until(lane_end_);
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ > t || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  const size_t slot = static_cast<size_t>(t) % k;
  return ForwardPass{instances_[slot], ops_.weights(ops_.ctx, t), loss_[slot]};
}

void DecoupledForward::published(TrainState& s) {
  const int64_t t = s.step;
  const size_t k = instances_.size();
  s.workload.copy_training_state(*instances_[static_cast<size_t>(t) % k]);
  if (inline_) {
    avail_[static_cast<size_t>(t + 1) % k] = s.comm.now();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    published_ = t + 1;
  }
  published_cv_.notify_one();
}

void DecoupledForward::loop() {
  for (int64_t u = 0; u < total_; ++u) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      published_cv_.wait(lock, [&] { return stop_ || published_ >= u - depth_; });
      if (stop_) return;
    }
    std::exception_ptr failed;
    try {
      run_pass(u);
    } catch (...) {
      failed = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed) error_ = failed;
      done_ = u + 1;
    }
    done_cv_.notify_one();
    if (failed) return;
  }
}

void DecoupledForward::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  published_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace dsgd
