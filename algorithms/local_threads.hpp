// The threads inside one worker of the locally asynchronous variants (lasgd, hogwild):
// thread 0 is the trainer's own; threads 1..T−1 each own a workload instance, a gradient
// and a read buffer, and a data stream (TrainState::streams, made by the trainer). A round
// is one worker step: every thread reads the shared model (the variant's `read`), computes
// one gradient on its own batch, and applies its update (the variant's `apply`) as soon as
// it is ready, without waiting for the others; the round ends when every helper has applied.
//
// Real backends (mpi): the helpers are OS threads, woken by start() and waited for by
// finish(); reads and updates interleave as the OS schedules them, so a run is not
// reproducible bit for bit with T > 1 (with T = 1 nothing runs here). The helpers never call
// the Communicator (only thread 0 communicates).
// Virtual clock (sim, Communicator::virtual_clock): the helpers run inline on the worker's
// thread, modelled as T cores at the profiled speed running in lockstep: every thread reads
// at the round's start (start() computes the helpers' gradients there) and the updates are
// applied in thread order 0, 1, ..., T−1 at its end (finish() applies 1..T−1 after thread 0's).
// They take no virtual time of their own (each is on its own core and as fast as thread 0),
// so a seed reproduces a run bit for bit and the step time is thread 0's.
// Limits: the helpers' minibatch losses are not recorded (train_loss is thread 0's); an
// error in a helper is rethrown by finish() on thread 0.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace dsgd {

class LocalThreads {
 public:
  // The variant's part, called from the helper threads on real backends (must be
  // thread-safe against each other and against thread 0's own read and update).
  struct Ops {
    void (*read)(void* ctx, int thread, float* dst) = nullptr;  // dst ← the shared model as this thread sees it
    void (*apply)(void* ctx, int thread, const float* grad, double lr) = nullptr;
    void* ctx = nullptr;
  };
  LocalThreads() = default;
  LocalThreads(const LocalThreads&) = delete;
  LocalThreads& operator=(const LocalThreads&) = delete;
  ~LocalThreads();

  // Allocates the helpers' buffers and, on a real backend, starts their threads.
  void setup(TrainState& s, Ops ops);
  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Round start (thread 0 has read the model): the helpers start at this step's lr.
  void start(TrainState& s);
  // Round end: returns when every helper has applied its update of this round.
  void finish();
  // Stops and joins the threads (after the last round; also done by the destructor).
  void stop();

 private:
  struct Helper {
    LocalStream stream;
    std::vector<float> read, grad;
    std::thread thread;
  };
  void compute(Helper& h, int k);
  void loop(int k);

  Ops ops_;
  const Dataset* train_ = nullptr;
  bool inline_ = false;  // virtual clock: run inline, deterministically
  std::vector<Helper> helpers_;
  // Real backends: round number, helpers done in it, the round's lr, stop flag, first error.
  std::mutex mutex_;
  std::condition_variable wake_, done_cv_;
  int64_t round_ = 0;
  int done_ = 0;
  double lr_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace dsgd
