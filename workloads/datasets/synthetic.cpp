// Synthetic classification data generated from the seed, bit-reproducible (dsgd::Rng only,
// one random stream per row, so the threaded generation gives the same bytes as a serial one).
//   synthetic:n=N,d=D,density=P,classes=C,noise=F,test=M,sparse=auto|true|false
// A "true" linear model (one gaussian weight vector per class, one for classes=2) labels the
// rows: label = argmax of the centred true scores (binary: sign), then a fraction `noise` of
// labels (each row with probability noise) is moved to a uniformly chosen other class. The
// scores are computed from the stored (float) features, so with noise=0 the labels are exactly
// the argmax of linear functions with bias: linearly separable (binary: by a hyperplane).
//   dense (density >= 0.5 or sparse=false): x_ij ~ N(0,1), kept with probability `density`.
//   sparse (density < 0.5 or sparse=true): rcv1-like rows: about density*d non-zeros per row
//     (uniform around density*d, +-50 % at most), at distinct columns drawn from a Zipf-like
//     law P(j) ~ 1/(j + j0) (frequent "words" at low indices; a repeat in the head moves to the
//     next free column), positive values, rows L2-normalised.
//     j0 = max(10, d/10000). The true weight of column j is scaled by P(j)/P(0), so frequent
//     columns carry the signal, as in text: this keeps d=1e6 learnable from 20000 rows (a
//     linear SVM reaches ~0.88 test accuracy at noise=0.05 in 4 epochs; the rows are unit norm,
//     so weights want a large step size and the bias a small one).
// Limits: memory is one dense n*d matrix or nnz*(4+4) bytes plus the d x classes true model;
// specs needing more than 32 GiB of features, or more than the memory available, are refused.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "core/rng.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace {

enum class SyntheticSparse { synthetic_sparse_auto, synthetic_sparse_true, synthetic_sparse_false };

struct SyntheticParams {
  size_t n = 20000;
  size_t d = 1000;
  double density = 1.0;
  int classes = 2;
  double noise = 0.05;
  size_t test = 0;
  bool test_given = false;
  SyntheticSparse sparse = SyntheticSparse::synthetic_sparse_auto;

  bool is_sparse() const {
    if (sparse == SyntheticSparse::synthetic_sparse_true) return true;
    if (sparse == SyntheticSparse::synthetic_sparse_false) return false;
    return density < 0.5;
  }
  size_t test_rows() const { return test_given ? test : n / 5; }
};

constexpr const char* kParamsHint =
    "synthetic parameters: n=ROWS, d=FEATURES, density=(0,1], classes>=2, noise=[0,1], "
    "test=ROWS, sparse=auto|true|false, e.g. synthetic:n=20000,d=1000000,density=0.001";

constexpr double kMaxBytes = 32.0 * (1ull << 30);

// Random stream ids (the second argument of rng_derive_seed).
constexpr uint64_t kStreamTrueWeights = 0x5717;
constexpr uint64_t kStreamRows = 0x5718;

size_t parse_count(const std::string& key, const std::string& value, size_t min_value, size_t max_value) {
  return dataset_parse_count(key, value, min_value, max_value, kParamsHint);
}

double parse_real(const std::string& key, const std::string& value, double lo, double hi, bool lo_open) {
  size_t used = 0;
  double v = 0;
  bool ok = !value.empty();
  if (ok) {
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != value.size() || !std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo)) {
    DSGD_THROW(InputError, kParamsHint, "synthetic: bad value '{}' for parameter {} (expected a number in {}{}, {}])",
               value, key, lo_open ? "(" : "[", lo, hi);
  }
  return v;
}

