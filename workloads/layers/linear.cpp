// See linear.hpp. The three products are single SGEMM calls on the row-major buffers: oneDNN's
// dnnl_sgemm where the build has oneDNN, else OpenBLAS's. On this project's AVX-512 machine
// (AMD EPYC, OpenBLAS 0.3.21 picks its AVX2 "Haswell" kernels there) dnnl_sgemm ran the GPT's
// 1024×256×1024 products at 200-260 GFLOP/s on one core against OpenBLAS's 128-133.
#include "workloads/layers/linear.hpp"

#include <cblas.h>

#include <algorithm>
#include <vector>

#ifdef DSGD_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

namespace {

#ifdef DSGD_HAVE_DNNL
// Rows of C per oneDNN call. oneDNN's own threading may split a product's k dimension across
// threads on some ISAs (seen with AVX2: 3 threads gave other roundings than 1), so the result
// would depend on --threads. Instead C is cut into blocks of a fixed number of rows, whatever
// the thread count, each one single-threaded oneDNN call, and the threads share the blocks:
// every element is summed in the same order at any thread count.
constexpr int kSgemmBlockRows = 128;
#endif

// C (m×n, row-major, leading dimension ldc) = α op(A) op(B) + β C, on --threads threads.
void sgemm_rows(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                int ldb, float beta, float* c, int ldc) {
#ifdef DSGD_HAVE_DNNL
  const int nt = layer_threads();
  const int blocks = (m + kSgemmBlockRows - 1) / kSgemmBlockRows;
  omp_set_num_threads(1);  // each block's oneDNN call runs on the thread that takes it
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && blocks > 1)
  for (int i = 0; i < blocks; ++i) {
    const int r0 = i * kSgemmBlockRows, rows = std::min(kSgemmBlockRows, m - r0);
    const float* a_rows = trans_a ? a + r0 : a + static_cast<size_t>(r0) * static_cast<size_t>(lda);
    dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', rows, n, k, alpha, a_rows, lda, b, ldb, beta,
               c + static_cast<size_t>(r0) * static_cast<size_t>(ldc), ldc);
  }
#else
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
              a, lda, b, ldb, beta, c, ldc);
#endif
}

}  // namespace

void linear_forward(const LinearShape& s, const float* x, const float* w, const float* b, float* y) {
  const int n = static_cast<int>(s.n), in = static_cast<int>(s.in), out = static_cast<int>(s.out);
  float beta = 0.0f;
  if (b) {
    [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && s.n * s.out >= kParallelMinStreamFloats)
#endif
    for (size_t i = 0; i < s.n; ++i) {
      float* row = y + i * s.out;
      for (size_t o = 0; o < s.out; ++o) row[o] = b[o];
    }
    beta = 1.0f;
  }
  sgemm_rows(false, true, n, out, in, 1.0f, x, in, w, in, beta, y, out);
}

void linear_backward(const LinearShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, bool accumulate) {
  const int n = static_cast<int>(s.n), in = static_cast<int>(s.in), out = static_cast<int>(s.out);
  const float beta = accumulate ? 1.0f : 0.0f;
  // dW (out×in) = dyᵀ (out×n) · x (n×in)
  sgemm_rows(true, false, out, in, n, 1.0f, dy, out, x, in, beta, dw, in);
  if (dx) sgemm_rows(false, false, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
  if (db) {
    // By column ranges, each summed over the rows in order (the same at any thread count).
    constexpr size_t kCols = 64;
    const long blocks = static_cast<long>((s.out + kCols - 1) / kCols);
    [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) \
    schedule(static) if (nt > 1 && blocks > 1 && s.n * s.out >= kParallelMinStreamFloats)
#endif
    for (long cb = 0; cb < blocks; ++cb) {
      const size_t o0 = static_cast<size_t>(cb) * kCols, o1 = std::min(s.out, o0 + kCols);
      if (!accumulate)
        for (size_t o = o0; o < o1; ++o) db[o] = 0.0f;
      for (size_t i = 0; i < s.n; ++i) {
        const float* row = dy + i * s.out;
        for (size_t o = o0; o < o1; ++o) db[o] += row[o];
      }
    }
  }
}

void linear_forward_naive(const LinearShape& s, const float* x, const float* w, const float* b, float* y) {
  for (size_t i = 0; i < s.n; ++i)
    for (size_t o = 0; o < s.out; ++o) {
      double acc = b ? b[o] : 0.0;
      for (size_t k = 0; k < s.in; ++k) acc += double(x[i * s.in + k]) * w[o * s.in + k];
      y[i * s.out + o] = static_cast<float>(acc);
    }
}

void linear_backward_naive(const LinearShape& s, const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db, bool accumulate) {
  for (size_t o = 0; o < s.out; ++o)
    for (size_t k = 0; k < s.in; ++k) {
      double acc = accumulate ? dw[o * s.in + k] : 0.0;
      for (size_t i = 0; i < s.n; ++i) acc += double(dy[i * s.out + o]) * x[i * s.in + k];
      dw[o * s.in + k] = static_cast<float>(acc);
    }
  if (dx)
    for (size_t i = 0; i < s.n; ++i)
      for (size_t k = 0; k < s.in; ++k) {
        double acc = 0;
        for (size_t o = 0; o < s.out; ++o) acc += double(dy[i * s.out + o]) * w[o * s.in + k];
        dx[i * s.in + k] = static_cast<float>(acc);
      }
  if (db)
    for (size_t o = 0; o < s.out; ++o) {
      double acc = accumulate ? db[o] : 0.0;
      for (size_t i = 0; i < s.n; ++i) acc += dy[i * s.out + o];
      db[o] = static_cast<float>(acc);
    }
}

}  // namespace dsgd
