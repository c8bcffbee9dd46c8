// The harness's all-reduce path (Communicator::allreduce_sum with the event log attached,
// exactly as in training) against a bare MPI_Allreduce of the same buffer, measured side
// by side in one run under `mpiexec -n 2`. Bandwidths as nccl-tests defines them:
// algbw = S / t, busbw = algbw × 2(n−1)/n, GB = 1e9; t is the slowest rank's time per
// iteration; each size reports the median over repetitions that alternate the two paths,
// and the ratio column is the median of the per-repetition (paired) ratios bare/ours.
// Goal: harness busbw ≥ 0.95 × bare busbw at every size from 4 KiB to 64 MiB.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/clock.hpp"
#include "core/copy_aliasing.hpp"
#include "core/stats.hpp"

using namespace dsgd;

namespace {

double median(std::vector<double> v) {
  return dsgd::stats_median(std::move(v));
}

}  // namespace

int main(int argc, char** argv) {
  dsgd::copy_aliasing_start(argv);  // the product's memory copies (core/copy_aliasing.hpp)
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto comm = communicator_create_world(&argc, &argv);
  const int n = comm->size();
  const bool root = comm->rank() == 0;
  const size_t max_bytes = quick ? (size_t(1) << 20) : (size_t(64) << 20);
  const int reps = quick ? 3 : 15;
  std::vector<float> buf(max_bytes / sizeof(float), 1.0f);
  CollEventLog log;

  if (root) {
    fmt::print("# all-reduce, {} ranks, in place, float32 sum; times: slowest rank, median of {} repetitions\n", n,
               reps);
    fmt::print("{:>12} {:>12} | {:>10} {:>8} {:>8} | {:>10} {:>8} {:>8} | {:>7}\n", "size(B)", "count", "bare(us)",
               "algbw", "busbw", "ours(us)", "algbw", "busbw", "ratio");
  }
  double worst_ratio = 1e9;
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    // Enough iterations for ~20 ms per repetition, at least 2.
    const int iters = std::max(2, static_cast<int>(std::min<size_t>(10000, (size_t(40) << 20) / bytes)));
    std::vector<double> bare, ours;
    for (int w = 0; w < 3; ++w)
      MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int r = 0; r < reps; ++r) {
      for (int path = 0; path < 2; ++path) {
        log.reserve(static_cast<size_t>(iters));
        log.clear();
        comm->attach_log(path == 1 ? &log : nullptr);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = clock_now_s();
        for (int i = 0; i < iters; ++i) {
          if (path == 0)
            MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else
            comm->allreduce_sum(buf.data(), count);
        }
        double t = (clock_now_s() - t0) / iters;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        (path == 0 ? bare : ours).push_back(t);
        comm->attach_log(nullptr);
      }
      // Keep values bounded (repeated sums of ones grow by n each time).
      std::fill(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(count), 1.0f);
    }
    const double tb = median(bare), to = median(ours);
    // Paired: each repetition ran both paths back to back, so their ratio cancels the
    // machine's slow drifts; the median of the paired ratios is the comparison we report.
    std::vector<double> paired;
    for (size_t i = 0; i < bare.size(); ++i) paired.push_back(bare[i] / ours[i]);
    const double factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
    const double algb = bytes / tb / 1e9, algo = bytes / to / 1e9;
    const double ratio = median(paired);
    worst_ratio = std::min(worst_ratio, ratio);
    if (root)
      fmt::print("{:>12} {:>12} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>7.3f}\n", bytes, count,
                 tb * 1e6, algb, algb * factor, to * 1e6, algo, algo * factor, ratio);
  }
  if (root)
    fmt::print("# worst ratio (ours busbw / bare busbw, median of paired repetitions): {:.3f} (goal >= 0.95)\n",
               worst_ratio);
  return 0;
}
