// The `svm` workload: a linear one-vs-rest SVM with hinge loss, on dense or sparse (CSR) data.
//   outputs C = 1 when classes == 2 (label 1 is +1, label 0 is -1), else C = classes
//   scores  s = x^T W + b, W is (features, C) row-major, b is (C)
//   loss    mean over the batch of sum_c max(0, 1 - t_c s_c), t_c = +1 for the sample's class
// No regulariser in the loss: the L2 term of the SVM objective comes from the optimizer's
// weight decay (the usual SVM objective regularises the weights layer only).
// Parameters: one flat buffer, layer 0 "weights" (features x C), layer 1 "bias" (C); backward
// finishes the bias first (hook(1)) and the weights last (hook(0)).
// Batches: sparse batches, and dense ones with the fused kernels (the default, faster by
// measurement in bench_svm), are row pointers into the dataset, which must outlive the step;
// the fused forward prefetches the rows, so streaming them from memory overlaps the
// arithmetic. Dense batches with BLAS are gathered into one contiguous (B, features) buffer.
// Sparse backward zeroes all features x C gradient floats every step (4 MB for d = 1e6,
// binary): the flat gradient is what gets all-reduced, so it must be complete.
// Limits: single-threaded kernels (BLAS threads as the caller configures them); labels must
// be in [0, classes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "workloads/svm_kernels.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

// Which dense kernels forward/backward/evaluate use (sparse data has one path).
enum class SvmDenseKernel {
  svm_dense_blas,   // cblas_sgemm (sgemv for C = 1) on a gathered batch
  svm_dense_fused,  // register-blocked dot products + backward over active hinge terms only
};

class SvmWorkload final : public Workload {
 public:
  // features, classes (>= 2) and the mean non-zeros per sample (for flops_per_sample);
  // dense_batches: whether reserve() allocates the dense (max_batch, features) batch buffer.
  SvmWorkload(size_t features, int classes, bool dense_batches, double nnz_per_sample);

  std::string name() const override { return "svm"; }
  const std::vector<LayerView>& layers() const override { return layers_; }
  size_t param_count() const override { return param_count_; }
  void reserve(size_t max_batch) override;
  double reserve_bytes(size_t max_batch) const override;
  void load_batch(const Dataset& ds, const uint32_t* idx, size_t n) override;
  // 2 nnz C for the forward (x^T W) + 2 nnz C for the weight gradient = 4 nnz C, where nnz
  // is features for dense data and the mean non-zeros per row for sparse data; the O(C)
  // bias and hinge terms are left out. A nominal count: the fused and sparse backward skip
  // inactive hinge terms, so rates computed from it are effective rates.
  double flops_per_sample() const override;

  size_t outputs() const { return outputs_; }
  size_t features() const { return features_; }
  void set_dense_kernel(SvmDenseKernel kernel) { dense_kernel_ = kernel; }
  SvmDenseKernel dense_kernel() const { return dense_kernel_; }
  // Non-zero hinge gradient terms (sample, output) of the last backward.
  size_t last_active_terms() const { return last_active_terms_; }

  static constexpr size_t kLayerWeights = 0;
  static constexpr size_t kLayerBias = 1;
  static constexpr size_t kEvalChunk = 256;

 protected:
  void do_init_params(float* params, uint64_t seed) const override;
  double do_forward(const float* params) override;
  void do_backward(const float* params, float* grads, const LayerHook& hook) override;
  EvalSums do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) override;

 private:
  enum class BatchKind { batch_none, batch_dense_rows, batch_dense_copy, batch_sparse };

  void gather_dense_batch(size_t n);
  void require_reserved(size_t n, const char* what) const;

  size_t features_;
  size_t outputs_;
  bool dense_batches_;
  double nnz_per_sample_;
  size_t param_count_;
  std::vector<LayerView> layers_;
  SvmDenseKernel dense_kernel_ = SvmDenseKernel::svm_dense_fused;

  // Step buffers, sized by reserve(max_batch).
  size_t max_batch_ = 0;
  BatchKind batch_kind_ = BatchKind::batch_none;
  size_t batch_n_ = 0;
  bool have_scores_ = false;
  std::vector<float> batch_x_;              // (max_batch, features), dense batches only
  std::vector<const float*> batch_rows_;    // (max_batch) rows of the batch: dataset or batch_x_
  std::vector<SvmSparseRow> batch_sparse_;  // (max_batch)
  std::vector<int32_t> batch_labels_;       // (max_batch)
  std::vector<float> scores_;               // (max_batch, C)
  std::vector<float> dscores_;              // (max_batch, C)
  std::vector<float> wt_;                   // (C, features), dense fused forward
  std::vector<float> dwt_;                  // (C, features), dense fused backward
  std::vector<int32_t> active_rows_;        // (C, max_batch)
  std::vector<float> active_coef_;          // (C, max_batch)
  std::vector<size_t> active_count_;        // (C)
  size_t last_active_terms_ = 0;

  // Evaluation buffers (separate, so evaluate() between forward and backward is harmless).
  std::vector<float> eval_scores_;         // (kEvalChunk, C)
  std::vector<const float*> eval_rows_;    // (kEvalChunk)
  std::vector<SvmSparseRow> eval_sparse_;  // (kEvalChunk)
  std::vector<float> eval_wt_;             // (C, features), dense data only
};

// Creates the svm workload sized for `train` (features, classes, dense or sparse); throws
// InputError when the dataset has fewer than two classes.
std::unique_ptr<Workload> svm_create(const Dataset& train);

}  // namespace dsgd
