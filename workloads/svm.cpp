// The `svm` workload (see svm.hpp): buffers, batch assembly, and the forward / backward /
// evaluate passes over the kernels of svm_kernels.cpp.
// Limits: load_batch/forward/backward check only cheap preconditions (batch size, feature
// count, call order) and throw dsgd::Error on misuse; they never allocate.
#include "workloads/svm.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {

namespace {
constexpr uint64_t kStreamInit = 0x5e1;
constexpr double kInitStd = 0.01;
}  // namespace

SvmWorkload::SvmWorkload(size_t features, int classes, bool dense_batches, double nnz_per_sample)
    : features_(features),
      outputs_(classes == 2 ? 1 : static_cast<size_t>(classes)),
      dense_batches_(dense_batches),
      nnz_per_sample_(nnz_per_sample),
      param_count_(features * outputs_ + outputs_) {
  layers_.push_back(LayerView{"weights", 0, features_ * outputs_});
  layers_.push_back(LayerView{"bias", features_ * outputs_, outputs_});
}

void SvmWorkload::do_init_params(float* params, uint64_t seed) const {
  Rng rng(rng_derive_seed(seed, kStreamInit));
  const size_t nw = features_ * outputs_;
  for (size_t k = 0; k < nw; ++k) params[k] = static_cast<float>(kInitStd * rng.normal());
  for (size_t c = 0; c < outputs_; ++c) params[nw + c] = 0.0f;
}

void SvmWorkload::reserve(size_t max_batch) {
  max_batch_ = max_batch;
  const size_t C = outputs_;
  if (dense_batches_) {
    batch_x_.assign(max_batch * features_, 0.0f);
    batch_rows_.assign(max_batch, nullptr);
    wt_.assign(C * features_, 0.0f);
    dwt_.assign(C * features_, 0.0f);
    active_rows_.assign(C * max_batch, 0);
    active_coef_.assign(C * max_batch, 0.0f);
    active_count_.assign(C, 0);
    eval_wt_.assign(C * features_, 0.0f);
  }
  batch_sparse_.resize(max_batch);
  batch_labels_.assign(max_batch, 0);
  scores_.assign(max_batch * C, 0.0f);
  dscores_.assign(max_batch * C, 0.0f);
  eval_scores_.assign(kEvalChunk * C, 0.0f);
  eval_rows_.resize(kEvalChunk);
  eval_sparse_.resize(kEvalChunk);
  batch_kind_ = BatchKind::batch_none;
  have_scores_ = false;
}

double SvmWorkload::reserve_bytes(size_t max_batch) const {
  // reserve()'s buffers, in its order.
  const double b = static_cast<double>(max_batch), C = static_cast<double>(outputs_),
               F = static_cast<double>(features_), E = static_cast<double>(kEvalChunk);
  double bytes = 0;
  if (dense_batches_)
    bytes += b * F * sizeof(float) + b * sizeof(const float*) + 2 * C * F * sizeof(float) +
             C * b * (sizeof(int32_t) + sizeof(float)) + C * sizeof(size_t) + C * F * sizeof(float);
  bytes += b * (sizeof(SvmSparseRow) + sizeof(int32_t) + 2 * C * sizeof(float));
  bytes += E * (C * sizeof(float) + sizeof(const float*) + sizeof(SvmSparseRow));
  return bytes;
}

// Copies the rows batch_rows_ points at into batch_x_ and points batch_rows_ there.
void SvmWorkload::gather_dense_batch(size_t n) {
  const size_t row_bytes = features_ * sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    float* dst = batch_x_.data() + i * features_;
    std::memcpy(dst, batch_rows_[i], row_bytes);
    batch_rows_[i] = dst;
  }
  batch_kind_ = BatchKind::batch_dense_copy;
}

void SvmWorkload::require_reserved(size_t n, const char* what) const {
  if (n == 0 || n > max_batch_) {
    DSGD_THROW(Error, "call reserve(max_batch) with the largest batch first",
               "svm: {} of {} samples, but reserve() sized the buffers for {}", what, n, max_batch_);
  }
}

