// The thread count of the non-GEMM layer loops (BatchNorm, ReLU, the residual join): OpenBLAS's
// (which --threads sets), so these loops never add threads beyond --threads. They run with
// OpenMP (`#pragma omp parallel for num_threads(layer_threads())`), between BLAS and oneDNN
// calls, never during one. In a build without OpenMP (no oneDNN found) the pragmas are
// compiled out (#ifdef _OPENMP) and the loops run on the calling thread. Each loop splits work by channel or by
// fixed element ranges and each output is computed by one thread, so results do not depend
// on the thread count.
#pragma once

#include <cblas.h>

#include <cstddef>

namespace dsgd {

inline int layer_threads() {
  const int t = openblas_get_num_threads();
  return t < 1 ? 1 : t;
}

// Below this many floats an elementwise loop stays on one thread (fork/join costs ~µs).
constexpr size_t kParallelMinFloats = size_t{1} << 15;
// The same for streaming loops of a few flops per float (the GPT's residual adds, bias fills
// and LayerNorm forward): a second thread saves them ~0.05 ms per 256k floats on an idle
// machine, but waking it costs up to a millisecond when the machine is busy.
constexpr size_t kParallelMinStreamFloats = size_t{1} << 20;

}  // namespace dsgd
