// Request bookkeeping of a backend whose operations complete on a device stream (NCCL): a fixed
// table of slots allocated once (CONVENTIONS #4), each with its own events in the device's event
// pool, so the step loop never creates an event or allocates. A slot is acquired at launch
// (Communicator::do_*_start returns it), marked complete when an event query or a wait sees its
// done event, and released by the wait. Pure host code, compiled in every build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cluster/communicator.hpp"

namespace dsgd {

// The events one slot owns, by role (see device_timing.hpp for what each marks).
enum class RequestEvent : int { ready = 0, start = 1, done = 2, reached = 3 };
constexpr int kRequestEvents = 4;

struct DeviceRequest {
  bool in_flight = false;
  bool complete = false;
  bool blocking = false;
  CollKind kind = CollKind::coll_allreduce;
  double bytes_sent = 0;
  float* scale_data = nullptr;  // average: scaled by 1/ranks on the communication stream
  size_t scale_count = 0;
};

class DeviceRequestTable {
 public:
  explicit DeviceRequestTable(int capacity);
  int capacity() const { return static_cast<int>(slots_.size()); }
  // The lowest free slot, marked in flight; throws Error when every slot is in flight (more
  // requests in flight than the table holds: wait for some first).
  int acquire(CollKind kind, double bytes_sent, bool blocking);
  void mark_complete(int slot);
  void release(int slot);
  int in_flight() const;
  const DeviceRequest& at(int slot) const;
  DeviceRequest& at(int slot);
  // Index of a slot's event in the device's pool of capacity · kRequestEvents events.
  static int event_index(int slot, RequestEvent role) { return slot * kRequestEvents + static_cast<int>(role); }

 private:
  void check(int slot) const;
  std::vector<DeviceRequest> slots_;
};

}  // namespace dsgd