void SvmWorkload::load_batch(const Dataset& ds, const uint32_t* idx, size_t n) {
  require_reserved(n, "load_batch");
  if (ds.features != features_) {
    DSGD_THROW(Error, "train and evaluate on datasets with the same feature count",
               "svm: dataset {} has {} features, the model {}", ds.name, ds.features, features_);
  }
  if (ds.sparse) {
    for (size_t i = 0; i < n; ++i) {
      const size_t r = idx[i];
      const auto begin = static_cast<size_t>(ds.row_ptr[r]);
      const auto end = static_cast<size_t>(ds.row_ptr[r + 1]);
      batch_sparse_[i] = SvmSparseRow{ds.col_idx.data() + begin, ds.values.data() + begin, end - begin};
      batch_labels_[i] = ds.labels[r];
    }
    batch_kind_ = BatchKind::batch_sparse;
  } else {
    if (batch_x_.empty()) {
      DSGD_THROW(Error, "create the workload from a dense training set",
                 "svm: dense batch from {} but the workload was created for sparse data", ds.name);
    }
    // Fused kernels read the rows in place (they prefetch ahead, so the memory traffic
    // overlaps the arithmetic); BLAS needs one contiguous matrix, so copy.
    for (size_t i = 0; i < n; ++i) {
      batch_rows_[i] = ds.dense.data() + size_t{idx[i]} * features_;
      batch_labels_[i] = ds.labels[idx[i]];
    }
    batch_kind_ = BatchKind::batch_dense_rows;
    if (dense_kernel_ == SvmDenseKernel::svm_dense_blas) gather_dense_batch(n);
  }
  batch_n_ = n;
  have_scores_ = false;
}

double SvmWorkload::do_forward(const float* params) {
  if (batch_kind_ == BatchKind::batch_none) {
    DSGD_THROW(Error, "call load_batch() before forward()", "svm: forward() without a loaded batch");
  }
  const size_t n = batch_n_;
  const size_t C = outputs_;
  const float* w = params;
  const float* b = params + features_ * C;
  if (batch_kind_ == BatchKind::batch_sparse) {
    svm_scores_sparse(batch_sparse_.data(), n, w, b, C, scores_.data());
  } else if (dense_kernel_ == SvmDenseKernel::svm_dense_blas) {
    if (batch_kind_ == BatchKind::batch_dense_rows) gather_dense_batch(n);
    svm_scores_dense_blas(batch_x_.data(), n, features_, w, b, C, scores_.data());
  } else {
    svm_transpose(w, features_, C, wt_.data());
    svm_scores_dense_fused(batch_rows_.data(), n, features_, wt_.data(), b, C, scores_.data());
  }
  have_scores_ = true;
  return svm_hinge_loss_sum(scores_.data(), batch_labels_.data(), n, C) / static_cast<double>(n);
}

void SvmWorkload::do_backward(const float* params, float* grads, const LayerHook& hook) {
  if (!have_scores_) {
    DSGD_THROW(Error, "call forward() on the loaded batch before backward()",
               "svm: backward() without a forward() of the current batch");
  }
  const size_t n = batch_n_;
  const size_t C = outputs_;
  last_active_terms_ =
      svm_hinge_grad(scores_.data(), batch_labels_.data(), n, C, 1.0f / static_cast<float>(n), dscores_.data());
  // Layer 1 (bias) first: its gradient only needs the score gradients.
  svm_grad_bias(dscores_.data(), n, C, grads + layers_[kLayerBias].offset);
  hook(kLayerBias);
  float* dw = grads + layers_[kLayerWeights].offset;
  if (batch_kind_ == BatchKind::batch_sparse) {
    svm_grad_weights_sparse(batch_sparse_.data(), n, dscores_.data(), C, features_, dw);
  } else if (dense_kernel_ == SvmDenseKernel::svm_dense_blas) {
    if (batch_kind_ == BatchKind::batch_dense_rows) gather_dense_batch(n);
    svm_grad_weights_dense_blas(batch_x_.data(), n, features_, dscores_.data(), C, dw);
  } else {
    const SvmDenseScratch scratch{dwt_.data(), active_rows_.data(), active_coef_.data(), active_count_.data()};
    svm_grad_weights_dense_fused(batch_rows_.data(), n, features_, dscores_.data(), C, scratch, dw);
  }
  hook(kLayerWeights);
}

