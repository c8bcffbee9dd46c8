// Tests of the svm workload and its kernels: gradients against central finite differences,
// fast kernels against the naive double-precision references, the layer-hook protocol,
// evaluation sums on a hand-built example, learning on synthetic data, determinism, and the
// workload registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/run_config.hpp"
#include "float_compare.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/svm.hpp"
#include "workloads/svm_kernels.hpp"
#include "workloads/workload.hpp"

using dsgd::Dataset;
using dsgd::Rng;
using dsgd::SvmDenseKernel;
using dsgd::SvmSparseRow;
using dsgd::SvmWorkload;

namespace {

// Random dense data: values in [-1, 1), labels uniform in [0, classes).
Dataset make_dense(size_t rows, size_t features, int classes, uint64_t seed) {
  Rng rng(seed);
  Dataset ds;
  ds.name = "test/dense";
  ds.rows = rows;
  ds.features = features;
  ds.classes = classes;
  ds.dense.resize(rows * features);
  for (float& v : ds.dense) v = static_cast<float>(2.0 * rng.uniform() - 1.0);
  ds.labels.resize(rows);
  for (int32_t& l : ds.labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
  return ds;
}

// Random CSR data: each row has 1..max_nnz distinct ascending columns, values in [-1, 1).
Dataset make_sparse(size_t rows, size_t features, int classes, size_t max_nnz, uint64_t seed) {
  Rng rng(seed);
  Dataset ds;
  ds.name = "test/sparse";
  ds.rows = rows;
  ds.features = features;
  ds.classes = classes;
  ds.sparse = true;
  ds.row_ptr.push_back(0);
  for (size_t i = 0; i < rows; ++i) {
    std::vector<int32_t> cols;
    const size_t k = 1 + rng.below(max_nnz);
    for (size_t t = 0; t < k; ++t) cols.push_back(static_cast<int32_t>(rng.below(features)));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int32_t c : cols) {
      ds.col_idx.push_back(c);
      ds.values.push_back(static_cast<float>(2.0 * rng.uniform() - 1.0));
    }
    ds.row_ptr.push_back(static_cast<int64_t>(ds.values.size()));
    ds.labels.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes))));
  }
  return ds;
}

std::vector<float> random_params(size_t count, double scale, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> p(count);
  for (float& v : p) v = static_cast<float>(scale * (2.0 * rng.uniform() - 1.0));
  return p;
}

std::vector<SvmSparseRow> sparse_rows(const Dataset& ds) {
  std::vector<SvmSparseRow> rows(ds.rows);
  for (size_t i = 0; i < ds.rows; ++i) {
    const auto b = static_cast<size_t>(ds.row_ptr[i]);
    rows[i] = SvmSparseRow{ds.col_idx.data() + b, ds.values.data() + b, static_cast<size_t>(ds.row_ptr[i + 1]) - b};
  }
  return rows;
}

// Tolerances of the fast kernels against the naive references: float_compare.hpp's
// float_sums_close (each score or weight-gradient entry, a sum of k terms, within
// 4·ε·sqrt(k)·Σ|t_i|; Σ|t_i| from the naive forward on |x|, |w|, |b|, or summed here for the
// gradients), so the check scales with the feature count (D up to 3000) and the batch.

std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}
std::vector<double> abs_of(const std::vector<double>& v) {
  std::vector<double> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}
// ds with every feature value replaced by its absolute value.
Dataset abs_dataset(Dataset ds) {
  for (float& v : ds.dense) v = std::fabs(v);
  for (float& v : ds.values) v = std::fabs(v);
  return ds;
}
// Σ_i |x_id|·|g_ic| for the weight gradient dw (D, C) = xᵀ g, dense x (B, D), g (B, C).
std::vector<float> dense_grad_abs(const float* x, const std::vector<float>& g, size_t B, size_t D, size_t C) {
  std::vector<double> a(D * C, 0.0);
  for (size_t i = 0; i < B; ++i)
    for (size_t d = 0; d < D; ++d)
      for (size_t c = 0; c < C; ++c) a[d * C + c] += std::fabs(double(x[i * D + d]) * g[i * C + c]);
  return to_float(a);
}

// Naive double-precision forward over all rows of ds; returns the loss sum, fills s (B, C).
double naive_forward(const Dataset& ds, const std::vector<double>& params, size_t C, std::vector<double>& s) {
  s.assign(ds.rows * C, 0.0);
  const double* w = params.data();
  const double* b = params.data() + ds.features * C;
  if (ds.sparse) {
    const std::vector<SvmSparseRow> rows = sparse_rows(ds);
    return dsgd::svm_forward_sparse_naive(rows.data(), ds.rows, w, b, C, ds.labels.data(), s.data());
  }
  return dsgd::svm_forward_dense_naive(ds.dense.data(), ds.rows, ds.features, w, b, C, ds.labels.data(), s.data());
}

