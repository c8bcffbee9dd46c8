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

// The fastest core of the table above that this CPU can run: "SkylakeX" (AVX-512 F, BW, VL,
// DQ, CD), "Haswell" (AVX2 and FMA), "Sandybridge" (AVX); empty for an SSE-only CPU.
std::string blas_core_for_cpu();

// OpenBLAS's detection knows CPU models by number, and falls back to its SSE3 "Prescott"
// kernels for one it does not know: OpenBLAS 0.3.21 (Debian 12) on an Intel Xeon of family 6,
// model 207, with AVX-512, ran SGEMM at 19 GFLOP/s on one core instead of SkylakeX's 95-104.
// When OPENBLAS_CORETYPE is unset and the chosen core is below blas_core_for_cpu(), this
// switches the process's OpenBLAS to that core (OpenBLAS's own re-initialisation, before any
// BLAS call) and sets OPENBLAS_CORETYPE so that the ranks and children it starts load the same
// one. Returns "Prescott -> SkylakeX" when it switched, else empty (the variable set, a core
// already as fast, an OpenBLAS without runtime core selection). Call first thing in main.
std::string blas_core_upgrade();

// What a program runs first: blas_core_upgrade(), then blas_core_check() (throws Error).
// Returns "OpenBLAS core SkylakeX" (", chosen for this CPU: Prescott -> SkylakeX" after a
// switch), for --version.
std::string blas_core_start();

}  // namespace dsgd
