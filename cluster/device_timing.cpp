// See device_timing.hpp.
#include "cluster/device_timing.hpp"

#include <algorithm>

namespace dsgd {

CollEvent coll_event_from_device(const DeviceClockAnchor& a, const DeviceCollTimes& t, CollKind kind,
                                 double bytes_sent) {
  CollEvent e;
  e.bytes_sent = bytes_sent;
  e.kind = static_cast<int32_t>(kind);
  const double start = a.to_host(t.start), done = a.to_host(std::max(t.done, t.start));
  if (t.reached < 0) {
    e.arrive = start;
    e.depart = done;
    return e;
  }
  const double reached = a.to_host(t.reached);
  e.launch = start;
  e.arrive = reached;
  e.depart = std::max(done, reached);
  // In flight while computing: from the start until it finished or the compute stream
  // stopped to wait for it, whichever came first (never before the start).
  e.in_flight_until = std::max(start, std::min(done, reached));
  return e;
}

}  // namespace dsgd
