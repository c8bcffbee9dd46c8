// See device_requests.hpp.
#include "cluster/device_requests.hpp"

#include "core/errors.hpp"

namespace dsgd {

DeviceRequestTable::DeviceRequestTable(int capacity) : slots_(capacity > 0 ? size_t(capacity) : 0) {}

int DeviceRequestTable::acquire(CollKind kind, double bytes_sent, bool blocking) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    DeviceRequest& r = slots_[i];
    if (r.in_flight) continue;
    r = DeviceRequest{};
    r.in_flight = true;
    r.kind = kind;
    r.bytes_sent = bytes_sent;
    r.blocking = blocking;
    return static_cast<int>(i);
  }
  DSGD_THROW(Error, "wait for requests before launching more (or use fewer, larger buckets: --bucket-mb)",
             "more than {} communication requests in flight on the device", slots_.size());
}

void DeviceRequestTable::check(int slot) const {
  if (slot < 0 || size_t(slot) >= slots_.size() || !slots_[size_t(slot)].in_flight)
    DSGD_THROW(Error, "", "device request slot {} is not in flight (of {})", slot, slots_.size());
}

void DeviceRequestTable::mark_complete(int slot) {
  check(slot);
  slots_[size_t(slot)].complete = true;
}

void DeviceRequestTable::release(int slot) {
  check(slot);
  slots_[size_t(slot)] = DeviceRequest{};
}

int DeviceRequestTable::in_flight() const {
  int n = 0;
  for (const auto& r : slots_) n += r.in_flight ? 1 : 0;
  return n;
}

const DeviceRequest& DeviceRequestTable::at(int slot) const {
  check(slot);
  return slots_[size_t(slot)];
}
DeviceRequest& DeviceRequestTable::at(int slot) {
  check(slot);
  return slots_[size_t(slot)];
}

}  // namespace dsgd
