// Clock offsets between ranks, estimated by ping-pong with rank 0 (untimed, outside the
// training loop). offset[r] = clock of rank r − clock of rank 0, taken from the exchange
// with the smallest round trip (its error is at most half that round trip). The trainer
// measures offsets at the start and at the end of a run and interpolates linearly, which
// also absorbs clock drift between hosts. Ranks on one host share CLOCK_MONOTONIC, so
// their offsets come out as ~0.
#pragma once

#include <vector>

#include "cluster/communicator.hpp"

namespace dsgd {

struct ClockOffsets {
  double taken_at = 0;            // rank 0's clock when measured
  std::vector<double> offset;     // per rank (size() entries, valid on rank 0; [0] = 0)
  std::vector<double> max_error;  // half the best round trip, per rank
};

// Collective: every rank must call it. Results are meaningful on rank 0.
ClockOffsets clock_sync_measure(Communicator& comm, int rounds = 16);

// Offset of `rank` at rank-0 time t, interpolated between two measurements.
double clock_sync_offset_at(const ClockOffsets& start, const ClockOffsets& end, int rank, double t);

}  // namespace dsgd
