// See local_threads.hpp.
#include "algorithms/local_threads.hpp"

#include "core/errors.hpp"

namespace dsgd {

LocalThreads::~LocalThreads() {
  stop();
}

void LocalThreads::setup(TrainState& s, Ops ops) {
  ops_ = ops;
  inline_ = s.comm.virtual_clock();
  helpers_.resize(s.streams.size());
  for (size_t k = 0; k < helpers_.size(); ++k) {
    Helper& h = helpers_[k];
    h.stream = s.streams[k];
    if (!h.stream.workload || !h.stream.next_batch)
      DSGD_THROW(Error, "this is a bug: the trainer makes the streams of local_threads()",
                 "local thread {} has no stream", k + 1);
    h.read.assign(s.count, 0.0f);
    h.grad.assign(s.count, 0.0f);
  }
  if (inline_) return;
  for (size_t k = 0; k < helpers_.size(); ++k)
    helpers_[k].thread = std::thread([this, k] { loop(static_cast<int>(k)); });
}

void LocalThreads::compute(Helper& h, int k) {
  ops_.read(ops_.ctx, k + 1, h.read.data());
  const uint32_t* idx = h.stream.next_batch(h.stream.ctx);
  h.stream.workload->load_batch(*train_, idx, h.stream.batch);
  h.stream.workload->forward(h.read.data());
  h.stream.workload->backward(h.read.data(), h.grad.data(), LayerHook{});
}

void LocalThreads::start(TrainState& s) {
  if (helpers_.empty()) return;
  train_ = s.train;
  if (inline_) {
    lr_ = s.lr;
    for (size_t k = 0; k < helpers_.size(); ++k) compute(helpers_[k], static_cast<int>(k));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lr_ = s.lr;
    done_ = 0;
    ++round_;
  }
  wake_.notify_all();
}

void LocalThreads::finish() {
  if (helpers_.empty()) return;
  if (inline_) {
    for (size_t k = 0; k < helpers_.size(); ++k)
      ops_.apply(ops_.ctx, static_cast<int>(k) + 1, helpers_[k].grad.data(), lr_);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_ == static_cast<int>(helpers_.size()); });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void LocalThreads::loop(int k) {
  Helper& h = helpers_[static_cast<size_t>(k)];
  int64_t seen = 0;
  for (;;) {
    double lr = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || round_ > seen; });
      if (stop_) return;
      seen = round_;
      lr = lr_;
    }
    std::exception_ptr failed;
    try {
      compute(h, k);
      ops_.apply(ops_.ctx, k + 1, h.grad.data(), lr);
    } catch (...) {
      failed = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed && !error_) error_ = failed;
      ++done_;
    }
    done_cv_.notify_one();
  }
}

void LocalThreads::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (Helper& h : helpers_)
    if (h.thread.joinable()) h.thread.join();
}

}  // namespace dsgd
