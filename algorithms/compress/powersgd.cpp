// PowerSGD (Vogels, Karimireddy & Jaggi, "PowerSGD: Practical Low-Rank Gradient
// Compression for Distributed Optimization", NeurIPS 2019), Algorithm 1 with warm start
// and error feedback. Per layer, the gradient viewed as an m×k matrix M (see below):
//   M ← g + e                            (error feedback)
//   P ← M·Q;        P ← avg_workers P    (all-reduce 1, every layer's P in one buffer)
//   P̂ ← orthonormalise(P)                (Gram-Schmidt, in double)
//   Q ← Mᵀ·P̂;       Q ← avg_workers Q    (all-reduce 2)
//   ĝ ← P̂·Qᵀ;       e ← M − ĝ;   g ← ĝ
// Q is kept for the next step (warm start); it starts as a seeded standard normal matrix,
// the same on every worker. Rank r' = min(r, m) per layer.
// Shapes: a LayerView has no shape, so a layer of c floats is viewed as the row-major
// m×(c/m) matrix with m the largest divisor of c not above √c. A layer with m = 1 (c prime
// or < 4) is not compressed: its gradient rides in all-reduce 1 as is.
// Bytes sent per step (ring): 2(n−1)/n·4·(Σ m·r' + Σ uncompressed c) + 2(n−1)/n·4·Σ k·r'.
// Full rank (r ≥ m): a column of P that Gram-Schmidt finds dependent (residual below 1e-6
// of its norm) is replaced by the next unit vector orthogonal to the others, so P̂ is a
// complete orthonormal basis, P̂P̂ᵀ = I and ĝ = avg M up to rounding (not bit-identical;
// tests use 1e-4).
#include <algorithm>
#include <cmath>

#include "algorithms/compress/compressor.hpp"
#include "core/rng.hpp"

namespace dsgd {

namespace {

struct LowRankLayer {
  size_t offset = 0, m = 0, k = 0, r = 0;
  size_t p_offset = 0, q_offset = 0;  // into the P and Q buffers
};

class PowerSgd final : public GradientCompressor {
 public:
  explicit PowerSgd(int rank) : rank_(static_cast<size_t>(rank)) {}
  std::string name() const override { return "powersgd"; }

  static size_t rows_for(size_t c) {
    size_t m = 1;
    for (size_t d = 1; d * d <= c; ++d)
      if (c % d == 0) m = d;
    return m;
  }
  // (P-buffer floats, Q-buffer floats) for the layers.
  std::pair<size_t, size_t> buffer_sizes(const std::vector<LayerView>& layers) const {
    size_t p = 0, q = 0;
    for (const auto& l : layers) {
      const size_t m = rows_for(l.count);
      if (m <= 1) {
        p += l.count;
      } else {
        const size_t r = std::min(rank_, m);
        p += m * r;
        q += (l.count / m) * r;
      }
    }
    return {p, q};
  }

  void setup(Communicator& comm, const std::vector<LayerView>& layers, size_t count, uint64_t seed) override {
    layers_view_ = layers;
    low_.clear();
    plain_.clear();
    size_t p = 0, q = 0;
    for (const auto& l : layers) {
      const size_t m = rows_for(l.count);
      if (m <= 1) {
        plain_.push_back({l.offset, l.count, p});
        p += l.count;
        continue;
      }
      LowRankLayer lr{l.offset, m, l.count / m, std::min(rank_, m), p, q};
      p += lr.m * lr.r;
      q += lr.k * lr.r;
      low_.push_back(lr);
    }
    p_.assign(p, 0.0f);
    q_.assign(q, 0.0f);
    error_.assign(count, 0.0f);
    size_t max_m = 1, max_r = 1;
    for (const auto& lr : low_) {
      max_m = std::max(max_m, lr.m);
      max_r = std::max(max_r, lr.r);
    }
    basis_.assign(max_m * max_r, 0.0);
    Rng rng(rng_derive_seed(seed, 0x9e57dULL));  // same on every worker
    for (auto& v : q_) v = static_cast<float>(rng.normal());
    (void)comm;
  }

  double bytes_sent_per_call(size_t, int n) const override {
    const auto [p, q] = buffer_sizes(layers_view_);
    return ring_allreduce_bytes_sent(4.0 * double(p), n) +
           (q > 0 ? ring_allreduce_bytes_sent(4.0 * double(q), n) : 0.0);
  }
  double modelled_time(const NetworkModel& model, CollAlgo algo, size_t, int n) const override {
    const auto [p, q] = buffer_sizes(layers_view_);
    return network_collective_time(model, CollKind::coll_allreduce, algo, 4.0 * double(p), n) +
           (q > 0 ? network_collective_time(model, CollKind::coll_allreduce, algo, 4.0 * double(q), n) : 0.0);
  }

