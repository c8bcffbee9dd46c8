// The forward passes of a worker run ahead of its steps (pdasgd: PD-ASGD's forward and
// backward decoupled). With depth S ≥ 1 and k = S + 1 workload instances
// (TrainState::forward_workloads), step u's forward reads the weights of step u − min(S, u)
// (the variant's `weights(u)`) on instance u mod k. It may start once those weights are
// written (published) and the instance's previous step, u − k, has finished its backward:
// both hold once step u − S − 1 has updated the model. So at most S passes run ahead of the
// step being backpropagated, and step u's forward and backward both see x_{u−min(S,u)}
// (PipeDream's weight stashing): the numbers do not depend on the timing, and a seed
// reproduces a run on every backend.
//
// Real backends (mpi): one forward thread draws the batches from the rank's data stream in
// step order, loads them and runs the forward passes; wait() blocks the worker until its
// step's pass is done. The instances hand their training state (Workload::
// copy_training_state: BatchNorm running statistics, the augmentation counter) on in step
// order, u − 1 → u, and published(t) copies step t's into the trainer's instance, which
// evaluates, so evaluations see the state of the steps taken. The forward's share of an
// injected straggler delay (Stragglers::delay_s with with_fixed false: the part proportional
// to its measured forward time) is held on the forward thread.
// Virtual clock (sim): the pass runs inline when wait() asks for it, timed as on a second
// core of the worker: start_u = max(end_{u−1}, a_{u−min(S,u)}), end_u = start_u + data +
// fwd + δ_fwd(u), with a_j the worker's clock when x_j was published (a_0: step 0's start)
// and data, fwd the modelled costs; the worker then holds until end_u. The timing-only rule
// of pdasgd applies the same arithmetic.
// Limits: the forward thread's minibatch loss is the step's train_loss; an error on the
// forward thread is rethrown by wait() on the worker's thread. The forward thread never calls
// the Communicator.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace dsgd {

class DecoupledForward {
 public:
  // The variant's part: the weights step u's forward and backward read (valid from the
  // moment x_{u−min(S,u)} is published until step u's backward ends). Called from the
  // forward thread on real backends.
  struct Ops {
    const float* (*weights)(void* ctx, int64_t step) = nullptr;
    void* ctx = nullptr;
  };
  DecoupledForward() = default;
  DecoupledForward(const DecoupledForward&) = delete;
  DecoupledForward& operator=(const DecoupledForward&) = delete;
  ~DecoupledForward();

  // Takes the instances and the data stream from s (S + 1 instances) and, on a real
  // backend, starts the forward thread (x_0 is published: the first S + 1 passes may run).
  void setup(TrainState& s, int64_t depth, Ops ops);
  // Step s.step's forward pass, once it is done (see the top comment).
  ForwardPass wait(TrainState& s);
  // After step s.step has written x_{s.step+1}: the trainer's instance takes this step's
  // training state, and the passes that read x_{s.step+1} may start.
  void published(TrainState& s);
  // Stops and joins the forward thread (also done by the destructor).
  void stop();

 private:
  void run_pass(int64_t u);  // step u's data and forward on its instance
  void loop();

  Ops ops_;
  int64_t depth_ = 1;
  int64_t total_ = 0;
  int rank_ = 0;
  std::vector<Workload*> instances_;
  std::vector<double> loss_;  // per instance: the loss of its last pass
  LocalStream stream_;
  const Dataset* train_ = nullptr;
  const Stragglers* stragglers_ = nullptr;
  bool inline_ = false;  // virtual clock: inline, timed as a second core
  // Virtual clock: a_j per instance slot (j mod k) and the end of the last pass.
  std::vector<double> avail_;
  double lane_end_ = 0;
  // Real backends: x_0..x_published_ are written; passes 0..done_−1 are done.
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable published_cv_, done_cv_;
  int64_t published_ = 0;
  int64_t done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace dsgd