EvalSums SvmWorkload::do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) {
  EvalSums sums;
  if (begin >= end) return sums;
  if (ds.features != features_) {
    DSGD_THROW(Error, "evaluate on a dataset with the model's feature count",
               "svm: dataset {} has {} features, the model {}", ds.name, ds.features, features_);
  }
  if (end > ds.rows) {
    DSGD_THROW(Error, "", "svm: evaluate range [{}, {}) is beyond the {} rows of {}", begin, end, ds.rows, ds.name);
  }
  const size_t C = outputs_;
  // Not part of the step: allocate here if reserve() has not been called.
  if (eval_scores_.size() < kEvalChunk * C) eval_scores_.assign(kEvalChunk * C, 0.0f);
  if (eval_rows_.size() < kEvalChunk) eval_rows_.resize(kEvalChunk);
  if (eval_sparse_.size() < kEvalChunk) eval_sparse_.resize(kEvalChunk);
  const float* w = params;
  const float* b = params + features_ * C;
  const bool fused = !ds.sparse && dense_kernel_ == SvmDenseKernel::svm_dense_fused;
  if (fused) {
    if (eval_wt_.size() < C * features_) eval_wt_.assign(C * features_, 0.0f);
    svm_transpose(w, features_, C, eval_wt_.data());
  }
  for (size_t r0 = begin; r0 < end; r0 += kEvalChunk) {
    const size_t n = std::min(kEvalChunk, end - r0);
    float* s = eval_scores_.data();
    if (ds.sparse) {
      for (size_t i = 0; i < n; ++i) {
        const auto rb = static_cast<size_t>(ds.row_ptr[r0 + i]);
        const auto re = static_cast<size_t>(ds.row_ptr[r0 + i + 1]);
        eval_sparse_[i] = SvmSparseRow{ds.col_idx.data() + rb, ds.values.data() + rb, re - rb};
      }
      svm_scores_sparse(eval_sparse_.data(), n, w, b, C, s);
    } else if (fused) {
      for (size_t i = 0; i < n; ++i) eval_rows_[i] = ds.dense.data() + (r0 + i) * features_;
      svm_scores_dense_fused(eval_rows_.data(), n, features_, eval_wt_.data(), b, C, s);
    } else {
      svm_scores_dense_blas(ds.dense.data() + r0 * features_, n, features_, w, b, C, s);
    }
    const int32_t* labels = ds.labels.data() + r0;
    sums.loss_sum += svm_hinge_loss_sum(s, labels, n, C);
    sums.correct += static_cast<double>(svm_count_correct(s, labels, n, C));
    sums.count += static_cast<double>(n);
  }
  return sums;
}

double SvmWorkload::flops_per_sample() const {
  return 4.0 * nnz_per_sample_ * static_cast<double>(outputs_);
}

std::unique_ptr<Workload> svm_create(const Dataset& train) {
  if (train.classes < 2) {
    DSGD_THROW(InputError, "the svm needs a dataset with at least two classes", "svm: dataset {} has {} class(es)",
               train.name, train.classes);
  }
  if (train.features == 0 || train.rows == 0) {
    DSGD_THROW(InputError, "check the dataset spec", "svm: dataset {} is empty ({} rows, {} features)", train.name,
               train.rows, train.features);
  }
  const double nnz_per_sample = train.sparse ? static_cast<double>(train.nnz()) / static_cast<double>(train.rows)
                                             : static_cast<double>(train.features);
  return std::make_unique<SvmWorkload>(train.features, train.classes, !train.sparse, nnz_per_sample);
}

}  // namespace dsgd