void naive_backward(const Dataset& ds, const std::vector<double>& s, size_t C, std::vector<double>& grads) {
  grads.assign(ds.features * C + C, 0.0);
  double* dw = grads.data();
  double* db = grads.data() + ds.features * C;
  if (ds.sparse) {
    const std::vector<SvmSparseRow> rows = sparse_rows(ds);
    dsgd::svm_backward_sparse_naive(rows.data(), ds.rows, ds.features, s.data(), ds.labels.data(), C, dw, db);
  } else {
    dsgd::svm_backward_dense_naive(ds.dense.data(), ds.rows, ds.features, s.data(), ds.labels.data(), C, dw, db);
  }
}

double max_abs_feature(const Dataset& ds) {
  double m = 0;
  for (float v : ds.sparse ? ds.values : ds.dense) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// Smallest distance of any margin t*s to the hinge kink at 1.
double min_kink_gap(const Dataset& ds, const std::vector<double>& s, size_t C) {
  double gap = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < ds.rows; ++i)
    for (size_t c = 0; c < C; ++c)
      gap = std::min(gap, std::fabs(1.0 - dsgd::svm_target(ds.labels[i], c, C) * s[i * C + c]));
  return gap;
}

std::vector<uint32_t> iota_indices(size_t n) {
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  return idx;
}

struct Case {
  bool sparse;
  int classes;
  SvmDenseKernel kernel;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.sparse ? "sparse" : "dense") << ", classes " << c.classes << ", "
      << (c.kernel == SvmDenseKernel::svm_dense_blas ? "blas" : "fused");
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = c.sparse ? "sparse" : (c.kernel == SvmDenseKernel::svm_dense_blas ? "dense_blas" : "dense_fused");
  return name + (c.classes == 2 ? "_binary" : "_classes" + std::to_string(c.classes));
}

class SvmGradient : public testing::TestWithParam<Case> {
 protected:
  // A small problem whose margins all stay at least `min_gap_over_x * max|x|` away from the
  // kink, so a finite-difference step h <= that bound never crosses it. Draws seeds in a
  // fixed order until one qualifies (deterministic).
  void make_problem(double min_h) {
    const Case& c = GetParam();
    for (uint64_t seed = 1; seed < 200; ++seed) {
      ds_ = c.sparse ? make_sparse(8, 13, c.classes, 6, seed) : make_dense(8, 13, c.classes, seed);
      C_ = c.classes == 2 ? 1 : static_cast<size_t>(c.classes);
      const std::vector<float> pf = random_params(ds_.features * C_ + C_, 0.6, seed + 1000);
      params_.assign(pf.begin(), pf.end());
      std::vector<double> s;
      naive_forward(ds_, params_, C_, s);
      // Perturbing one weight by h moves a score by at most h*max|x|, a bias by h.
      h_ = std::min(1e-2, 0.5 * min_kink_gap(ds_, s, C_) / std::max(1.0, max_abs_feature(ds_)));
      if (h_ >= min_h) return;
    }
    FAIL() << "no seed gave margins away from the kink";
  }

  Dataset ds_;
  size_t C_ = 1;
  std::vector<double> params_;
  double h_ = 0;
};

}  // namespace

// ---- finite differences -----------------------------------------------------------------------

// The naive reference against central differences, all in double: the loss is piecewise
// linear in the parameters, so away from a kink the central difference is exact up to
// rounding (~1e-16 / h).
TEST_P(SvmGradient, NaiveReferenceMatchesFiniteDifferencesInDouble) {
  make_problem(1e-4);
  std::vector<double> s, grads;
  naive_forward(ds_, params_, C_, s);
  naive_backward(ds_, s, C_, grads);
  const double n = static_cast<double>(ds_.rows);
  for (size_t k = 0; k < params_.size(); ++k) {
    std::vector<double> p = params_;
    p[k] = params_[k] + h_;
    const double up = naive_forward(ds_, p, C_, s) / n;
    p[k] = params_[k] - h_;
    const double down = naive_forward(ds_, p, C_, s) / n;
    EXPECT_NEAR(grads[k], (up - down) / (2 * h_), 1e-9) << "parameter " << k;
  }
}

