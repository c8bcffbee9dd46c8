// Which OpenBLAS kernel set ("core") this process runs, and whether this CPU can execute it.
// OpenBLAS picks its core when it loads, from the CPU, unless the environment variable
// OPENBLAS_CORETYPE names one. Some environments set it for the host CPU (older OpenBLAS
// builds misdetect some processors). A core that needs instructions the CPU lacks, such as
// the Haswell core's AVX2 kernels on an emulated CPU without AVX, dies with SIGILL at the
// first BLAS call. blas_core_check() turns that into a clear error before any call is made.
// Limits: OpenBLAS only (the project links it); core names outside the table are not checked.
#pragma once

#include <string>
#include <vector>

namespace dsgd {

// The core OpenBLAS chose in this process ("Haswell", "SkylakeX", "Nehalem", ...).
std::string blas_core_name();

// The CPU features a core's kernels use, as __builtin_cpu_supports names them ("avx2",
// "fma", "avx512f", ...). Empty for SSE-level cores and for names the table does not know.
std::vector<std::string> blas_core_required_features(const std::string& core);

// Of `features`, those this CPU (or the emulated CPU) does not have.
std::vector<std::string> cpu_missing_features(const std::vector<std::string>& features);

// Empty when this CPU can run the chosen core; otherwise one message naming the core, the
// missing instructions, OPENBLAS_CORETYPE's value and what to do.
std::string blas_core_mismatch();

// Throws Error with blas_core_mismatch()'s message when it is not empty.
void blas_core_check();

}  // namespace dsgd