SyntheticParams synthetic_parse(const std::string& text) {
  SyntheticParams p;
  std::vector<std::string> seen;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      DSGD_THROW(InputError, kParamsHint, "synthetic: parameter '{}' needs a value (key=value)", item);
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      DSGD_THROW(InputError, kParamsHint, "synthetic: parameter {} is given twice", key);
    }
    seen.push_back(key);
    if (key == "n") {
      p.n = parse_count(key, value, 1, 1ull << 31);
    } else if (key == "d") {
      p.d = parse_count(key, value, 1, 0x7fffffffULL);
    } else if (key == "density") {
      p.density = parse_real(key, value, 0.0, 1.0, true);
    } else if (key == "classes") {
      p.classes = static_cast<int>(parse_count(key, value, 2, 1 << 16));
    } else if (key == "noise") {
      p.noise = parse_real(key, value, 0.0, 1.0, false);
    } else if (key == "test") {
      p.test = parse_count(key, value, 0, 1ull << 31);
      p.test_given = true;
    } else if (key == "sparse") {
      if (value == "auto") {
        p.sparse = SyntheticSparse::synthetic_sparse_auto;
      } else if (value == "true") {
        p.sparse = SyntheticSparse::synthetic_sparse_true;
      } else if (value == "false") {
        p.sparse = SyntheticSparse::synthetic_sparse_false;
      } else {
        DSGD_THROW(InputError, kParamsHint,
                   "synthetic: bad value '{}' for parameter sparse (expected auto, true or false)", value);
      }
    } else {
      DSGD_THROW(InputError, kParamsHint, "synthetic: unknown parameter '{}'", key);
    }
  }
  const double rows = static_cast<double>(p.n + p.test_rows());
  const double bytes =
      p.is_sparse() ? rows * std::max(1.0, p.density * p.d * 1.5) * 8.0 : rows * static_cast<double>(p.d) * 4.0;
  if (bytes > kMaxBytes) {
    DSGD_THROW(InputError, "lower n, d or density (sparse data stores only the non-zeros)",
               "synthetic: n={} test={} d={} density={} needs about {:.1f} GiB of features", p.n, p.test_rows(), p.d,
               p.density, bytes / (1ull << 30));
  }
  // The generator's true model (d x outputs doubles), the features, and the 6 copies of the
  // linear model a run over them holds (as for LIBSVM files, libsvm.cpp), against what this
  // machine has: d=5e6 with classes=500 drew a 20 GB true model for minutes before the run
  // found that its 60 GB of model copies could not fit.
  const double outputs = p.classes == 2 ? 1.0 : static_cast<double>(p.classes);
  const double teacher = static_cast<double>(p.d) * outputs * sizeof(double);
  const double model = 6.0 * static_cast<double>(p.d) * outputs * sizeof(float);
  const double available = memory_available_bytes();
  if (available > 0 && bytes + teacher + model > available) {
    DSGD_THROW(InputError, "lower d or classes (the model is d x classes), or n and density",
               "synthetic: d={} classes={} n={} test={} needs about {:.3g} GB ({:.3g} GB of features, {:.3g} GB "
               "of true model, {:.3g} GB for the 6 copies of a linear model a run holds), more than the {:.3g} GB "
               "of memory available",
               p.d, p.classes, p.n, p.test_rows(), (bytes + teacher + model) / 1e9, bytes / 1e9, teacher / 1e9,
               model / 1e9, available / 1e9);
  }
  return p;
}

// Generates rows [0, total) into train (first n rows) and test; see the file comment.
class SyntheticGenerator {
 public:
  SyntheticGenerator(const SyntheticParams& p, uint64_t seed)
      : p_(p),
        seed_(seed),
        outputs_(p.classes == 2 ? 1 : p.classes),
        total_(p.n + p.test_rows()),
        zipf_offset_(std::max(10.0, static_cast<double>(p.d) / 10000.0)) {}

  DatasetPair run() {
    make_true_weights();
    scores_.assign(total_ * outputs_, 0.0);
    flips_.assign(total_, 0);
    DatasetPair pair;
    pair.train = make_shell(p_.n, "synthetic/train");
    pair.test = make_shell(p_.test_rows(), "synthetic/test");
    if (p_.is_sparse()) {
      allocate_sparse(pair);
    } else {
      pair.train.dense.resize(p_.n * p_.d);
      pair.test.dense.resize(p_.test_rows() * p_.d);
    }
    parallel_rows([&](size_t begin, size_t end) { generate_rows(pair, begin, end); });
    assign_labels(pair);
    return pair;
  }

 private:
  Dataset make_shell(size_t rows, const char* name) const {
    Dataset ds;
    ds.name = name;
    ds.rows = rows;
    ds.features = p_.d;
    ds.classes = p_.classes;
    ds.sparse = p_.is_sparse();
    ds.labels.resize(rows);
    return ds;
  }

  // Probability weight of column j under the Zipf-like law, relative to column 0.
  double zipf_relative(size_t j) const { return zipf_offset_ / (static_cast<double>(j) + zipf_offset_); }