// The workload (float, the fast kernels) against central differences of its own forward().
// Tolerance: changing one parameter by h changes only the scores of one output column; each
// float score carries a rounding error of a few 1e-7 (|s| = O(1), 13 terms), so the mean loss
// difference is off by < 1e-6 and the quotient by < 1e-6 / (2h) <= 2.5e-4 for h >= 2e-3.
TEST_P(SvmGradient, WorkloadMatchesFiniteDifferencesInFloat) {
  make_problem(2e-3);
  const float hf = static_cast<float>(h_);
  auto wl = dsgd::svm_create(ds_);
  static_cast<SvmWorkload&>(*wl).set_dense_kernel(GetParam().kernel);
  wl->reserve(ds_.rows);
  const std::vector<uint32_t> idx = iota_indices(ds_.rows);
  wl->load_batch(ds_, idx.data(), idx.size());
  std::vector<float> params(params_.begin(), params_.end());
  ASSERT_EQ(params.size(), wl->param_count());
  std::vector<float> grads(params.size());
  wl->forward(params.data());
  wl->backward(params.data(), grads.data(), dsgd::LayerHook{});
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<float> p = params;
    p[k] = params[k] + hf;
    const double up = wl->forward(p.data());
    p[k] = params[k] - hf;
    const double down = wl->forward(p.data());
    // (p[k] + h) - (p[k] - h) is not exactly 2h in float: divide by the real step.
    const double step = static_cast<double>(params[k] + hf) - static_cast<double>(params[k] - hf);
    EXPECT_NEAR(grads[k], (up - down) / step, 5e-4) << "parameter " << k;
  }
}

// The workload's float gradient against the naive double gradient at the same parameters.
TEST_P(SvmGradient, WorkloadMatchesNaiveReference) {
  make_problem(1e-6);
  auto wl = dsgd::svm_create(ds_);
  static_cast<SvmWorkload&>(*wl).set_dense_kernel(GetParam().kernel);
  wl->reserve(ds_.rows);
  const std::vector<uint32_t> idx = iota_indices(ds_.rows);
  wl->load_batch(ds_, idx.data(), idx.size());
  std::vector<float> params(params_.begin(), params_.end());
  std::vector<float> grads(params.size());
  const double loss = wl->forward(params.data());
  wl->backward(params.data(), grads.data(), dsgd::LayerHook{});
  std::vector<double> s, ref;
  const double ref_loss = naive_forward(ds_, params_, C_, s) / static_cast<double>(ds_.rows);
  naive_backward(ds_, s, C_, ref);
  EXPECT_NEAR(loss, ref_loss, 1e-5);
  for (size_t k = 0; k < params.size(); ++k) EXPECT_NEAR(grads[k], ref[k], 1e-6) << "parameter " << k;
}

INSTANTIATE_TEST_SUITE_P(
    Svm, SvmGradient,
    testing::Values(Case{false, 2, SvmDenseKernel::svm_dense_blas}, Case{false, 4, SvmDenseKernel::svm_dense_blas},
                    Case{false, 2, SvmDenseKernel::svm_dense_fused}, Case{false, 4, SvmDenseKernel::svm_dense_fused},
                    Case{false, 7, SvmDenseKernel::svm_dense_fused}, Case{true, 2, SvmDenseKernel::svm_dense_fused},
                    Case{true, 5, SvmDenseKernel::svm_dense_fused}),
    case_name);

// ---- fast kernels against the naive reference, over shapes that hit every tail ----------------

