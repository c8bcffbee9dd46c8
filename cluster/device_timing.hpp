// Timing of communication that runs on a device stream (the NCCL backend), converted to the
// host clock so that the recorder's compute / comm / wait / overlap keep the definitions of
// docs/metrics.md. A device time is read as seconds since an anchor event (cudaEventElapsedTime
// from the anchor); the anchor's host time is taken when the host saw it complete
// (cudaEventSynchronize, then now()), re-taken at every flush so GPU and host clock drift stays
// at microseconds. One operation's device timeline:
//   start   the communication stream began it (event recorded just before the NCCL call,
//           after the stream waited for the compute stream's "gradient ready" event)
//   done    it finished (event recorded just after)
//   reached the compute stream reached the point that needs the result (the event recorded on
//           the compute stream when wait() was called); absent for a blocking operation
// and the recorded CollEvent (docs/metrics.md, "Overlap and exposed communication"):
//   blocking:     arrive = start,  depart = done,  no in-flight interval
//   non-blocking: launch L = start, arrive = reached (the device's "wait call": compute stops),
//                 depart = max(done, reached), in_flight_until = min(done, reached)
// so overlap = [L, min(done, reached)] (communication in flight while the device computes)
// and the exposed part depart − arrive is what the compute stream waited for the result.
// Pure host code, compiled in every build (tests/unit/test_nccl_host.cpp).
#pragma once

#include "cluster/communicator.hpp"

namespace dsgd {

struct DeviceClockAnchor {
  double host_s = 0;  // host clock (Communicator::now()) when the anchor event completed
  double to_host(double since_anchor_s) const { return host_s + since_anchor_s; }
};

// Seconds since the anchor; reached < 0 marks a blocking operation.
struct DeviceCollTimes {
  double start = 0;
  double done = 0;
  double reached = -1;
};

CollEvent coll_event_from_device(const DeviceClockAnchor& anchor, const DeviceCollTimes& t, CollKind kind,
                                 double bytes_sent);

}  // namespace dsgd
