// See device_requests.hpp.
#include "cluster/device_requests.hpp"

#include "core/errors.hpp"

namespace dsgd {

DeviceRequestTable::DeviceRequestTable(int capacity) : records_(capacity > 0 ? size_t(capacity) : 1) {}

int DeviceRequestTable::next() const {
  if (records_[next_].in_flight)
    DSGD_THROW(Error, "wait for requests before launching more (or use fewer, larger buckets: --bucket-mb)",
               "more than {} communication requests in flight on the device", records_.size());
  return static_cast<int>(next_);
}

int DeviceRequestTable::acquire(CollKind kind, double bytes_sent, bool blocking) {
  const int k = next();
  DeviceRequest& r = records_[size_t(k)];
  if (!r.resolved)
    DSGD_THROW(Error, "this is a bug: resolve a record's times before reusing it", "device request record {} reused",
               k);
  r = DeviceRequest{};
  r.in_flight = true;
  r.resolved = false;
  r.kind = kind;
  r.bytes_sent = bytes_sent;
  r.blocking = blocking;
  next_ = (next_ + 1) % records_.size();
  return k;
}

void DeviceRequestTable::check(int record) const {
  if (record < 0 || size_t(record) >= records_.size())
    DSGD_THROW(Error, "this is a bug", "device request record {} does not exist (of {})", record, records_.size());
}

void DeviceRequestTable::mark_complete(int record) {
  check(record);
  records_[size_t(record)].complete = true;
}

void DeviceRequestTable::finish(int record) {
  check(record);
  if (!records_[size_t(record)].in_flight)
    DSGD_THROW(Error, "this is a bug: each request is waited for once", "device request record {} is not in flight",
               record);
  records_[size_t(record)].in_flight = false;
}

void DeviceRequestTable::mark_resolved(int record) {
  check(record);
  records_[size_t(record)].resolved = true;
}

int DeviceRequestTable::in_flight() const {
  int n = 0;
  for (const auto& r : records_) n += r.in_flight ? 1 : 0;
  return n;
}

const DeviceRequest& DeviceRequestTable::at(int record) const {
  check(record);
  return records_[size_t(record)];
}
DeviceRequest& DeviceRequestTable::at(int record) {
  check(record);
  return records_[size_t(record)];
}

}  // namespace dsgd