TEST(SvmKernels, DenseKernelsMatchNaiveReference) {
  const size_t batches[] = {1, 5, 64, 67};
  const size_t dims[] = {1, 7, 8, 13, 64, 100, 784};
  const size_t outputs[] = {1, 2, 3, 4, 5, 7, 10, 11};
  uint64_t seed = 1;
  for (size_t B : batches) {
    for (size_t D : dims) {
      for (size_t C : outputs) {
        ++seed;
        const int classes = C == 1 ? 2 : static_cast<int>(C);
        const Dataset ds = make_dense(B, D, classes, seed);
        const std::vector<float> p = random_params(D * C + C, 1.0 / std::sqrt(static_cast<double>(D)), seed + 7);
        const float* w = p.data();
        const float* b = p.data() + D * C;
        std::vector<double> pd(p.begin(), p.end()), s_ref(B * C), dw_ref(D * C), db_ref(C);
        const double loss_ref = dsgd::svm_forward_dense_naive(ds.dense.data(), B, D, pd.data(), pd.data() + D * C, C,
                                                              ds.labels.data(), s_ref.data());
        dsgd::svm_backward_dense_naive(ds.dense.data(), B, D, s_ref.data(), ds.labels.data(), C, dw_ref.data(),
                                       db_ref.data());

        std::vector<const float*> rows(B);
        for (size_t i = 0; i < B; ++i) rows[i] = ds.dense.data() + i * D;
        std::vector<float> wt(C * D), s_blas(B * C), s_fused(B * C);
        dsgd::svm_transpose(w, D, C, wt.data());
        dsgd::svm_scores_dense_blas(ds.dense.data(), B, D, w, b, C, s_blas.data());
        dsgd::svm_scores_dense_fused(rows.data(), B, D, wt.data(), b, C, s_fused.data());
        const std::string where = "B=" + std::to_string(B) + " D=" + std::to_string(D) + " C=" + std::to_string(C);
        std::vector<double> s_abs(B * C);
        const Dataset ds_abs = abs_dataset(ds);
        const std::vector<double> pd_abs = abs_of(pd);
        dsgd::svm_forward_dense_naive(ds_abs.dense.data(), B, D, pd_abs.data(), pd_abs.data() + D * C, C,
                                      ds.labels.data(), s_abs.data());
        const auto s_ref_f = to_float(s_ref), s_abs_f = to_float(s_abs);
        ASSERT_TRUE(dsgd::testing::float_sums_close(s_blas, s_ref_f, s_abs_f, D + 1)) << "blas " << where;
        ASSERT_TRUE(dsgd::testing::float_sums_close(s_fused, s_ref_f, s_abs_f, D + 1)) << "fused " << where;
        // The loss sum adds B·C hinge terms max(0, 1 − t·s) of the float scores: each score's
        // error (≤ its tolerance) plus a float sum of B·C terms of size ≤ 1 + |s|.
        double loss_tol = 0, loss_abs = 0;
        for (size_t k = 0; k < B * C; ++k) {
          loss_tol += dsgd::testing::float_sum_tolerance(D + 1, s_abs[k]);
          loss_abs += 1 + std::fabs(s_ref[k]);
        }
        loss_tol += dsgd::testing::float_sum_tolerance(B * C, loss_abs);
        ASSERT_NEAR(dsgd::svm_hinge_loss_sum(s_fused.data(), ds.labels.data(), B, C), loss_ref, loss_tol) << where;

        // Backward from the reference scores, so the active set is the same up to kink ties
        // (a margin within float rounding of 1 is skipped).
        bool near_kink = false;
        for (size_t i = 0; i < B; ++i)
          for (size_t c = 0; c < C; ++c)
            near_kink |= std::fabs(1.0 - dsgd::svm_target(ds.labels[i], c, C) * s_ref[i * C + c]) < 1e-5;
        if (near_kink) continue;
        std::vector<float> ds_buf(B * C), db(C), dw_blas(D * C), dw_fused(D * C, 99.0f);
        dsgd::svm_hinge_grad(s_ref_f.data(), ds.labels.data(), B, C, 1.0f / static_cast<float>(B), ds_buf.data());
        dsgd::svm_grad_bias(ds_buf.data(), B, C, db.data());
        dsgd::svm_grad_weights_dense_blas(ds.dense.data(), B, D, ds_buf.data(), C, dw_blas.data());
        std::vector<float> dwt(C * D);
        std::vector<int32_t> active_rows(C * B);
        std::vector<float> active_coef(C * B);
        std::vector<size_t> active_count(C);
        const dsgd::SvmDenseScratch scratch{dwt.data(), active_rows.data(), active_coef.data(), active_count.data()};
        dsgd::svm_grad_weights_dense_fused(rows.data(), B, D, ds_buf.data(), C, scratch, dw_fused.data());
        // db_c = Σ_i g_ic (B terms of size ≤ 1/B); dw = xᵀ g.
        std::vector<double> db_abs(C, 0.0);
        for (size_t k = 0; k < B * C; ++k) db_abs[k % C] += std::fabs(ds_buf[k]);
        ASSERT_TRUE(dsgd::testing::float_sums_close(db, to_float(db_ref), to_float(db_abs), B)) << where;
        const auto dw_ref_f = to_float(dw_ref), dw_abs = dense_grad_abs(ds.dense.data(), ds_buf, B, D, C);
        ASSERT_TRUE(dsgd::testing::float_sums_close(dw_blas, dw_ref_f, dw_abs, B)) << "blas " << where;
        ASSERT_TRUE(dsgd::testing::float_sums_close(dw_fused, dw_ref_f, dw_abs, B)) << "fused " << where;
      }
    }
  }
}

TEST(SvmKernels, TransposeMatchesDefinition) {
  for (size_t rows : {1, 3, 8, 10, 17, 784}) {
    for (size_t cols : {1, 2, 8, 10, 16, 23, 784}) {
      std::vector<float> a(rows * cols), at(rows * cols, -1.0f);
      for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k);
      dsgd::svm_transpose(a.data(), rows, cols, at.data());
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) ASSERT_EQ(at[c * rows + r], a[r * cols + c]) << rows << "x" << cols;
    }
  }
}

