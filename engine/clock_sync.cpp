// Ping-pong clock offset estimation; see clock_sync.hpp.
#include "engine/clock_sync.hpp"

#include <limits>

#include "core/clock.hpp"

namespace dsgd {

ClockOffsets clock_sync_measure(Communicator& comm, int rounds) {
  const int n = comm.size();
  ClockOffsets out;
  out.offset.assign(static_cast<size_t>(n), 0.0);
  out.max_error.assign(static_cast<size_t>(n), 0.0);
  comm.untimed_barrier();
  out.taken_at = comm.now();
  if (n == 1) return out;
  for (int peer = 1; peer < n; ++peer) {
    if (comm.rank() == 0) {
      double best_rtt = std::numeric_limits<double>::infinity();
      for (int i = 0; i < rounds; ++i) {
        double msg = comm.now();
        const double t0 = msg;
        comm.untimed_send(&msg, 1, peer);
        comm.untimed_recv(&msg, 1, peer);
        const double t1 = comm.now();
        if (t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          out.offset[peer] = msg - 0.5 * (t0 + t1);
          out.max_error[peer] = 0.5 * best_rtt;
        }
      }
    } else if (comm.rank() == peer) {
      for (int i = 0; i < rounds; ++i) {
        double msg = 0;
        comm.untimed_recv(&msg, 1, 0);
        msg = comm.now();
        comm.untimed_send(&msg, 1, 0);
      }
    }
  }
  comm.untimed_barrier();
  return out;
}

double clock_sync_offset_at(const ClockOffsets& start, const ClockOffsets& end, int rank, double t) {
  const double a = start.offset.at(static_cast<size_t>(rank));
  if (end.offset.empty() || end.taken_at <= start.taken_at) return a;
  const double b = end.offset.at(static_cast<size_t>(rank));
  const double w = (t - start.taken_at) / (end.taken_at - start.taken_at);
  return a + (b - a) * w;
}

}  // namespace dsgd
