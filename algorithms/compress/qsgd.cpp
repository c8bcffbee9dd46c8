// QSGD stochastic quantisation (Alistarh et al., "QSGD: Communication-Efficient SGD via
// Gradient Quantization and Encoding", NeurIPS 2017), bucketed as in the paper's
// experiments (buckets of d = 512 values, one norm each). With b bits per value (one sign
// bit, b−1 level bits) and s = 2^(b−1) − 1 levels, each value v_i of a bucket v becomes
//   Q(v_i) = ‖v‖₂ · sign(v_i) · ξ_i / s,   ξ_i = ⌊s|v_i|/‖v‖⌋ + 1 with probability
//   s|v_i|/‖v‖ − ⌊s|v_i|/‖v‖⌋, else ⌊s|v_i|/‖v‖⌋       (unbiased: E[Q(v)] = v)
// drawn from an Rng seeded by (seed, rank, step): the same run gives the same bits. Not
// error-fed (QSGD is unbiased). Each worker all-gathers every worker's packed buffer
// (⌈c/d⌉ float32 norms + ⌈c·b/32⌉ 32-bit words of codes) and sums the decoded vectors in
// rank order; g ← (1/n)·Σ. Bytes sent per step (ring all-gather): (n−1)·4·(⌈c/d⌉ + ⌈c·b/32⌉).
// bits = 32 is the identity: values travel as float32 (payload c words), no quantisation,
// and the rank-order sum is bit-identical to the all-reduce on 2 workers.
#include <algorithm>
#include <cmath>

#include "algorithms/compress/compressor.hpp"
#include "core/rng.hpp"

namespace dsgd {

namespace {

class Qsgd final : public GradientCompressor {
 public:
  Qsgd(int bits, size_t bucket) : bits_(bits), bucket_(bucket) {}
  std::string name() const override { return "qsgd"; }
  size_t payload_words(size_t count) const {
    if (bits_ == 32) return count;
    return (count + bucket_ - 1) / bucket_ + (count * static_cast<size_t>(bits_) + 31) / 32;
  }
  void setup(Communicator& comm, const std::vector<LayerView>&, size_t count, uint64_t seed) override {
    n_ = comm.size();
    rank_ = comm.rank();
    seed_ = seed;
    words_ = payload_words(count);
    gathered_.assign(static_cast<size_t>(n_) * words_, 0.0f);
  }
  double bytes_sent_per_call(size_t count, int n) const override {
    return ring_scatter_gather_bytes_sent(double(n) * 4.0 * double(payload_words(count)), n);
  }
  double modelled_time(const NetworkModel& model, CollAlgo algo, size_t count, int n) const override {
    return network_collective_time(model, CollKind::coll_allgather, algo,
                                   double(n) * 4.0 * double(payload_words(count)), n);
  }

 protected:
  int phases() const override { return 1; }
  PhaseCollective phase(int, const float* g, size_t count, int64_t step) override {
    float* mine = gathered_.data() + static_cast<size_t>(rank_) * words_;
    if (bits_ == 32) {
      std::copy(g, g + count, mine);
    } else {
      encode(g, count, mine, step);
    }
    return {gathered_.data(), gathered_.size(), true};
  }
  void decode(float* g, size_t count) override {
    std::fill(g, g + count, 0.0f);
    for (int r = 0; r < n_; ++r) {
      const float* block = gathered_.data() + static_cast<size_t>(r) * words_;
      if (bits_ == 32) {
        for (size_t i = 0; i < count; ++i) g[i] += block[i];
      } else {
        decode_add(block, count, g);
      }
    }
    if (n_ > 1) {
      const float scale = 1.0f / static_cast<float>(n_);
      for (size_t i = 0; i < count; ++i) g[i] *= scale;
    }
  }

 private:
  int levels() const { return (1 << (bits_ - 1)) - 1; }
  // out: [norms of the ⌈c/d⌉ buckets | codes packed LSB-first into 32-bit words]
  void encode(const float* g, size_t count, float* out, int64_t step) const {
    Rng rng(rng_derive_seed(seed_, static_cast<uint64_t>(rank_), static_cast<uint64_t>(step), 0x9567dULL));
    const size_t buckets = (count + bucket_ - 1) / bucket_;
    const size_t n_words = words_ - buckets;
    for (size_t w = 0; w < n_words; ++w) out[buckets + w] = compress_word_to_float(0);
    const double s = levels();
    const uint32_t b = static_cast<uint32_t>(bits_);
    for (size_t k = 0; k < buckets; ++k) {
      const size_t begin = k * bucket_, end = std::min(count, begin + bucket_);
      double sq = 0;
      for (size_t i = begin; i < end; ++i) sq += double(g[i]) * double(g[i]);
      const float norm = static_cast<float>(std::sqrt(sq));
      out[k] = norm;
      for (size_t i = begin; i < end; ++i) {
        uint32_t level = 0;
        if (norm > 0) {
          const double u = std::min(s, s * std::fabs(double(g[i])) / double(norm));
          const double l = std::floor(u);
          level = static_cast<uint32_t>(l) + (rng.uniform() < u - l ? 1u : 0u);
          if (level > static_cast<uint32_t>(levels())) level = static_cast<uint32_t>(levels());
        }
        const uint32_t code = (std::signbit(g[i]) && level > 0 ? (1u << (b - 1)) : 0u) | level;
        put_code(out + buckets, i * b, b, code);
      }
    }
  }
  void decode_add(const float* in, size_t count, float* g) const {
    const size_t buckets = (count + bucket_ - 1) / bucket_;
    const uint32_t b = static_cast<uint32_t>(bits_);
    const uint32_t level_mask = (1u << (b - 1)) - 1;
    const float inv_s = 1.0f / static_cast<float>(levels());
    for (size_t k = 0; k < buckets; ++k) {
      const float scale = in[k] * inv_s;
      const size_t begin = k * bucket_, end = std::min(count, begin + bucket_);
      for (size_t i = begin; i < end; ++i) {
        const uint32_t code = get_code(in + buckets, i * b, b);
        const float v = scale * static_cast<float>(code & level_mask);
        g[i] += (code >> (b - 1)) ? -v : v;
      }
    }
  }
  // Codes of b ≤ 16 bits at bit offset `bit` of a word stream stored as float bit patterns.
  static void put_code(float* words, size_t bit, uint32_t b, uint32_t code) {
    const size_t w = bit / 32;
    const uint32_t off = static_cast<uint32_t>(bit % 32);
    words[w] = compress_word_to_float(compress_float_to_word(words[w]) | (code << off));
    if (off + b > 32)
      words[w + 1] = compress_word_to_float(compress_float_to_word(words[w + 1]) | (code >> (32 - off)));
  }
  static uint32_t get_code(const float* words, size_t bit, uint32_t b) {
    const size_t w = bit / 32;
    const uint32_t off = static_cast<uint32_t>(bit % 32);
    uint64_t v = compress_float_to_word(words[w]) >> off;
    if (off + b > 32) v |= uint64_t(compress_float_to_word(words[w + 1])) << (32 - off);
    return static_cast<uint32_t>(v) & ((1u << b) - 1);
  }

  int bits_;
  size_t bucket_;
  int n_ = 1, rank_ = 0;
  uint64_t seed_ = 0;
  size_t words_ = 0;
  std::vector<float> gathered_;  // n payloads of words_ each
};

}  // namespace

std::unique_ptr<GradientCompressor> compressor_create_qsgd(int bits, size_t bucket) {
  return std::make_unique<Qsgd>(bits, bucket);
}

}  // namespace dsgd