TEST(SvmKernels, SparseKernelsMatchNaiveReference) {
  uint64_t seed = 100;
  for (size_t C : {1, 2, 3, 10}) {
    for (size_t B : {1, 9, 64}) {
      ++seed;
      const size_t D = 3000;
      const Dataset ds = make_sparse(B, D, C == 1 ? 2 : static_cast<int>(C), 40, seed);
      const std::vector<SvmSparseRow> rows = sparse_rows(ds);
      const std::vector<float> p = random_params(D * C + C, 0.3, seed + 3);
      std::vector<double> pd(p.begin(), p.end()), s_ref(B * C), dw_ref(D * C), db_ref(C);
      dsgd::svm_forward_sparse_naive(rows.data(), B, pd.data(), pd.data() + D * C, C, ds.labels.data(), s_ref.data());
      dsgd::svm_backward_sparse_naive(rows.data(), B, D, s_ref.data(), ds.labels.data(), C, dw_ref.data(),
                                      db_ref.data());
      std::vector<float> s(B * C);
      dsgd::svm_scores_sparse(rows.data(), B, p.data(), p.data() + D * C, C, s.data());
      // Σ|t_i| of each score: the naive forward on |values|, |w|, |b|; at most 40 + 1 terms.
      const Dataset ds_abs = abs_dataset(ds);
      const std::vector<SvmSparseRow> rows_abs = sparse_rows(ds_abs);
      const std::vector<double> pd_abs = abs_of(pd);
      std::vector<double> s_abs(B * C);
      dsgd::svm_forward_sparse_naive(rows_abs.data(), B, pd_abs.data(), pd_abs.data() + D * C, C, ds.labels.data(),
                                     s_abs.data());
      ASSERT_TRUE(dsgd::testing::float_sums_close(s, to_float(s_ref), to_float(s_abs), 41)) << "C=" << C << " B=" << B;
      std::vector<float> s_ref_f(s_ref.begin(), s_ref.end()), g(B * C), dw(D * C, 42.0f);
      dsgd::svm_hinge_grad(s_ref_f.data(), ds.labels.data(), B, C, 1.0f / static_cast<float>(B), g.data());
      dsgd::svm_grad_weights_sparse(rows.data(), B, g.data(), C, D, dw.data());
      // dw (D, C) = Σ over the samples that touch column d of |x_id|·|g_ic|.
      std::vector<double> dw_abs(D * C, 0.0);
      for (size_t i = 0; i < B; ++i)
        for (size_t j = 0; j < rows[i].nnz; ++j)
          for (size_t c = 0; c < C; ++c)
            dw_abs[size_t(rows[i].cols[j]) * C + c] += std::fabs(double(rows[i].vals[j]) * g[i * C + c]);
      ASSERT_TRUE(dsgd::testing::float_sums_close(dw, to_float(dw_ref), to_float(dw_abs), B))
          << "C=" << C << " B=" << B;
    }
  }
}

// ---- the layer hook -------------------------------------------------------------------------

namespace {

struct HookRecorder {
  const float* grads = nullptr;
  std::vector<dsgd::LayerView> layers;
  std::vector<size_t> order;
  std::vector<std::vector<float>> snapshots;  // the layer's slice when the hook fired

  static void fire(void* ctx, size_t layer) {
    auto* self = static_cast<HookRecorder*>(ctx);
    self->order.push_back(layer);
    const dsgd::LayerView& v = self->layers.at(layer);
    self->snapshots.emplace_back(self->grads + v.offset, self->grads + v.offset + v.count);
  }
};

}  // namespace

TEST(SvmHook, FiresOncePerLayerInReverseOrderWhenTheSliceIsFinal) {
  const Case cases[] = {{false, 2, SvmDenseKernel::svm_dense_blas},
                        {false, 10, SvmDenseKernel::svm_dense_fused},
                        {true, 3, SvmDenseKernel::svm_dense_fused}};
  for (const Case& c : cases) {
    const Dataset ds = c.sparse ? make_sparse(40, 300, c.classes, 20, 5) : make_dense(40, 30, c.classes, 5);
    auto wl = dsgd::svm_create(ds);
    static_cast<SvmWorkload&>(*wl).set_dense_kernel(c.kernel);
    ASSERT_EQ(wl->layers().size(), 2u);
    wl->reserve(16);
    std::vector<float> params(wl->param_count());
    wl->init_params(params.data(), 3);
    // Garbage in the gradient buffer: backward overwrites, never accumulates.
    std::vector<float> grads(wl->param_count(), std::numeric_limits<float>::quiet_NaN());
    HookRecorder rec;
    rec.grads = grads.data();
    rec.layers = wl->layers();
    const dsgd::LayerHook hook{&HookRecorder::fire, &rec};
    const std::vector<uint32_t> idx = {3, 17, 0, 39, 22, 8, 8, 11, 30, 1, 2, 5, 6, 7, 9, 10};
    for (size_t step = 0; step < 2; ++step) {
      rec.order.clear();
      rec.snapshots.clear();
      wl->load_batch(ds, idx.data() + step * 4, 12);
      wl->forward(params.data());
      wl->backward(params.data(), grads.data(), hook);
      ASSERT_EQ(rec.order, (std::vector<size_t>{1, 0}));
      for (size_t k = 0; k < 2; ++k) {
        const dsgd::LayerView& v = rec.layers[rec.order[k]];
        const std::vector<float> final_slice(grads.begin() + static_cast<long>(v.offset),
                                             grads.begin() + static_cast<long>(v.offset + v.count));
        EXPECT_EQ(rec.snapshots[k], final_slice) << v.name << " changed after its hook fired";
      }
      for (float g : grads) ASSERT_FALSE(std::isnan(g));
    }
  }
}