  void make_true_weights() {
    Rng rng(rng_derive_seed(seed_, kStreamTrueWeights));
    true_w_.resize(p_.d * outputs_);
    const bool sparse = p_.is_sparse();
    for (size_t j = 0; j < p_.d; ++j) {
      const double scale = sparse ? zipf_relative(j) : 1.0;
      for (size_t c = 0; c < outputs_; ++c) true_w_[j * outputs_ + c] = rng.normal() * scale;
    }
    // Unit norm per class, so no class wins the argmax by a larger weight vector.
    for (size_t c = 0; c < outputs_; ++c) {
      double norm2 = 0;
      for (size_t j = 0; j < p_.d; ++j) norm2 += true_w_[j * outputs_ + c] * true_w_[j * outputs_ + c];
      const double inv = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 1.0;
      for (size_t j = 0; j < p_.d; ++j) true_w_[j * outputs_ + c] *= inv;
    }
  }

  Rng row_rng(size_t row) const { return Rng(rng_derive_seed(seed_, kStreamRows, row)); }

  // The non-zero count of a sparse row: the first draw of the row's stream, uniform in
  // density*d*[1-a, 1+a], a = min(0.5, 1/density - 1) so the mean stays density*d <= d.
  size_t sparse_row_nnz(Rng& rng) const {
    const double spread = std::min(0.5, 1.0 / p_.density - 1.0);
    const double target = p_.density * static_cast<double>(p_.d) * (1.0 + spread * (2.0 * rng.uniform() - 1.0));
    return std::clamp<size_t>(static_cast<size_t>(std::llround(target)), 1, p_.d);
  }

  void allocate_sparse(DatasetPair& pair) {
    Dataset* parts[2] = {&pair.train, &pair.test};
    size_t row = 0;
    for (Dataset* ds : parts) {
      ds->row_ptr.assign(ds->rows + 1, 0);
      for (size_t i = 0; i < ds->rows; ++i, ++row) {
        Rng rng = row_rng(row);
        ds->row_ptr[i + 1] = ds->row_ptr[i] + static_cast<int64_t>(sparse_row_nnz(rng));
      }
      ds->col_idx.resize(static_cast<size_t>(ds->row_ptr.back()));
      ds->values.resize(static_cast<size_t>(ds->row_ptr.back()));
    }
  }

  template <typename Fn>
  void parallel_rows(Fn&& fn) const {
    const size_t work =
        p_.is_sparse() ? total_ * std::max<size_t>(1, static_cast<size_t>(p_.density * p_.d)) : total_ * p_.d;
    size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    if (work < (1u << 20)) threads = 1;
    threads = std::min(threads, total_);
    if (threads <= 1) {
      fn(size_t{0}, total_);
      return;
    }
    std::vector<std::thread> pool;
    const size_t per = (total_ + threads - 1) / threads;
    for (size_t t = 0; t < threads; ++t) {
      const size_t begin = std::min(total_, t * per);
      const size_t end = std::min(total_, begin + per);
      pool.emplace_back([&fn, begin, end] { fn(begin, end); });
    }
    for (auto& th : pool) th.join();
  }

  void generate_rows(DatasetPair& pair, size_t begin, size_t end) {
    std::vector<int32_t> cols;
    std::vector<double> spacings;
    for (size_t row = begin; row < end; ++row) {
      Dataset& ds = row < p_.n ? pair.train : pair.test;
      const size_t i = row < p_.n ? row : row - p_.n;
      Rng rng = row_rng(row);
      double* s = &scores_[row * outputs_];
      if (p_.is_sparse()) {
        const size_t k = sparse_row_nnz(rng);
        draw_columns(rng, k, cols, spacings);
        const auto off = static_cast<size_t>(ds.row_ptr[i]);
        double norm2 = 0;
        for (size_t t = 0; t < k; ++t) {
          const double v = 0.2 - std::log(1.0 - rng.uniform());  // positive, heavy-ish tail
          ds.col_idx[off + t] = cols[t];
          ds.values[off + t] = static_cast<float>(v);
          norm2 += v * v;
        }
        const double inv = 1.0 / std::sqrt(norm2);
        for (size_t t = 0; t < k; ++t) {
          float& v = ds.values[off + t];
          v = static_cast<float>(v * inv);
          const double* w = &true_w_[static_cast<size_t>(cols[t]) * outputs_];
          for (size_t c = 0; c < outputs_; ++c) s[c] += v * w[c];
        }
      } else {
        float* x = &ds.dense[i * p_.d];
        const bool all = p_.density >= 1.0;
        for (size_t j = 0; j < p_.d; ++j) {
          const bool keep = all || rng.uniform() < p_.density;
          x[j] = keep ? static_cast<float>(rng.normal()) : 0.0f;
          if (x[j] != 0.0f) {
            const double* w = &true_w_[j * outputs_];
            for (size_t c = 0; c < outputs_; ++c) s[c] += x[j] * w[c];
          }
        }
      }
      // Label noise: decided from the row's stream, applied after the labels are known.
      const bool flip = rng.uniform() < p_.noise;
      const auto offset = static_cast<int32_t>(1 + rng.below(static_cast<uint64_t>(p_.classes - 1)));
      flips_[row] = flip ? offset : 0;
    }
  }

