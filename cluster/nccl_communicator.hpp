// The `nccl` backend's Communicator: one process per GPU, the collectives on NCCL through the
// CollectiveDevice seam (cluster/collective_device.hpp; the real device is
// cluster/cuda/nccl_device.*), MPI (the `world` communicator) only to bootstrap NCCL and for the
// untimed harness operations on host values. Buffers live in GPU memory (supports_device).
// Ordering by events, never by host synchronisation: an operation records a
// "ready" event on the compute stream where it is called (the gradient a layer hook hands over
// is ready there), the communication stream waits for it, runs the NCCL call between a "start"
// and a "done" event, and the compute stream waits for "done" at the wait (blocking
// operations: right away), so a bucket's all-reduce launched from a layer hook runs while the
// rest of the backward computes, and the averaging (a kernel on the compute stream, through the
// device's VectorOps) runs after it. Sharded operations on blocks of unequal size (count not a
// multiple of the ranks) run as one group of per-block reduces or broadcasts.
// Timing (docs/metrics.md): each operation's event is recorded in the log at the call as the
// base class does, then replaced at flush_device_timing() by its device times on the host clock
// (cluster/device_timing.hpp): arrive/depart from the device events, launch/in_flight_until from
// the start event and the compute stream's arrival at the wait. Limits: no one-sided windows
// (adpsgd and ps are refused by the backend table); no two-level all-reduce (flat only).
// Pure host code on the seam, compiled in every build (tested with a fake device).
#pragma once

#include <cstdlib>
#include <memory>

#include "cluster/collective_device.hpp"
#include "cluster/communicator.hpp"
#include "cluster/device_requests.hpp"
#include "cluster/device_timing.hpp"

namespace dsgd {

class NcclCommunicator final : public Communicator {
 public:
  // world: the MPI communicator of the same ranks (rank and size come from it); memory: the
  // device whose memory the buffers are in (cuda:N); records: operations in flight or awaiting
  // their timing at once (the device needs 1 + records·kRequestEvents events).
  NcclCommunicator(std::unique_ptr<Communicator> world, std::unique_ptr<CollectiveDevice> device, Device memory,
                   int records = 256);
  ~NcclCommunicator() override;

  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }
  std::string backend_name() const override { return "nccl"; }
  std::string library_version() const override { return device_->description(); }
  int ranks_on_this_host() const override { return world_->ranks_on_this_host(); }
  bool supports_device(Device d) const override { return d == memory_; }
  Device memory_device() const override { return memory_; }
  std::string backend_details() const override;
  void flush_device_timing() override;
  CollectiveDevice& device() { return *device_; }

  void untimed_allreduce_sum(double* data, size_t count) override { world_->untimed_allreduce_sum(data, count); }
  void untimed_allreduce_sum(float* data, size_t count) override { world_->untimed_allreduce_sum(data, count); }
  void untimed_allreduce_max(double* data, size_t count) override { world_->untimed_allreduce_max(data, count); }
  void untimed_gather(const double* send, size_t count, double* recv, int root) override {
    world_->untimed_gather(send, count, recv, root);
  }
  void untimed_broadcast(double* data, size_t count, int root) override {
    world_->untimed_broadcast(data, count, root);
  }
  void untimed_send(const double* data, size_t count, int peer) override { world_->untimed_send(data, count, peer); }
  void untimed_recv(double* data, size_t count, int peer) override { world_->untimed_recv(data, count, peer); }
  void untimed_barrier() override { world_->untimed_barrier(); }
  [[noreturn]] void abort(int code) override {
    world_->abort(code);
    std::_Exit(code);  // (world_->abort does not return either)
  }

 protected:
  void do_allreduce_sum(BufferView data) override;
  void do_broadcast(BufferView data, int root) override;
  void do_barrier() override;
  int do_iallreduce_sum_start(BufferView data) override;
  bool do_test(int slot) override;
  void do_wait(int slot) override;
  void do_reduce_scatter_sum(ConstBufferView send, BufferView shard) override;
  void do_allgather(BufferView data) override;
  int do_iallgather_start(BufferView data) override;
  int do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv, size_t recv_count,
                        const int* sources, size_t n_sources) override;

 private:
  // Launches body() on the communication stream between a record's start and done events,
  // after the compute stream's ready event; returns the record.
  template <class Body>
  int launch(CollKind kind, bool blocking, Body body);
  void finish_blocking_record(int record);
  void resolve(int record);
  void anchor();
  int event(int record, RequestEvent role) const {
    return DeviceRequestTable::event_index(record, role, kAnchorEvents);
  }
  void gather_blocks(float* data, size_t count);
  void reduce_blocks(const float* send, float* shard, size_t count);
  static constexpr int kAnchorEvents = 1;  // event 0: the clock anchor

  std::unique_ptr<Communicator> world_;
  std::unique_ptr<CollectiveDevice> device_;
  Device memory_;
  DeviceRequestTable records_;
  DeviceClockAnchor anchor_;
};

}  // namespace dsgd
