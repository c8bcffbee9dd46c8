// Kernels of the linear SVM (one-vs-rest hinge loss), each fast kernel with a naive reference
// beside it (plain loops in double precision) that the tests compare against.
// Notation: B samples, D features, C outputs (C = 1 for binary, else the class count).
// Parameters: w is (D, C) row-major (row j = the C weights of feature j), b is (C).
// Targets: t_ic = +1 if sample i belongs to output c, else -1; binary (C == 1): +1 iff label 1.
// Hinge: loss_i = sum_c max(0, 1 - t_ic s_ic); d loss / d s_ic = -t_ic where t_ic s_ic < 1,
// else 0 (the subgradient 0 at the kink).
// Limits: fast kernels never allocate, throw or check shapes (callers do); float storage,
// float accumulation except the loss sums (double).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsgd {

// One sparse sample: nnz (column, value) pairs, columns ascending.
struct SvmSparseRow {
  const int32_t* cols = nullptr;
  const float* vals = nullptr;
  size_t nnz = 0;
};

// Scratch of the fused dense backward (sized by the caller, never allocated here).
struct SvmDenseScratch {
  float* dwt = nullptr;            // (C, D)
  int32_t* active_rows = nullptr;  // (C, B)
  float* active_coef = nullptr;    // (C, B)
  size_t* active_count = nullptr;  // (C)
};

inline float svm_target(int32_t label, size_t c, size_t C) {
  const bool positive = C == 1 ? label == 1 : static_cast<size_t>(label) == c;
  return positive ? 1.0f : -1.0f;
}

// ---- shared by every path ------------------------------------------------------------------

// s is (B, C), labels (B). Returns sum_i sum_c max(0, 1 - t_ic s_ic).
double svm_hinge_loss_sum(const float* s, const int32_t* labels, size_t B, size_t C);
// s is (B, C), labels (B); ds is (B, C) out: -t_ic * scale where t_ic s_ic < 1, else 0.
// Returns the number of active (non-zero) entries.
size_t svm_hinge_grad(const float* s, const int32_t* labels, size_t B, size_t C, float scale, float* ds);
// ds is (B, C); db is (C) out: the column sums of ds.
void svm_grad_bias(const float* ds, size_t B, size_t C, float* db);
// s is (B, C), labels (B). Returns how many argmax_c s_ic equal the label (binary: s >= 0 is 1).
size_t svm_count_correct(const float* s, const int32_t* labels, size_t B, size_t C);
// a is (rows, cols) row-major; at is (cols, rows) out.
void svm_transpose(const float* a, size_t rows, size_t cols, float* at);

// ---- dense, BLAS -------------------------------------------------------------------------

// x is (B, D) row-major, w is (D, C), b is (C); s is (B, C) out = x w + b (one sgemm; sgemv
// when C = 1).
void svm_scores_dense_blas(const float* x, size_t B, size_t D, const float* w, const float* b, size_t C, float* s);
// x is (B, D), ds is (B, C); dw is (D, C) out = x^T ds (one sgemm; sgemv when C = 1).
void svm_grad_weights_dense_blas(const float* x, size_t B, size_t D, const float* ds, size_t C, float* dw);

// ---- dense, fused (register-blocked, exploits that hinge gradients are sparse) -------------

// x holds B row pointers, each to D floats (rows of a batch buffer or of the dataset);
// wt is (C, D) = w transposed, b is (C); s is (B, C) out = x w + b.
void svm_scores_dense_fused(const float* const* x, size_t B, size_t D, const float* wt, const float* b, size_t C,
                            float* s);
// x holds B row pointers to D floats, ds is (B, C); dw is (D, C) out = x^T ds, computed as
// dwt (C, D) = sum over the non-zero ds_ic of ds_ic x_i (work ~ active terms x D), then
// transposed. scratch is sized for (B, C, D).
void svm_grad_weights_dense_fused(const float* const* x, size_t B, size_t D, const float* ds, size_t C,
                                  const SvmDenseScratch& scratch, float* dw);

// ---- sparse (CSR rows) -------------------------------------------------------------------

// rows (B), w is (D, C), b is (C); s is (B, C) out.
void svm_scores_sparse(const SvmSparseRow* rows, size_t B, const float* w, const float* b, size_t C, float* s);
// rows (B), ds is (B, C); dw is (D, C) out: zeroed (all D*C floats), then the non-zero
// ds_ic x_ij scattered into the rows of the columns each sample touches.
void svm_grad_weights_sparse(const SvmSparseRow* rows, size_t B, const float* ds, size_t C, size_t D, float* dw);

// ---- naive references (double) ----------------------------------------------------------

// x is (B, D), w is (D, C), b is (C); s is (B, C) out. Returns the loss sum (not the mean).
double svm_forward_dense_naive(const float* x, size_t B, size_t D, const double* w, const double* b, size_t C,
                               const int32_t* labels, double* s);
// x is (B, D), s is (B, C) from the forward; dw is (D, C) and db (C) out: the gradient of the
// mean loss over the B samples.
void svm_backward_dense_naive(const float* x, size_t B, size_t D, const double* s, const int32_t* labels, size_t C,
                              double* dw, double* db);
// rows (B), w is (D, C), b is (C); s is (B, C) out. Returns the loss sum.
double svm_forward_sparse_naive(const SvmSparseRow* rows, size_t B, const double* w, const double* b, size_t C,
                                const int32_t* labels, double* s);
// rows (B), s is (B, C); dw is (D, C) and db (C) out: the gradient of the mean loss.
void svm_backward_sparse_naive(const SvmSparseRow* rows, size_t B, size_t D, const double* s, const int32_t* labels,
                               size_t C, double* dw, double* db);

}  // namespace dsgd