// ---- layout, init, flops, misuse ------------------------------------------------------------

TEST(SvmWorkloadBasics, LayoutInitAndFlops) {
  const Dataset multi = make_dense(10, 784, 10, 1);
  auto wl = dsgd::svm_create(multi);
  EXPECT_EQ(wl->name(), "svm");
  const auto& layers = wl->layers();
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].name, "weights");
  EXPECT_EQ(layers[0].offset, 0u);
  EXPECT_EQ(layers[0].count, 7840u);
  EXPECT_EQ(layers[1].name, "bias");
  EXPECT_EQ(layers[1].offset, 7840u);
  EXPECT_EQ(layers[1].count, 10u);
  EXPECT_EQ(wl->param_count(), 7850u);
  EXPECT_DOUBLE_EQ(wl->flops_per_sample(), 4.0 * 784 * 10);  // 2 nnz C forward + 2 nnz C backward

  const Dataset binary = make_sparse(100, 5000, 2, 30, 2);
  auto wb = dsgd::svm_create(binary);
  EXPECT_EQ(static_cast<SvmWorkload&>(*wb).outputs(), 1u);
  EXPECT_EQ(wb->param_count(), 5001u);
  EXPECT_DOUBLE_EQ(wb->flops_per_sample(), 4.0 * static_cast<double>(binary.nnz()) / 100.0);

  std::vector<float> a(wl->param_count()), b(wl->param_count()), c(wl->param_count());
  wl->init_params(a.data(), 42);
  wl->init_params(b.data(), 42);
  wl->init_params(c.data(), 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double sum2 = 0;
  for (size_t k = 0; k < 7840; ++k) sum2 += static_cast<double>(a[k]) * a[k];
  EXPECT_NEAR(std::sqrt(sum2 / 7840), 0.01, 0.001);
  for (size_t k = 7840; k < 7850; ++k) EXPECT_EQ(a[k], 0.0f);
}

TEST(SvmWorkloadBasics, MisuseThrows) {
  const Dataset ds = make_dense(10, 5, 3, 1);
  auto wl = dsgd::svm_create(ds);
  std::vector<float> params(wl->param_count()), grads(wl->param_count());
  const std::vector<uint32_t> idx = iota_indices(10);
  EXPECT_THROW(wl->load_batch(ds, idx.data(), 4), dsgd::Error);  // before reserve
  wl->reserve(4);
  EXPECT_THROW(wl->load_batch(ds, idx.data(), 5), dsgd::Error);
  EXPECT_THROW(wl->forward(params.data()), dsgd::Error);
  wl->load_batch(ds, idx.data(), 4);
  EXPECT_THROW(wl->backward(params.data(), grads.data(), {}), dsgd::Error);
  const Dataset other = make_dense(10, 6, 3, 1);
  EXPECT_THROW(wl->load_batch(other, idx.data(), 4), dsgd::Error);
  Dataset one_class = ds;
  one_class.classes = 1;
  EXPECT_THROW(dsgd::svm_create(one_class), dsgd::InputError);
}

// ---- evaluate -------------------------------------------------------------------------------

