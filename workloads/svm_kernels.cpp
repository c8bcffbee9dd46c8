// Kernels of the linear SVM: BLAS, fused (register-blocked, portable GCC/Clang vector
// extensions, 8 floats wide: one AVX2 register, two SSE registers) and sparse CSR paths,
// with the naive double-precision references beside them. Shapes are documented in
// svm_kernels.hpp and repeated on each kernel.
// Limits: the fused kernels assume GCC or Clang (vector_size); no allocation anywhere.
#include "workloads/svm_kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>

namespace dsgd {

namespace {

// GCC warns (-Wpsabi) that returning v8f without AVX changes the ABI, in the portable build.
// These helpers have internal linkage and are inlined: no call crosses a translation unit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

using v8f = float __attribute__((vector_size(32)));

[[gnu::always_inline]] inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store8(float* p, v8f v) {
  std::memcpy(p, &v, sizeof v);
}
[[gnu::always_inline]] inline v8f splat8(float a) {
  return v8f{a, a, a, a, a, a, a, a};
}
// Keeps a loaded vector in a register: without it GCC folds the load into every FMA that
// uses it (RB loads of the same address), and the loop becomes load-port bound.
[[gnu::always_inline]] inline void pin_in_register(v8f& v) {
#if defined(__x86_64__) && defined(__AVX__)
  asm("" : "+x"(v));
#else
  (void)v;
#endif
}
[[gnu::always_inline]] inline float hsum8(v8f v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// s[r][c] = dot(x[r], wt[c]) for RB rows x CB outputs: RB*CB independent accumulators hide
// the FMA latency; each 8-float step loads RB + CB vectors for RB*CB FMAs. When pf is not
// null, cache lines pf_first, pf_first + pf_stride, ... (16 floats each) of the RB rows it
// points to are prefetched along the way, so later rows arrive while this block computes.
// x: RB row pointers to D floats; wt: CB row pointers to D floats; out is (RB, out_stride).
template <int RB, int CB>
void dot_block(const float* const* x, const float* const* wt, size_t D, float* out, size_t out_stride,
               const float* const* pf, size_t pf_first, size_t pf_stride) {
  v8f acc[RB][CB];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CB; ++c) acc[r][c] = splat8(0.0f);
  size_t j = 0;
  size_t next_pf = pf != nullptr ? 16 * pf_first : D;
  for (; j + 8 <= D; j += 8) {
    if (j == next_pf) {
      for (int r = 0; r < RB; ++r) __builtin_prefetch(pf[r] + j, 0, 3);
      next_pf += 16 * pf_stride;
    }
    v8f xv[RB];
    for (int r = 0; r < RB; ++r) xv[r] = load8(x[r] + j);
    for (int c = 0; c < CB; ++c) {
      v8f wv = load8(wt[c] + j);
      pin_in_register(wv);
      for (int r = 0; r < RB; ++r) acc[r][c] += xv[r] * wv;
    }
  }
  for (int r = 0; r < RB; ++r) {
    for (int c = 0; c < CB; ++c) {
      float sum = hsum8(acc[r][c]);
      for (size_t k = j; k < D; ++k) sum += x[r][k] * wt[c][k];
      out[r * out_stride + c] = sum;
    }
  }
}

// Rows [i, i + RB) against every output, CB outputs at a time (the last block may be
// narrower). The rows `ahead` rows further on are prefetched, their cache lines spread over
// all the output blocks (block b takes lines b, b + nb, ...) so the requests trickle out at
// a rate the miss buffers can sustain instead of in one burst.
template <int RB, int CB>
void dot_row_block(const float* const* x, size_t i, size_t B, size_t ahead, const float* wt, size_t D, size_t C,
                   float* s) {
  const float* pf_rows[RB];
  const bool prefetch = i + ahead + RB <= B;
  if (prefetch)
    for (int r = 0; r < RB; ++r) pf_rows[r] = x[i + ahead + r];
  const float* const* pf = prefetch ? pf_rows : nullptr;
  const size_t blocks = (C + CB - 1) / CB;
  const float* wt_rows[CB];
  size_t c0 = 0;
  size_t block = 0;
  for (; c0 + CB <= C; c0 += CB, ++block) {
    for (int c = 0; c < CB; ++c) wt_rows[c] = wt + (c0 + c) * D;
    dot_block<RB, CB>(x + i, wt_rows, D, s + i * C + c0, C, pf, block, blocks);
  }
  const size_t left = C - c0;  // at most CB - 1 outputs, in one narrower block
  for (size_t c = 0; c < left; ++c) wt_rows[c] = wt + (c0 + c) * D;
  float* out = s + i * C + c0;
  if constexpr (CB > 1) {
    switch (left) {
      case 0: break;
      case 1: dot_block<RB, 1>(x + i, wt_rows, D, out, C, pf, block, blocks); break;
      case 2:
        if constexpr (CB > 2) dot_block<RB, 2>(x + i, wt_rows, D, out, C, pf, block, blocks);
        break;
      case 3:
        if constexpr (CB > 3) dot_block<RB, 3>(x + i, wt_rows, D, out, C, pf, block, blocks);
        break;
      case 4:
        if constexpr (CB > 4) dot_block<RB, 4>(x + i, wt_rows, D, out, C, pf, block, blocks);
        break;
      default: break;
    }
  }
}

template <int RB, int CB>
void dot_all_rows(const float* const* x, size_t B, size_t ahead, const float* wt, size_t D, size_t C, float* s) {
  size_t i = 0;
  for (; i + RB <= B; i += RB) dot_row_block<RB, CB>(x, i, B, ahead, wt, D, C, s);
  for (; i < B; ++i) dot_row_block<1, CB>(x, i, B, 0, wt, D, C, s);
}

// dwt[c][j0 .. j0 + 8*NV) = sum over the active rows k of coef[k] * x[rows[k]][j0 ..].
template <size_t NV>
void axpy_chunk(const float* const* x, const int32_t* rows, const float* coef, size_t n, size_t j0, float* dwt_c) {
  v8f acc[NV];
  for (size_t q = 0; q < NV; ++q) acc[q] = splat8(0.0f);
  for (size_t k = 0; k < n; ++k) {
    const v8f a = splat8(coef[k]);
    const float* xr = x[rows[k]] + j0;
    for (size_t q = 0; q < NV; ++q) acc[q] += a * load8(xr + 8 * q);
  }
  for (size_t q = 0; q < NV; ++q) store8(dwt_c + j0 + 8 * q, acc[q]);
}

// One 8 x 8 block in registers: in[k] is row k, out[k] is column k (unpack, shuffle, 128-bit
// lane swap: what _mm256 code does, spelled with vector extensions).
[[gnu::always_inline]] inline void transpose8x8(const v8f in[8], v8f out[8]) {
  v8f t[8], u[8];
  for (size_t k = 0; k < 4; ++k) {
    t[2 * k] = __builtin_shufflevector(in[2 * k], in[2 * k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * k + 1] = __builtin_shufflevector(in[2 * k], in[2 * k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (size_t k = 0; k < 2; ++k) {
    u[4 * k + 0] = __builtin_shufflevector(t[4 * k], t[4 * k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[4 * k + 1] = __builtin_shufflevector(t[4 * k], t[4 * k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[4 * k + 2] = __builtin_shufflevector(t[4 * k + 1], t[4 * k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[4 * k + 3] = __builtin_shufflevector(t[4 * k + 1], t[4 * k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (size_t k = 0; k < 4; ++k) {
    out[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    out[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

}  // namespace

// ---- shared ---------------------------------------------------------------------------------

// s is (B, C), labels (B).
// Branch-free: about a fifth of the terms are active, at random, so a branch mispredicts.
double svm_hinge_loss_sum(const float* s, const int32_t* labels, size_t B, size_t C) {
  double sum = 0;
  for (size_t i = 0; i < B; ++i) {
    double row = 0;
    for (size_t c = 0; c < C; ++c) {
      const double margin = static_cast<double>(svm_target(labels[i], c, C) * s[i * C + c]);
      row += std::max(1.0 - margin, 0.0);  // this order keeps a NaN margin NaN (divergence check)
    }
    sum += row;
  }
  return sum;
}

// s is (B, C), labels (B); ds is (B, C).
size_t svm_hinge_grad(const float* s, const int32_t* labels, size_t B, size_t C, float scale, float* ds) {
  size_t active = 0;
  for (size_t i = 0; i < B; ++i) {
    for (size_t c = 0; c < C; ++c) {
      const float t = svm_target(labels[i], c, C);
      const bool on = t * s[i * C + c] < 1.0f;
      ds[i * C + c] = on ? -t * scale : 0.0f;  // a select, not a branch
      active += static_cast<size_t>(on);
    }
  }
  return active;
}

// ds is (B, C); db is (C).
void svm_grad_bias(const float* ds, size_t B, size_t C, float* db) {
  for (size_t c = 0; c < C; ++c) db[c] = 0.0f;
  for (size_t i = 0; i < B; ++i)
    for (size_t c = 0; c < C; ++c) db[c] += ds[i * C + c];
}

// s is (B, C), labels (B).
size_t svm_count_correct(const float* s, const int32_t* labels, size_t B, size_t C) {
  size_t correct = 0;
  for (size_t i = 0; i < B; ++i) {
    const float* si = s + i * C;
    int32_t predicted = 0;
    if (C == 1) {
      predicted = si[0] >= 0.0f ? 1 : 0;
    } else {
      for (size_t c = 1; c < C; ++c)
        if (si[c] > si[predicted]) predicted = static_cast<int32_t>(c);
    }
    correct += predicted == labels[i];
  }
  return correct;
}

// a is (rows, cols); at is (cols, rows). Blocks of 8 x 8 in registers, the edges (rows or
// cols not a multiple of 8) element by element. (Measured: 2-3x faster than a scalar tiled
// loop for 784 x 10 and 10 x 784; zero-padded vector edges were slower than scalar ones.)
void svm_transpose(const float* a, size_t rows, size_t cols, float* at) {
  const size_t rows8 = rows - rows % 8;
  const size_t cols8 = cols - cols % 8;
  for (size_t r0 = 0; r0 < rows8; r0 += 8) {
    for (size_t c0 = 0; c0 < cols8; c0 += 8) {
      v8f in[8], out[8];
      for (size_t k = 0; k < 8; ++k) in[k] = load8(a + (r0 + k) * cols + c0);
      transpose8x8(in, out);
      for (size_t k = 0; k < 8; ++k) store8(at + (c0 + k) * rows + r0, out[k]);
    }
    for (size_t c = cols8; c < cols; ++c)
      for (size_t r = r0; r < r0 + 8; ++r) at[c * rows + r] = a[r * cols + c];
  }
  for (size_t r = rows8; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) at[c * rows + r] = a[r * cols + c];
}

// ---- dense, BLAS -------------------------------------------------------------------------

// x is (B, D), w is (D, C), b is (C); s is (B, C).
void svm_scores_dense_blas(const float* x, size_t B, size_t D, const float* w, const float* b, size_t C, float* s) {
  for (size_t i = 0; i < B; ++i) std::memcpy(s + i * C, b, C * sizeof(float));
  if (C == 1) {  // one output: a matrix-vector product (sgemm with N = 1 is far slower)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(B), static_cast<int>(D), 1.0f, x, static_cast<int>(D), w,
                1, 1.0f, s, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(B), static_cast<int>(C), static_cast<int>(D),
              1.0f, x, static_cast<int>(D), w, static_cast<int>(C), 1.0f, s, static_cast<int>(C));
}

// x is (B, D), ds is (B, C); dw is (D, C).
void svm_grad_weights_dense_blas(const float* x, size_t B, size_t D, const float* ds, size_t C, float* dw) {
  if (C == 1) {
    cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(B), static_cast<int>(D), 1.0f, x, static_cast<int>(D), ds,
                1, 0.0f, dw, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(D), static_cast<int>(C), static_cast<int>(B),
              1.0f, x, static_cast<int>(D), ds, static_cast<int>(C), 0.0f, dw, static_cast<int>(C));
}

// ---- dense, fused -------------------------------------------------------------------------

// x: B row pointers to D floats; wt is (C, D), b is (C); s is (B, C).
void svm_scores_dense_fused(const float* const* x, size_t B, size_t D, const float* wt, const float* b, size_t C,
                            float* s) {
  // Rows outermost, so a block of rows is read from memory once and reused from L1 by every
  // output block. Blocks: 2 rows x 5 outputs (10 accumulators) for C >= 5, else wider row
  // blocks for the few outputs; the prefetch runs kPrefetchBlocks row blocks ahead.
  constexpr size_t kPrefetchBlocks = 2;
  switch (C) {
    case 1: dot_all_rows<8, 1>(x, B, 8 * kPrefetchBlocks, wt, D, C, s); break;
    case 2: dot_all_rows<4, 2>(x, B, 4 * kPrefetchBlocks, wt, D, C, s); break;
    case 3: dot_all_rows<4, 3>(x, B, 4 * kPrefetchBlocks, wt, D, C, s); break;
    case 4: dot_all_rows<3, 4>(x, B, 3 * kPrefetchBlocks, wt, D, C, s); break;
    default: dot_all_rows<2, 5>(x, B, 2 * kPrefetchBlocks, wt, D, C, s); break;
  }
  for (size_t i = 0; i < B; ++i)
    for (size_t c = 0; c < C; ++c) s[i * C + c] += b[c];
}

// x: B row pointers to D floats, ds is (B, C); dw is (D, C); scratch dwt (C, D), lists (C, B).
void svm_grad_weights_dense_fused(const float* const* x, size_t B, size_t D, const float* ds, size_t C,
                                  const SvmDenseScratch& scratch, float* dw) {
  // Active (non-zero) gradient terms of each output, as (row, coefficient) lists.
  for (size_t c = 0; c < C; ++c) {
    int32_t* rows = scratch.active_rows + c * B;
    float* coef = scratch.active_coef + c * B;
    size_t n = 0;
    for (size_t i = 0; i < B; ++i) {  // branch-free compaction: write always, advance if active
      const float g = ds[i * C + c];
      rows[n] = static_cast<int32_t>(i);
      coef[n] = g;
      n += static_cast<size_t>(g != 0.0f);
    }
    scratch.active_count[c] = n;
  }

  // Feature chunks of 64 floats outermost, so the chunk of every active row stays in L1
  // across the outputs; 8 accumulators per output hide the FMA latency.
  constexpr size_t kChunk = 64;
  size_t j0 = 0;
  for (; j0 + kChunk <= D; j0 += kChunk) {
    for (size_t c = 0; c < C; ++c) {
      const size_t n = scratch.active_count[c];
      axpy_chunk<8>(x, scratch.active_rows + c * B, scratch.active_coef + c * B, n, j0, scratch.dwt + c * D);
    }
  }
  for (; j0 + 8 <= D; j0 += 8) {
    for (size_t c = 0; c < C; ++c) {
      const size_t n = scratch.active_count[c];
      axpy_chunk<1>(x, scratch.active_rows + c * B, scratch.active_coef + c * B, n, j0, scratch.dwt + c * D);
    }
  }
  for (size_t c = 0; c < C; ++c) {
    const size_t n = scratch.active_count[c];
    const int32_t* rows = scratch.active_rows + c * B;
    const float* coef = scratch.active_coef + c * B;
    for (size_t j = j0; j < D; ++j) {
      float sum = 0.0f;
      for (size_t k = 0; k < n; ++k) sum += coef[k] * x[rows[k]][j];
      scratch.dwt[c * D + j] = sum;
    }
  }
  svm_transpose(scratch.dwt, C, D, dw);
}

// ---- sparse ---------------------------------------------------------------------------------

// rows (B), w is (D, C), b is (C); s is (B, C).
void svm_scores_sparse(const SvmSparseRow* rows, size_t B, const float* w, const float* b, size_t C, float* s) {
  for (size_t i = 0; i < B; ++i) {
    const SvmSparseRow& row = rows[i];
    float* si = s + i * C;
    if (C == 1) {
      // Four partial sums: the gathers of w are independent, so their misses overlap.
      float p0 = 0, p1 = 0, p2 = 0, p3 = 0;
      size_t k = 0;
      for (; k + 4 <= row.nnz; k += 4) {
        p0 += row.vals[k] * w[row.cols[k]];
        p1 += row.vals[k + 1] * w[row.cols[k + 1]];
        p2 += row.vals[k + 2] * w[row.cols[k + 2]];
        p3 += row.vals[k + 3] * w[row.cols[k + 3]];
      }
      for (; k < row.nnz; ++k) p0 += row.vals[k] * w[row.cols[k]];
      si[0] = b[0] + ((p0 + p1) + (p2 + p3));
      continue;
    }
    for (size_t c = 0; c < C; ++c) si[c] = b[c];
    for (size_t k = 0; k < row.nnz; ++k) {
      const float v = row.vals[k];
      const float* wr = w + static_cast<size_t>(row.cols[k]) * C;
      for (size_t c = 0; c < C; ++c) si[c] += v * wr[c];
    }
  }
}

// rows (B), ds is (B, C); dw is (D, C).
void svm_grad_weights_sparse(const SvmSparseRow* rows, size_t B, const float* ds, size_t C, size_t D, float* dw) {
  std::memset(dw, 0, D * C * sizeof(float));
  for (size_t i = 0; i < B; ++i) {
    const float* gi = ds + i * C;
    bool any = false;
    for (size_t c = 0; c < C; ++c) any |= gi[c] != 0.0f;
    if (!any) continue;
    const SvmSparseRow& row = rows[i];
    if (C == 1) {
      const float g = gi[0];
      for (size_t k = 0; k < row.nnz; ++k) dw[row.cols[k]] += row.vals[k] * g;
      continue;
    }
    for (size_t k = 0; k < row.nnz; ++k) {
      const float v = row.vals[k];
      float* dr = dw + static_cast<size_t>(row.cols[k]) * C;
      for (size_t c = 0; c < C; ++c) dr[c] += v * gi[c];
    }
  }
}

// ---- naive references -----------------------------------------------------------------------

namespace {

double naive_hinge_row(const double* si, int32_t label, size_t C) {
  double loss = 0;
  for (size_t c = 0; c < C; ++c) {
    const double margin = svm_target(label, c, C) * si[c];
    if (margin < 1.0) loss += 1.0 - margin;
  }
  return loss;
}

// d (mean loss over B samples) / d s_ic.
double naive_dscore(double s_ic, int32_t label, size_t c, size_t C, size_t B) {
  const double t = svm_target(label, c, C);
  return t * s_ic < 1.0 ? -t / static_cast<double>(B) : 0.0;
}

}  // namespace

// x is (B, D), w is (D, C), b is (C); s is (B, C).
double svm_forward_dense_naive(const float* x, size_t B, size_t D, const double* w, const double* b, size_t C,
                               const int32_t* labels, double* s) {
  double loss = 0;
  for (size_t i = 0; i < B; ++i) {
    double* si = s + i * C;
    for (size_t c = 0; c < C; ++c) {
      double sum = b[c];
      for (size_t j = 0; j < D; ++j) sum += static_cast<double>(x[i * D + j]) * w[j * C + c];
      si[c] = sum;
    }
    loss += naive_hinge_row(si, labels[i], C);
  }
  return loss;
}

// x is (B, D), s is (B, C); dw is (D, C), db is (C).
void svm_backward_dense_naive(const float* x, size_t B, size_t D, const double* s, const int32_t* labels, size_t C,
                              double* dw, double* db) {
  std::fill(dw, dw + D * C, 0.0);
  std::fill(db, db + C, 0.0);
  for (size_t i = 0; i < B; ++i) {
    for (size_t c = 0; c < C; ++c) {
      const double g = naive_dscore(s[i * C + c], labels[i], c, C, B);
      db[c] += g;
      for (size_t j = 0; j < D; ++j) dw[j * C + c] += static_cast<double>(x[i * D + j]) * g;
    }
  }
}

// rows (B), w is (D, C), b is (C); s is (B, C).
double svm_forward_sparse_naive(const SvmSparseRow* rows, size_t B, const double* w, const double* b, size_t C,
                                const int32_t* labels, double* s) {
  double loss = 0;
  for (size_t i = 0; i < B; ++i) {
    double* si = s + i * C;
    for (size_t c = 0; c < C; ++c) {
      double sum = b[c];
      for (size_t k = 0; k < rows[i].nnz; ++k)
        sum += static_cast<double>(rows[i].vals[k]) * w[static_cast<size_t>(rows[i].cols[k]) * C + c];
      si[c] = sum;
    }
    loss += naive_hinge_row(si, labels[i], C);
  }
  return loss;
}

// rows (B), s is (B, C); dw is (D, C), db is (C).
void svm_backward_sparse_naive(const SvmSparseRow* rows, size_t B, size_t D, const double* s, const int32_t* labels,
                               size_t C, double* dw, double* db) {
  std::fill(dw, dw + D * C, 0.0);
  std::fill(db, db + C, 0.0);
  for (size_t i = 0; i < B; ++i) {
    for (size_t c = 0; c < C; ++c) {
      const double dsc = naive_dscore(s[i * C + c], labels[i], c, C, B);
      db[c] += dsc;
      for (size_t k = 0; k < rows[i].nnz; ++k)
        dw[static_cast<size_t>(rows[i].cols[k]) * C + c] += static_cast<double>(rows[i].vals[k]) * dsc;
    }
  }
}

}  // namespace dsgd
