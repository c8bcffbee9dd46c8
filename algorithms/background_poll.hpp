// One poll of a background model average (cocod, dasgd, overlap-local): uncompressed, it
// drives the non-blocking all-reduce's progress; compressed, it first launches the
// compressor's next phase when this is the step it is due (advance_step, then reset to −1;
// every rank reaches the same call, as MPI and the sim match collectives by program order).
#pragma once

#include <cstdint>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"

namespace dsgd {

inline void background_average_poll(TrainState& s, GradientCompressor* compressor, CollRequest& request,
                                    int64_t& advance_step) {
  if (!compressor) {
    s.comm.progress(request);
    return;
  }
  if (s.step == advance_step) {
    compressor->advance(s.comm);
    advance_step = -1;
  }
  compressor->progress(s.comm);
}

}  // namespace dsgd
