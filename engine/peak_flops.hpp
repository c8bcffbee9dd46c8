// The peak compute rate of this host for MFU (model FLOPs utilisation, docs/metrics.md):
// single-precision GEMM measured on the BLAS the workloads use, at the BLAS thread count
// already set for this process (--threads).
#pragma once

namespace dsgd {

// FLOP/s of cblas_sgemm on an n×n×n product: the best of `reps` timed products after one
// untimed warm-up (best, not median: a peak is what the hardware does when undisturbed).
double sgemm_flops_measure(int n, int reps);

// The peak used for MFU with `threads` BLAS threads: the best of 10 products of 256³ (one
// thread) or 512³ (more), 10–50 ms on an idle core. Short products measure close to the
// large-matrix rate and are more likely than long ones to run undisturbed on a busy host.
double peak_flops_measure(int threads);

}  // namespace dsgd
