// Bandwidth-adaptive top-k (AdaTopK of FusionLLM: Tang et al., "FusionLLM: A Decentralized LLM
// Training System on Geo-distributed GPUs with Adaptive Compression", 2024): the fraction of
// values a link carries is chosen from its bandwidth, so slow links send fewer values.
// Links: the run's link classes (Communicator::link_classes: G groups of W = n/G ranks of
// hier:GxW, bandwidths B_intra, B_inter as configured by --bandwidth / --inter-bandwidth).
// A class of bandwidth B keeps ρ_c = budget · B / max(B_intra, B_inter) of the values
// (k_c = ⌈ρ_c·|g|⌉, at least 1), so `budget` is the fraction on the fastest class.
//   Uniform links (G = 1, equal bandwidths, or bandwidths not configured): one level, k = k(budget):
//     a = g + e;  S = top-k of |a| (ties: lower index first);  e ← a − a_S;
//     exchange (index, value) pairs with the n − 1 other ranks (point-to-point, every pair);
//     g ← (1/n)·Σ_{r in rank order} sparse(a_S^r)
//   — the floats of `topk:budget` bit for bit (the same selection and the same rank-order sum;
//   topk all-gathers the same blocks), sent by a neighbour exchange instead of an all-gather.
//   Two classes (G > 1, B_intra ≠ B_inter), two levels:
//     1. inside the group (fast links, k1 = k(ρ_intra)): as above among the group's W ranks;
//        every member then holds the group sum s = Σ_{r in group, rank order} sparse(a_S^r);
//     2. between groups (slow links, k2 = k(ρ_inter)): the group's top-k2 of s, s_T, is
//        exchanged with the ranks at the same position in the other G − 1 groups; the
//        remainder s − s_T is fed back, 1/W of it into each member's error e;
//     g ← (1/n)·Σ_{groups in order} sparse(s_T^g), the same on every rank.
// Bytes sent per worker per call (recorded: 4 bytes per float sent to each peer):
//   one level (n−1)·8k;  two levels (W−1)·8k1 + (G−1)·8k2.
// Limits: the class bandwidths are the configured ones (a real backend's native fabric is one
// calibrated link, taken as uniform); a hier:GxW whose G does not divide n is one level.
#include <algorithm>
#include <cmath>

#include "algorithms/compress/compressor.hpp"

namespace dsgd {

namespace {

class AdaTopK final : public GradientCompressor {
 public:
  explicit AdaTopK(double budget) : budget_(budget) {}
  std::string name() const override { return "adatopk"; }

  void setup(Communicator& comm, const std::vector<LayerView>&, size_t count, uint64_t) override {
    n_ = comm.size();
    rank_ = comm.rank();
    const LinkClasses& links = comm.link_classes();
    const double bi = links.intra_bytes_per_s, be = links.inter_bytes_per_s;
    two_level_ = links.groups > 1 && n_ % links.groups == 0 && n_ / links.groups > 1 && bi > 0 && be > 0 && bi != be;
    groups_ = two_level_ ? links.groups : 1;
    width_ = n_ / groups_;
    const double fastest = std::max(bi, be);
    ratio1_ = two_level_ ? budget_ * bi / fastest : budget_;
    ratio2_ = two_level_ ? budget_ * be / fastest : budget_;
    k1_ = compress_topk_k(ratio1_, count);
    k2_ = compress_topk_k(ratio2_, count);
    const int group = rank_ / width_, pos = rank_ % width_;
    peers1_.clear();
    peers2_.clear();
    for (int j = 0; j < width_; ++j)
      if (group * width_ + j != rank_) peers1_.push_back(group * width_ + j);
    for (int g = 0; g < groups_ && two_level_; ++g)
      if (g != group) peers2_.push_back(g * width_ + pos);
    error_.assign(count, 0.0f);
    order_.resize(count);
    sum_.assign(two_level_ ? count : 0, 0.0f);
    mine1_.assign(2 * k1_, 0.0f);
    recv1_.assign(std::max<size_t>(1, peers1_.size()) * 2 * k1_, 0.0f);
    mine2_.assign(two_level_ ? 2 * k2_ : 0, 0.0f);
    recv2_.assign(two_level_ ? std::max<size_t>(1, peers2_.size()) * 2 * k2_ : 0, 0.0f);
    ready_ = true;
  }
  double bytes_sent_per_call(size_t count, int n) const override {
    if (!ready_ || !two_level_) return double(n - 1) * 8.0 * double(compress_topk_k(budget_, count));
    return double(width_ - 1) * 8.0 * double(compress_topk_k(ratio1_, count)) +
           double(groups_ - 1) * 8.0 * double(compress_topk_k(ratio2_, count));
  }
  // Point-to-point: α + (peers · 8k)/B per level, on its link class.
  double modelled_time(const NetworkModel& model, CollAlgo, size_t count, int n) const override {
    if (n <= 1) return 0.0;
    const LinkModel& intra = model.intra;
    const LinkModel& inter = model.inter ? *model.inter : model.intra;
    auto level = [&](const LinkModel& link, int peers, double ratio) {
      if (peers <= 0 || !(link.bytes_per_s > 0)) return 0.0;
      return link.alpha_s + double(peers) * 8.0 * double(compress_topk_k(ratio, count)) / link.bytes_per_s;
    };
    if (!ready_ || !two_level_) return level(model.groups > 1 ? inter : intra, n - 1, budget_);
    return level(intra, width_ - 1, ratio1_) + level(inter, groups_ - 1, ratio2_);
  }