  // k distinct ascending columns. Sparse rows (k <= d/4): k sorted uniforms from exponential
  // spacings, mapped through the inverse CDF of the Zipf-like law (monotone, so the columns
  // come out sorted, O(k), no sort), a repeat bumped to the next free column; then clamped from
  // the top so the last ones fit below d. Denser rows: uniform selection sampling (Knuth's
  // algorithm S, O(d)).
  void draw_columns(Rng& rng, size_t k, std::vector<int32_t>& cols, std::vector<double>& spacings) const {
    cols.resize(k);
    const size_t d = p_.d;
    if (k * 4 <= d) {
      spacings.resize(k + 1);
      double total = 0;
      for (size_t t = 0; t <= k; ++t) {
        total += -std::log(1.0 - rng.uniform());
        spacings[t] = total;
      }
      const double log_span = std::log1p(static_cast<double>(d) / zipf_offset_);
      int64_t prev = -1;
      for (size_t t = 0; t < k; ++t) {
        const double u = spacings[t] / total;  // the t-th smallest of k uniforms
        auto j = static_cast<int64_t>(zipf_offset_ * std::expm1(u * log_span));
        j = std::max(j, prev + 1);
        cols[t] = static_cast<int32_t>(std::min<int64_t>(j, static_cast<int64_t>(d) - 1));
        prev = j;
      }
      int64_t limit = static_cast<int64_t>(d) - 1;
      for (size_t t = k; t-- > 0;) {
        cols[t] = static_cast<int32_t>(std::min<int64_t>(cols[t], limit));
        limit = cols[t] - 1;
      }
      return;
    }
    size_t left = k;
    size_t out = 0;
    for (size_t j = 0; j < d && left > 0; ++j) {
      if (rng.uniform() * static_cast<double>(d - j) < static_cast<double>(left)) {
        cols[out++] = static_cast<int32_t>(j);
        --left;
      }
    }
  }

  void assign_labels(DatasetPair& pair) {
    // Centre the true scores (a true bias) so the classes are balanced.
    std::vector<double> mean(outputs_, 0.0);
    for (size_t row = 0; row < total_; ++row)
      for (size_t c = 0; c < outputs_; ++c) mean[c] += scores_[row * outputs_ + c];
    for (double& m : mean) m /= static_cast<double>(total_);
    for (size_t row = 0; row < total_; ++row) {
      const double* s = &scores_[row * outputs_];
      int label = 0;
      if (outputs_ == 1) {
        label = s[0] - mean[0] >= 0 ? 1 : 0;
      } else {
        double best = s[0] - mean[0];
        for (size_t c = 1; c < outputs_; ++c) {
          if (s[c] - mean[c] > best) {
            best = s[c] - mean[c];
            label = static_cast<int>(c);
          }
        }
      }
      label = (label + flips_[row]) % p_.classes;
      Dataset& ds = row < p_.n ? pair.train : pair.test;
      ds.labels[row < p_.n ? row : row - p_.n] = label;
    }
  }

  SyntheticParams p_;
  uint64_t seed_;
  size_t outputs_;
  size_t total_;
  std::vector<double> true_w_;  // d x outputs, row-major
  std::vector<double> scores_;  // total x outputs
  std::vector<int32_t> flips_;  // per row: 0 or the class offset of a flipped label
  double zipf_offset_;          // j0 in P(j) ~ 1/(j + j0)
};

}  // namespace

DatasetPair dataset_make_synthetic(const std::string& params, uint64_t seed) {
  const SyntheticParams p = synthetic_parse(params);
  return SyntheticGenerator(p, seed).run();
}

namespace detail {
void synthetic_validate_params(const std::string& params) {
  (void)synthetic_parse(params);
}
}  // namespace detail

size_t dataset_parse_count(const std::string& key, const std::string& value, size_t lo, size_t hi, const char* hint) {
  size_t used = 0;
  unsigned long long v = 0;
  bool ok = !value.empty() && value[0] >= '0' && value[0] <= '9';
  if (ok) {
    try {
      v = std::stoull(value, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != value.size() || v < lo || v > hi) {
    DSGD_THROW(InputError, hint, "synthetic: bad value '{}' for parameter {} (expected an integer in [{}, {}])", value,
               key, lo, hi);
  }
  return static_cast<size_t>(v);
}

}  // namespace dsgd
