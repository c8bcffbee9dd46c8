// Request bookkeeping of a backend whose operations complete on a device stream (NCCL): a ring
// of records allocated once, each with its own events in the device's event
// pool, so the step loop never creates an event or allocates. Every launched operation takes
// the next record in launch order; the record stays "in flight" until its wait, then holds the
// operation's events until its device times are read (resolved: device_timing.hpp) at the
// next flush, or when the ring comes round to it again. Launch order is the same on every
// rank (collectives are called in one order), so record k names the same operation
// everywhere. Pure host code, compiled in every build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cluster/communicator.hpp"

namespace dsgd {

// The events one record owns, by role (see device_timing.hpp for what each marks).
enum class RequestEvent : int { ready = 0, start = 1, done = 2, reached = 3 };
constexpr int kRequestEvents = 4;

struct DeviceRequest {
  bool in_flight = false;  // launched, not yet waited for
  bool complete = false;   // a query saw its done event
  bool resolved = true;    // its times were read (or it never ran): the record may be reused
  bool blocking = false;
  CollKind kind = CollKind::coll_allreduce;
  double bytes_sent = 0;
  int64_t log_index = -1;  // index of its event in the attached log (-1: none recorded)
};

class DeviceRequestTable {
 public:
  explicit DeviceRequestTable(int capacity);
  int capacity() const { return static_cast<int>(records_.size()); }
  // The record the next launch takes (ring order). Throws Error when it is still in flight
  // (capacity() operations launched and not waited for). The caller resolves it first when
  // !at(next()).resolved.
  int next() const;
  // Takes next() for an operation: in flight, unresolved.
  int acquire(CollKind kind, double bytes_sent, bool blocking);
  void mark_complete(int record);
  // The wait: no longer in flight (still unresolved).
  void finish(int record);
  void mark_resolved(int record);
  int in_flight() const;
  const DeviceRequest& at(int record) const;
  DeviceRequest& at(int record);
  // Index of a record's event in the device's pool, after the `reserved` events in front.
  static int event_index(int record, RequestEvent role, int reserved = 0) {
    return reserved + record * kRequestEvents + static_cast<int>(role);
  }

 private:
  void check(int record) const;
  std::vector<DeviceRequest> records_;
  size_t next_ = 0;
};

}  // namespace dsgd