 protected:
  // Phase 0: M = g + e, P = MQ (and the plain layers) → all-reduce 1.
  // Phase 1: P̂ = orth(P), Q = MᵀP̂ → all-reduce 2 (absent when every layer is plain: the
  // Q buffer is empty, so there is one phase).
  int phases() const override { return q_.empty() ? 1 : 2; }
  PhaseCollective phase(int k, const float* g, size_t count, int64_t) override {
    float* M = error_.data();  // M = g + e (kept in error_ during the call)
    if (k == 0) {
      for (size_t i = 0; i < count; ++i) M[i] += g[i];
      for (const Plain& pl : plain_) std::copy(M + pl.offset, M + pl.offset + pl.count, p_.data() + pl.p_offset);
      for (const LowRankLayer& l : low_) matmul_MQ(M + l.offset, l, p_.data() + l.p_offset);
      return {p_.data(), p_.size(), false};
    }
    for (const LowRankLayer& l : low_) orthonormalise(p_.data() + l.p_offset, l.m, l.r);
    for (const LowRankLayer& l : low_) matmul_MtP(M + l.offset, l, p_.data() + l.p_offset, q_.data() + l.q_offset);
    return {q_.data(), q_.size(), false};
  }
  void decode(float* g, size_t) override {
    float* M = error_.data();
    for (const Plain& pl : plain_) {
      std::copy(p_.data() + pl.p_offset, p_.data() + pl.p_offset + pl.count, g + pl.offset);
      std::fill(M + pl.offset, M + pl.offset + pl.count, 0.0f);  // sent exactly: no error
    }
    for (const LowRankLayer& l : low_) {
      const float* P = p_.data() + l.p_offset;  // m×r, orthonormal columns
      const float* Q = q_.data() + l.q_offset;  // k×r
      float* out = g + l.offset;
      float* e = M + l.offset;
      for (size_t i = 0; i < l.m; ++i)
        for (size_t j = 0; j < l.k; ++j) {
          double acc = 0;
          for (size_t t = 0; t < l.r; ++t) acc += double(P[i * l.r + t]) * double(Q[j * l.r + t]);
          const float approx = static_cast<float>(acc);
          out[i * l.k + j] = approx;
          e[i * l.k + j] -= approx;  // e = M − ĝ
        }
    }
  }

 private:
  struct Plain {
    size_t offset, count, p_offset;
  };

  // P (m×r) = M (m×k) · Q (k×r), double accumulation.
  void matmul_MQ(const float* M, const LowRankLayer& l, float* P) const {
    const float* Q = q_.data() + l.q_offset;
    for (size_t i = 0; i < l.m; ++i)
      for (size_t t = 0; t < l.r; ++t) {
        double acc = 0;
        for (size_t j = 0; j < l.k; ++j) acc += double(M[i * l.k + j]) * double(Q[j * l.r + t]);
        P[i * l.r + t] = static_cast<float>(acc);
      }
  }
  static void matmul_MtP(const float* M, const LowRankLayer& l, const float* P, float* Q) {
    for (size_t j = 0; j < l.k; ++j)
      for (size_t t = 0; t < l.r; ++t) {
        double acc = 0;
        for (size_t i = 0; i < l.m; ++i) acc += double(M[i * l.k + j]) * double(P[i * l.r + t]);
        Q[j * l.r + t] = static_cast<float>(acc);
      }
  }
  // Gram-Schmidt (modified, twice for stability) on the r columns of the row-major m×r P.
  void orthonormalise(float* P, size_t m, size_t r) {
    double* B = basis_.data();  // m×r, column t at B[i*r + t]
    for (size_t i = 0; i < m * r; ++i) B[i] = P[i];
    size_t next_unit = 0;
    for (size_t t = 0; t < r; ++t) {
      double norm0 = 0;
      for (size_t i = 0; i < m; ++i) norm0 += B[i * r + t] * B[i * r + t];
      norm0 = std::sqrt(norm0);
      for (int attempt = 0;; ++attempt) {
        for (int pass = 0; pass < 2; ++pass)
          for (size_t u = 0; u < t; ++u) {
            double dot = 0;
            for (size_t i = 0; i < m; ++i) dot += B[i * r + u] * B[i * r + t];
            for (size_t i = 0; i < m; ++i) B[i * r + t] -= dot * B[i * r + u];
          }
        double norm = 0;
        for (size_t i = 0; i < m; ++i) norm += B[i * r + t] * B[i * r + t];
        norm = std::sqrt(norm);
        if (norm > 1e-6 * norm0 && norm > 1e-30) {
          for (size_t i = 0; i < m; ++i) B[i * r + t] /= norm;
          break;
        }
        // Dependent (or zero) column: try the next unit vector instead.
        if (next_unit >= m || attempt > static_cast<int>(m)) {
          for (size_t i = 0; i < m; ++i) B[i * r + t] = 0.0;
          break;
        }
        for (size_t i = 0; i < m; ++i) B[i * r + t] = i == next_unit ? 1.0 : 0.0;
        ++next_unit;
        norm0 = 1.0;
      }
    }
    for (size_t i = 0; i < m * r; ++i) P[i] = static_cast<float>(B[i]);
  }

  size_t rank_;
  std::vector<LayerView> layers_view_;
  std::vector<LowRankLayer> low_;
  std::vector<Plain> plain_;
  std::vector<float> p_, q_, error_;
  std::vector<double> basis_;
};

}  // namespace

std::unique_ptr<GradientCompressor> compressor_create_powersgd(int rank) {
  return std::make_unique<PowerSgd>(rank);
}

}  // namespace dsgd
