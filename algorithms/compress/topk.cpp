// Top-k sparsification with error feedback (Aji & Heafield, "Sparse Communication for
// Distributed Gradient Descent", EMNLP 2017; error feedback: Stich, Cordonnier & Jaggi,
// "Sparsified SGD with Memory", NeurIPS 2018). Over the whole flat gradient:
//   a = g + e;  S = indices of the k = ⌈ratio·|g|⌉ largest |a_i| (ties: lower index first);
//   e ← a with a_S set to 0;  every worker all-gathers the (index, value) pairs of every
//   worker and sums them in rank order;  g ← (1/n)·Σ_workers sparse(a_S).
// Payload per worker: k indices (uint32) + k values (float32) = 8k bytes, all-gathered:
// bytes sent per step = (n−1)/n · n·8k = (n−1)·8k (ring all-gather).
// ratio 1: k = |g|, e stays 0 and the sum is the plain sum in rank order (on 2 workers
// bit-identical to the all-reduce: float addition is commutative).
// Limits: selection is O(|g|) (nth_element) plus O(k log k) to sort the kept indices.
#include <algorithm>
#include <cmath>

#include "algorithms/compress/compressor.hpp"

namespace dsgd {

size_t compress_topk_k(double ratio, size_t count) {
  const double k = std::ceil(ratio * double(count));
  return std::clamp<size_t>(static_cast<size_t>(k), 1, count);
}

void compress_topk_select(const float* a, size_t count, size_t k, uint32_t* order) {
  for (size_t i = 0; i < count; ++i) order[i] = static_cast<uint32_t>(i);
  auto larger = [a](uint32_t x, uint32_t y) {
    const float ax = std::fabs(a[x]), ay = std::fabs(a[y]);
    return ax > ay || (ax == ay && x < y);
  };
  if (k < count) std::nth_element(order, order + k, order + count, larger);
  std::sort(order, order + k);
}

namespace {

class TopK final : public GradientCompressor {
 public:
  explicit TopK(double ratio) : ratio_(ratio) {}
  std::string name() const override { return "topk"; }
  static size_t k_for(double ratio, size_t count) { return compress_topk_k(ratio, count); }
  void setup(Communicator& comm, const std::vector<LayerView>&, size_t count, uint64_t) override {
    n_ = comm.size();
    rank_ = comm.rank();
    k_ = k_for(ratio_, count);
    error_.assign(count, 0.0f);
    order_.resize(count);
    gathered_.assign(static_cast<size_t>(n_) * 2 * k_, 0.0f);
  }
  double bytes_sent_per_call(size_t count, int n) const override {
    return ring_scatter_gather_bytes_sent(double(n) * 8.0 * double(k_for(ratio_, count)), n);
  }
  double modelled_time(const NetworkModel& model, CollAlgo algo, size_t count, int n) const override {
    return network_collective_time(model, CollKind::coll_allgather, algo,
                                   double(n) * 8.0 * double(k_for(ratio_, count)), n);
  }

 protected:
  int phases() const override { return 1; }
  // Encode: a = g + e, keep the k largest, e ← the rest; this worker's all-gather block.
  PhaseCollective phase(int, const float* g, size_t count, int64_t) override {
    float* a = error_.data();  // a = g + e, in place of e
    for (size_t i = 0; i < count; ++i) a[i] += g[i];
    compress_topk_select(a, count, k_, order_.data());
    // This worker's block of the all-gather: k indices, then k values.
    float* mine = gathered_.data() + static_cast<size_t>(rank_) * 2 * k_;
    for (size_t j = 0; j < k_; ++j) {
      const uint32_t i = order_[j];
      mine[j] = compress_word_to_float(i);
      mine[k_ + j] = a[i];
      a[i] = 0.0f;  // sent: the error keeps only what was not
    }
    return {gathered_.data(), gathered_.size(), true};
  }
  void decode(float* g, size_t count) override {
    std::fill(g, g + count, 0.0f);
    for (int r = 0; r < n_; ++r) {
      const float* block = gathered_.data() + static_cast<size_t>(r) * 2 * k_;
      for (size_t j = 0; j < k_; ++j) g[compress_float_to_word(block[j])] += block[k_ + j];
    }
    if (n_ > 1) {
      const float scale = 1.0f / static_cast<float>(n_);
      for (size_t i = 0; i < count; ++i) g[i] *= scale;
    }
  }

 private:
  double ratio_;
  int n_ = 1, rank_ = 0;
  size_t k_ = 0;
  std::vector<float> error_;     // e, then a = g + e during a call
  std::vector<uint32_t> order_;  // indices, the first k selected
  std::vector<float> gathered_;  // n blocks of [k indices | k values]
};

}  // namespace

std::unique_ptr<GradientCompressor> compressor_create_topk(double ratio) {
  return std::make_unique<TopK>(ratio);
}

}  // namespace dsgd