 protected:
  int phases() const override { return two_level_ ? 2 : 1; }
  PhaseCollective phase(int k, const float* g, size_t count, int64_t) override {
    if (k == 0) {
      float* a = error_.data();  // a = g + e, in place of e
      for (size_t i = 0; i < count; ++i) a[i] += g[i];
      encode(a, count, k1_, mine1_.data());
      if (peers1_.empty()) return {mine1_.data(), mine1_.size(), true};  // 1 worker: a no-op all-gather
      return {mine1_.data(), mine1_.size(), false, peers1_.data(), peers1_.size(), recv1_.data()};
    }
    // Level 2: the group's sum of level 1, its top-k2 sent, the rest fed back (1/W each).
    std::fill(sum_.begin(), sum_.end(), 0.0f);
    add_blocks(sum_.data(), mine1_.data(), recv1_.data(), k1_, width_, rank_ % width_);
    encode(sum_.data(), count, k2_, mine2_.data());
    const float share = 1.0f / static_cast<float>(width_);
    for (size_t i = 0; i < count; ++i) error_[i] += sum_[i] * share;
    return {mine2_.data(), mine2_.size(), false, peers2_.data(), peers2_.size(), recv2_.data()};
  }
  void decode(float* g, size_t count) override {
    std::fill(g, g + count, 0.0f);
    if (two_level_) {
      add_blocks(g, mine2_.data(), recv2_.data(), k2_, groups_, rank_ / width_);
    } else {
      add_blocks(g, mine1_.data(), recv1_.data(), k1_, n_, rank_);
    }
    if (n_ > 1) {
      const float scale = 1.0f / static_cast<float>(n_);
      for (size_t i = 0; i < count; ++i) g[i] *= scale;
    }
  }

 private:
  // block ← the (index, value) pairs of a's k largest, a's kept entries zeroed (error feedback).
  void encode(float* a, size_t count, size_t k, float* block) {
    compress_topk_select(a, count, k, order_.data());
    for (size_t j = 0; j < k; ++j) {
      const uint32_t i = order_[j];
      block[j] = compress_word_to_float(i);
      block[k + j] = a[i];
      a[i] = 0.0f;
    }
  }
  // out += the sparse blocks of `members` participants in their order; the own block (at
  // position `self`) is `mine`, the others come from recv in peer order (ascending).
  static void add_blocks(float* out, const float* mine, const float* recv, size_t k, int members, int self) {
    size_t next = 0;
    for (int m = 0; m < members; ++m) {
      const float* block = m == self ? mine : recv + (next++) * 2 * k;
      for (size_t j = 0; j < k; ++j) out[compress_float_to_word(block[j])] += block[k + j];
    }
  }

  double budget_;
  int n_ = 1, rank_ = 0, groups_ = 1, width_ = 1;
  bool two_level_ = false, ready_ = false;
  double ratio1_ = 0, ratio2_ = 0;
  size_t k1_ = 0, k2_ = 0;
  std::vector<int> peers1_, peers2_;  // ascending
  std::vector<float> error_, sum_, mine1_, recv1_, mine2_, recv2_;
  std::vector<uint32_t> order_;
};

}  // namespace

std::unique_ptr<GradientCompressor> compressor_create_adatopk(double budget) {
  return std::make_unique<AdaTopK>(budget);
}

}  // namespace dsgd
