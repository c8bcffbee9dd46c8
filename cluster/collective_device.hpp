// The seam between the NCCL backend's host-side logic (cluster/nccl_communicator.*: request
// bookkeeping, ordering by events, averaging, block plans, timing) and the device: every call
// that touches a GPU, a CUDA stream or NCCL goes through this interface. The real device
// (cluster/cuda/nccl_device.cpp) enqueues NCCL collectives on a communication stream separate
// from the compute stream and keeps a pool of CUDA events; the tests' fake device
// (tests/unit/fake_collective_device.hpp) runs the same calls on host memory across in-process
// ranks, so the host-side logic is tested on machines without a GPU.
// Pure interface, compiled in every build.
#pragma once

#include <cstddef>
#include <string>

namespace dsgd {

class CollectiveDevice {
 public:
  virtual ~CollectiveDevice() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "NCCL 2.28.3, NVIDIA H200 (device 0)" (for the run's context).
  virtual std::string description() const = 0;

  // ---- enqueued on the communication stream, in call order (asynchronous) -------------------
  virtual void all_reduce_sum(float* data, size_t count) = 0;  // in place
  // shard (block floats) = this rank's block of Σ_ranks send (n·block floats): equal blocks.
  virtual void reduce_scatter_sum(const float* send, float* shard, size_t block) = 0;
  // recv (count floats) on root = Σ_ranks send; the other ranks' recv is untouched.
  virtual void reduce_sum(const float* send, float* recv, size_t count, int root) = 0;
  // In place: rank r's block (data + r·block) goes to every rank: equal blocks.
  virtual void all_gather(float* data, size_t block) = 0;
  virtual void broadcast(float* data, size_t count, int root) = 0;
  virtual void send(const float* data, size_t count, int peer) = 0;
  virtual void recv(float* data, size_t count, int peer) = 0;
  // Operations between group_start and group_end are issued as one (ncclGroupStart/End):
  // needed for send/recv pairs and for per-block reduces and broadcasts.
  virtual void group_start() = 0;
  virtual void group_end() = 0;
  // data ← data · factor, on the communication stream (the 1/n of an average).
  virtual void scale(float* data, size_t count, float factor) = 0;

  // ---- events: a pool of event_count() events, created once ------------------------------
  virtual int event_count() const = 0;
  virtual void record_on_compute(int event) = 0;
  virtual void record_on_comm(int event) = 0;
  virtual void comm_waits_for(int event) = 0;     // the communication stream waits for an event
  virtual void compute_waits_for(int event) = 0;  // the compute stream waits for an event
  virtual bool query(int event) = 0;              // complete?
  virtual void synchronize(int event) = 0;        // the host waits for it
  virtual void synchronize_compute() = 0;         // the host waits for the compute stream
  // Seconds from event `from` to event `to` (both recorded and complete).
  virtual double seconds_between(int from, int to) = 0;
};

}  // namespace dsgd