TEST(SvmEvaluate, HandBuiltMultiClassExample) {
  // D = 2, 3 classes. W rows are features: s = (x0, x1, 0) + b with b = (0, 0, 0.5).
  Dataset ds;
  ds.name = "hand";
  ds.rows = 3;
  ds.features = 2;
  ds.classes = 3;
  ds.dense = {2.0f,  0.0f,    // s = (2, 0, 0.5)   label 0: correct; hinge 0 + 1 + 1.5 = 2.5
              0.0f,  0.25f,   // s = (0, .25, .5)  label 1: wrong (argmax 2); hinge 1 + .75 + 1.5 = 3.25
              -1.0f, -2.0f};  // s = (-1, -2, .5)  label 2: correct; hinge 0 + 0 + .5 = 0.5
  ds.labels = {0, 1, 2};
  const std::vector<float> params = {1, 0, 0,  // feature 0
                                     0, 1, 0,  // feature 1
                                     0, 0, 0.5f};
  for (SvmDenseKernel kernel : {SvmDenseKernel::svm_dense_blas, SvmDenseKernel::svm_dense_fused}) {
    auto wl = dsgd::svm_create(ds);
    static_cast<SvmWorkload&>(*wl).set_dense_kernel(kernel);
    const dsgd::EvalSums all = wl->evaluate(params.data(), ds, 0, 3);  // without reserve()
    EXPECT_DOUBLE_EQ(all.loss_sum, 2.5 + 3.25 + 0.5);
    EXPECT_DOUBLE_EQ(all.correct, 2.0);
    EXPECT_DOUBLE_EQ(all.count, 3.0);
    const dsgd::EvalSums tail = wl->evaluate(params.data(), ds, 1, 3);
    EXPECT_DOUBLE_EQ(tail.loss_sum, 3.25 + 0.5);
    EXPECT_DOUBLE_EQ(tail.correct, 1.0);
    EXPECT_DOUBLE_EQ(tail.count, 2.0);
    EXPECT_DOUBLE_EQ(wl->evaluate(params.data(), ds, 2, 2).count, 0.0);
  }
  // The same data as CSR (the zeros left out) gives the same sums.
  Dataset sp = ds;
  sp.sparse = true;
  sp.dense.clear();
  sp.row_ptr = {0, 1, 2, 4};
  sp.col_idx = {0, 1, 0, 1};
  sp.values = {2.0f, 0.25f, -1.0f, -2.0f};
  auto ws = dsgd::svm_create(sp);
  const dsgd::EvalSums s = ws->evaluate(params.data(), sp, 0, 3);
  EXPECT_DOUBLE_EQ(s.loss_sum, 6.25);
  EXPECT_DOUBLE_EQ(s.correct, 2.0);
}

TEST(SvmEvaluate, HandBuiltBinaryExample) {
  Dataset ds;
  ds.name = "hand-binary";
  ds.rows = 4;
  ds.features = 1;
  ds.classes = 2;
  ds.dense = {2.0f, 0.5f, -0.25f, 0.0f};
  ds.labels = {1, 1, 1, 0};
  const std::vector<float> params = {1.0f, 0.0f};  // s = x
  auto wl = dsgd::svm_create(ds);
  const dsgd::EvalSums e = wl->evaluate(params.data(), ds, 0, 4);
  // hinge: 0, 0.5, 1.25, 1 (label 0 -> t = -1, s = 0); predictions: 1, 1, 0, 1 (s >= 0 is 1)
  EXPECT_DOUBLE_EQ(e.loss_sum, 2.75);
  EXPECT_DOUBLE_EQ(e.correct, 2.0);
}

TEST(SvmEvaluate, ChunkedSumsMatchTheNaiveReference) {
  for (bool sparse : {false, true}) {
    const Dataset ds = sparse ? make_sparse(700, 200, 4, 15, 9) : make_dense(700, 33, 4, 9);
    auto wl = dsgd::svm_create(ds);
    wl->reserve(32);
    const std::vector<float> p = random_params(wl->param_count(), 0.5, 10);
    std::vector<double> pd(p.begin(), p.end()), s;
    const double loss = naive_forward(ds, pd, 4, s);
    size_t correct = 0;
    for (size_t i = 0; i < ds.rows; ++i) {
      const double* si = &s[i * 4];
      correct += static_cast<size_t>(std::max_element(si, si + 4) - si) == static_cast<size_t>(ds.labels[i]);
    }
    const dsgd::EvalSums e = wl->evaluate(p.data(), ds, 0, ds.rows);
    EXPECT_NEAR(e.loss_sum, loss, 1e-6 * loss);
    EXPECT_NEAR(e.correct, static_cast<double>(correct), 2.0);  // a near-tie may flip in float
    EXPECT_EQ(e.count, 700.0);
  }
}

// ---- training and determinism ----------------------------------------------------------------

