// The harness all-reduce (Communicator::allreduce_sum, as in training) back to back, as
// `dsgd-bench calibrate` times it, against the same all-reduce right after a stretch of
// compute, as a training step issues it: each rank first streams a buffer larger than the
// caches for --compute-ms (the forward and backward passes of a deep model do so) and writes
// the gradient buffer, then all ranks meet at a barrier and the all-reduce is timed. Under
// `mpiexec -n 2`; each size alternates the two modes repetition by repetition and reports the
// medians (the slowest rank's time) and the median of the paired ratios after/back-to-back.
// The ratio is how much the calibration's curve under-predicts a training step's collective
// on this host (docs/sim.md, "Validation").
//   mpiexec -n 2 build/bench/mpi_bench_after_compute [--quick] [--compute-ms 20] [--stream-mb 64]
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/clock.hpp"
#include "core/copy_aliasing.hpp"
#include "core/stats.hpp"

using namespace dsgd;

namespace {

// Reads and writes `stream` one cache line at a time until `ms` have passed.
void compute_for(std::vector<char>& stream, double ms) {
  const double until = clock_now_s() + ms / 1e3;
  while (clock_now_s() < until)
    for (size_t i = 0; i < stream.size(); i += 64) stream[i] = static_cast<char>(stream[i] + 1);
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  bool quick = false;
  double compute_ms = 20, stream_mb = 64;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--compute-ms") == 0 && i + 1 < argc) {
      compute_ms = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--stream-mb") == 0 && i + 1 < argc) {
      stream_mb = std::atof(argv[++i]);
    } else {
      fmt::print(stderr, "usage: {} [--quick] [--compute-ms MS] [--stream-mb MB]\n", argv[0]);
      return 2;
    }
  }
  if (quick) compute_ms = std::min(compute_ms, 2.0);
  auto comm = communicator_create_world(&argc, &argv);
  const bool root = comm->rank() == 0;
  const int reps = quick ? 3 : 40;
  const size_t max_bytes = quick ? (size_t(128) << 10) : (size_t(4) << 20);
  std::vector<char> stream(static_cast<size_t>(stream_mb * 1e6), 1);
  std::vector<float> buf(max_bytes / sizeof(float), 1.0f);
  CollEventLog log;
  log.reserve(16);
  comm->attach_log(&log);
  if (root) {
    fmt::print(
        "# harness all-reduce, {} ranks: back to back vs after {:.0f} ms of compute streaming {:.0f} MB; "
        "slowest rank, median of {} repetitions\n",
        comm->size(), compute_ms, stream_mb, reps);
    fmt::print("{:>10} | {:>14} {:>14} | {:>7}\n", "size(B)", "back2back(us)", "after(us)", "ratio");
  }
  for (size_t bytes = 32 << 10; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<double> hot, after, paired;
    for (int r = 0; r < reps; ++r) {
      double t[2] = {0, 0};
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == 0) {
          comm->allreduce_sum(buf.data(), count);  // warms the buffers and the path
        } else {
          compute_for(stream, compute_ms);
          for (size_t i = 0; i < count; ++i) buf[i] = 1.0f;  // the backward pass writes the gradient
        }
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = clock_now_s();
        comm->allreduce_sum(buf.data(), count);
        t[mode] = clock_now_s() - t0;
        log.clear();
        MPI_Allreduce(MPI_IN_PLACE, &t[mode], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      }
      std::fill(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(count), 1.0f);
      hot.push_back(t[0]);
      after.push_back(t[1]);
      paired.push_back(t[1] / t[0]);
    }
    if (root)
      fmt::print("{:>10} | {:>14.1f} {:>14.1f} | {:>7.2f}\n", bytes, 1e6 * stats_median(hot), 1e6 * stats_median(after),
                 stats_median(paired));
  }
  comm->attach_log(nullptr);
  return 0;
}