namespace {

struct TrainResult {
  std::vector<float> params;
  std::vector<double> losses;
  double test_accuracy = 0;
};

// Plain minibatch SGD (no weight decay) over shuffled epochs.
TrainResult train_sgd(const dsgd::DatasetPair& data, SvmDenseKernel kernel, size_t steps, size_t batch, float lr,
                      uint64_t seed) {
  auto wl = dsgd::svm_create(data.train);
  static_cast<SvmWorkload&>(*wl).set_dense_kernel(kernel);
  wl->reserve(batch);
  TrainResult r;
  r.params.resize(wl->param_count());
  std::vector<float> grads(wl->param_count());
  wl->init_params(r.params.data(), seed);
  std::vector<uint32_t> order = iota_indices(data.train.rows);
  Rng rng(dsgd::rng_derive_seed(seed, 99));
  size_t pos = order.size();
  for (size_t step = 0; step < steps; ++step) {
    if (pos + batch > order.size()) {
      rng.shuffle(order.data(), order.size());
      pos = 0;
    }
    wl->load_batch(data.train, order.data() + pos, batch);
    pos += batch;
    r.losses.push_back(wl->forward(r.params.data()));
    wl->backward(r.params.data(), grads.data(), {});
    for (size_t k = 0; k < r.params.size(); ++k) r.params[k] -= lr * grads[k];
  }
  const dsgd::EvalSums e = wl->evaluate(r.params.data(), data.test, 0, data.test.rows);
  r.test_accuracy = e.correct / e.count;
  return r;
}

}  // namespace

TEST(SvmTraining, LearnsSeparableDenseBinary) {
  const dsgd::DatasetPair data = dsgd::dataset_make_synthetic("n=4000,d=20,noise=0,test=1000", 1);
  for (SvmDenseKernel kernel : {SvmDenseKernel::svm_dense_blas, SvmDenseKernel::svm_dense_fused}) {
    const TrainResult r = train_sgd(data, kernel, 300, 32, 0.05f, 1);
    EXPECT_GT(r.test_accuracy, 0.9);
    EXPECT_LT(r.losses.back(), r.losses.front());
  }
}

TEST(SvmTraining, LearnsDenseMultiClass) {
  const dsgd::DatasetPair data = dsgd::dataset_make_synthetic("n=4000,d=20,classes=4,noise=0,test=1000", 2);
  const TrainResult r = train_sgd(data, SvmDenseKernel::svm_dense_fused, 400, 32, 0.05f, 2);
  EXPECT_GT(r.test_accuracy, 0.8);  // chance is 0.25
}

TEST(SvmTraining, LearnsSparseBinary) {
  const dsgd::DatasetPair data = dsgd::dataset_make_synthetic("n=4000,d=2000,density=0.02,noise=0,test=1000", 3);
  ASSERT_TRUE(data.train.sparse);
  const TrainResult r = train_sgd(data, SvmDenseKernel::svm_dense_fused, 400, 32, 2.0f, 3);
  EXPECT_GT(r.test_accuracy, 0.85);
}

TEST(SvmTraining, SameSeedGivesIdenticalResults) {
  const dsgd::DatasetPair dense = dsgd::dataset_make_synthetic("n=1000,d=30,classes=3,test=200", 4);
  const dsgd::DatasetPair sparse = dsgd::dataset_make_synthetic("n=1000,d=3000,density=0.01,test=200", 4);
  for (const dsgd::DatasetPair* data : {&dense, &sparse}) {
    for (SvmDenseKernel kernel : {SvmDenseKernel::svm_dense_blas, SvmDenseKernel::svm_dense_fused}) {
      const TrainResult a = train_sgd(*data, kernel, 50, 16, 0.1f, 5);
      const TrainResult b = train_sgd(*data, kernel, 50, 16, 0.1f, 5);
      const TrainResult c = train_sgd(*data, kernel, 50, 16, 0.1f, 6);
      EXPECT_EQ(a.params, b.params);
      EXPECT_EQ(a.losses, b.losses);
      EXPECT_NE(a.params, c.params);
    }
  }
}

// ---- registry -------------------------------------------------------------------------------

TEST(WorkloadRegistry, CreateListExists) {
  EXPECT_TRUE(dsgd::workload_exists("svm"));
  EXPECT_FALSE(dsgd::workload_exists("resnet-9000"));
  const std::vector<dsgd::WorkloadInfo> list = dsgd::workload_list();
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list[0].name, "svm");
  EXPECT_FALSE(list[0].description.empty());
  const Dataset ds = make_dense(4, 3, 2, 1);
  dsgd::RunConfig cfg;
  cfg.workload = "svm";
  EXPECT_EQ(dsgd::workload_create(cfg, ds)->name(), "svm");
  cfg.model = "resnet20";
  EXPECT_THROW(dsgd::workload_create(cfg, ds), dsgd::InputError);  // a model the SVM does not have
  cfg.model.clear();
  cfg.workload = "resnet-9000";
  try {
    dsgd::workload_create(cfg, ds);
    FAIL() << "expected InputError";
  } catch (const dsgd::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet-9000"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("svm"), std::string::npos) << e.hint();
  }
}
