// zero: sharded data parallel, ZeRO stage 2 (Rajbhandari et al., "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", SC 2020). Rank r owns the
// shard [b_r, b_{r+1}) of the flat parameters (Communicator::shard_begin):
//   ḡ_r ← reduce-scatter_average(g)       gradient: only the own shard is kept reduced
//   x[b_r, b_{r+1}) ← x − η·opt(ḡ_r)       optimizer step on the shard; optimizer state
//                                         (velocity) only for the shard
//   x ← all-gather(x)                     every rank gets every shard back
// Without quantisation this is ssgd exactly: the reduce-scatter sums the same two values
// per element as the all-reduce (bit-identical on 2 ranks). Bytes sent per step (ring):
// (n−1)/n·4|x| (reduce-scatter) + (n−1)/n·4|x| (all-gather) = 2(n−1)/n·4|x|, as ssgd.
//
// --zero-bits 4 --zero-group G (SDP4Bit, Jia et al., NeurIPS 2024), with round-to-nearest
// symmetric 4-bit quantisation per group of G values (scale = max|v|/7, codes −7..7):
//  - weights: rank r keeps a float32 master copy m_r of its shard; after its step it sends
//    the quantised difference Q(m_r − x[b_r..]) to the replicas (all-gather of packed
//    payloads) and every rank, r included, adds the dequantised difference to its replica x.
//    Since the difference is taken against the replica, quantisation error does not pile up.
//  - gradients: a direct (all-to-all) reduce-scatter: in round k = 1..n−1 rank r sends
//    Q(g[chunk (r+k) mod n]) to rank (r+k) mod n and receives Q(g_{(r−k) mod n}[own chunk]);
//    ḡ_r = (g_r[own] + Σ dequantised) / n.
//  Payload of L values: ⌈L/G⌉ float32 scales + ⌈L/8⌉ 32-bit words of codes.
//  Simplifications against the paper: no Hadamard smoothing and no 8-bit intra-node level
//  for gradients (one level, 4 bits).
// Model-state bytes per worker: 4·(2|x| + 2·s) with s = ⌈|x|/n⌉ (params, gradient, reduced
// gradient shard, velocity shard), + 4·s for the master copy and the payload buffers with 4 bits.
// Refused: fewer parameters than workers (a rank would own nothing).
#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

// 4-bit group quantisation: payload = [scales | packed codes], both as float words.
size_t q4_words(size_t len, size_t group) {
  return (len + group - 1) / group + (len + 7) / 8;
}

void q4_encode(const float* v, size_t len, size_t group, float* out) {
  const size_t groups = (len + group - 1) / group;
  float* codes = out + groups;
  const size_t words = (len + 7) / 8;
  for (size_t w = 0; w < words; ++w) codes[w] = compress_word_to_float(0);
  for (size_t gidx = 0; gidx < groups; ++gidx) {
    const size_t begin = gidx * group, end = std::min(len, begin + group);
    float amax = 0;
    for (size_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float scale = amax / 7.0f;
    out[gidx] = scale;
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (size_t i = begin; i < end; ++i) {
      const int q = std::clamp(static_cast<int>(std::nearbyint(v[i] * inv)), -7, 7);
      const uint32_t code = static_cast<uint32_t>(q + 8);  // 1..15
      const size_t w = i / 8;
      codes[w] = compress_word_to_float(compress_float_to_word(codes[w]) | (code << (4 * (i % 8))));
    }
  }
}

// out[i] += dequantised value i.
void q4_decode_add(const float* in, size_t len, size_t group, float* out) {
  const size_t groups = (len + group - 1) / group;
  const float* codes = in + groups;
  for (size_t i = 0; i < len; ++i) {
    const uint32_t code = (compress_float_to_word(codes[i / 8]) >> (4 * (i % 8))) & 0xfu;
    out[i] += in[i / group] * static_cast<float>(static_cast<int>(code) - 8);
  }
}

class Zero final : public Algorithm {
 public:
  Zero(const RunConfig& cfg, int bits, size_t group) : cfg_(cfg), bits_(bits), group_(group) {}
  std::string name() const override { return "zero"; }

  void setup(TrainState& s) override {
    n_ = s.comm.size();
    rank_ = s.comm.rank();
    if (s.count < static_cast<size_t>(n_))
      DSGD_THROW(InputError, "use fewer workers or a larger model",
                 "--algo zero: the model has {} parameters, fewer than the {} workers: nothing to shard", s.count, n_);
    begin_ = Communicator::shard_begin(s.count, n_, rank_);
    end_ = Communicator::shard_begin(s.count, n_, rank_ + 1);
    shard_grad_.assign(s.device, end_ - begin_);
    shard_opt_ = optimizer_create(cfg_, end_ - begin_, n_, s.device);
    if (bits_ == 4) {  // host only (Variant::host_only)
      const float* x = s.param_view().host_f32("zero --zero-bits 4");
      master_.assign(x + begin_, x + end_);
      const size_t max_len = (s.count + static_cast<size_t>(n_) - 1) / static_cast<size_t>(n_);
      words_ = q4_words(max_len, group_);
      gathered_.assign(static_cast<size_t>(n_) * words_, 0.0f);
      send_.assign(words_, 0.0f);
      recv_.assign(words_, 0.0f);
      diff_.assign(max_len, 0.0f);
    }
  }

  void reduce_gradients(TrainState& s) override {
    if (bits_ == 32) {
      s.comm.reduce_scatter_average(s.grad_view(), shard_grad_.view());
      return;
    }
    const size_t len = end_ - begin_;
    const float* grads = s.grad_view().host_f32("zero --zero-bits 4");
    std::copy(grads + begin_, grads + end_, shard_grad_.data());
    for (int k = 1; k < n_; ++k) {
      const int dest = (rank_ + k) % n_, source = (rank_ - k + n_) % n_;
      const size_t db = Communicator::shard_begin(s.count, n_, dest);
      const size_t de = Communicator::shard_begin(s.count, n_, dest + 1);
      q4_encode(grads + db, de - db, group_, send_.data());
      s.comm.sendrecv(send_.data(), q4_words(de - db, group_), dest, recv_.data(), q4_words(len, group_), source);
      q4_decode_add(recv_.data(), len, group_, shard_grad_.data());
    }
    if (n_ > 1) s.vec().scale(shard_grad_.view(), 1.0f / static_cast<float>(n_));
  }

  bool owns_optimizer() const override { return true; }
  void optimizer_step(TrainState& s) override {
    shard_opt_->step(bits_ == 32 ? s.params + begin_ : master_.data(), shard_grad_.data(), s.lr);
  }

  void after_update(TrainState& s) override {
    if (bits_ == 32) {
      s.comm.allgather(s.param_view());
      return;
    }
    const size_t len = end_ - begin_;
    float* x = s.param_view().host_f32("zero --zero-bits 4");
    for (size_t i = 0; i < len; ++i) diff_[i] = master_[i] - x[begin_ + i];
    q4_encode(diff_.data(), len, group_, gathered_.data() + static_cast<size_t>(rank_) * words_);
    s.comm.allgather(gathered_.data(), gathered_.size());
    for (int r = 0; r < n_; ++r) {
      const size_t b = Communicator::shard_begin(s.count, n_, r), e = Communicator::shard_begin(s.count, n_, r + 1);
      q4_decode_add(gathered_.data() + static_cast<size_t>(r) * words_, e - b, group_, x + b);
    }
  }

  bool replicas_identical() const override { return true; }

  double bytes_sent_per_step(double param_bytes, int n) const override {
    if (bits_ == 32) return 2.0 * ring_scatter_gather_bytes_sent(param_bytes, n);
    if (n <= 1) return 0.0;
    const size_t count = static_cast<size_t>(param_bytes / sizeof(float));
    const size_t max_len = (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
    // Gradients: each rank sends every other rank's chunk once: over all ranks, every chunk
    // n−1 times; the mean per rank is (n−1)/n · Σ_chunks payload.
    double grad_words = 0;
    for (int r = 0; r < n; ++r)
      grad_words +=
          double(q4_words(Communicator::shard_begin(count, n, r + 1) - Communicator::shard_begin(count, n, r), group_));
    const double grad_bytes = 4.0 * grad_words * double(n - 1) / n;
    const double weight_bytes = ring_scatter_gather_bytes_sent(4.0 * double(n) * double(q4_words(max_len, group_)), n);
    return grad_bytes + weight_bytes;
  }
  int max_collectives_per_step() const override { return bits_ == 32 ? 2 : n_; }

  double model_state_bytes(size_t count, int n) const override {
    const double shard = std::ceil(double(count) / n);
    double floats = 2.0 * double(count) + 2.0 * shard;
    if (bits_ == 4) {
      const double words = double(q4_words(static_cast<size_t>(shard), group_));
      floats += 2.0 * shard + double(n) * words + 2.0 * words;  // master, diff, gathered, send, recv
    }
    return sizeof(float) * floats;
  }

 private:
  RunConfig cfg_;
  int bits_;
  size_t group_;
  int n_ = 1, rank_ = 0;
  size_t begin_ = 0, end_ = 0;
  DeviceBuffer shard_grad_;
  std::unique_ptr<Optimizer> shard_opt_;
  std::vector<float> master_, diff_, gathered_, send_, recv_;
  size_t words_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_zero(const RunConfig& cfg) {
  return std::make_unique<Zero>(cfg, static_cast<int>(cfg.zero_bits), static_cast<size_t>(cfg.zero_group));
}

namespace {

void zero_validate(const RunConfig& cfg) {
  if (cfg.zero_bits != 32 && cfg.zero_bits != 4)
    config_fail("zero-bits", fmt::format("must be 32 or 4 (got {})", cfg.zero_bits), "pass --zero-bits 4 or 32");
  if (cfg.zero_group < 1 || cfg.zero_group > (int64_t(1) << 20))
    config_fail("zero-group", fmt::format("must be in 1..1048576 (got {})", cfg.zero_group),
                "pass e.g. --zero-group 128");
}

}  // namespace

const Variant& variant_zero() {
  static const Variant v = [] {
    Variant v;
    v.name = "zero";
    v.description = "sharded data parallel (ZeRO-2): reduce-scatter gradients, step on the own shard, all-gather";
    v.knobs = "--zero-bits 32|4, --zero-group G";
    v.flags = {{"zero-bits"}, {"zero-group"}};
    v.no_compress =
        "it shards its collectives (reduce-scatter, all-gather) and has its own quantisation, --zero-bits 4";
    v.no_compress_hint = "drop --compress (use --zero-bits 4 to quantise zero's communication)";
    v.validate = zero_validate;
    v.create = algorithm_create_zero;
    v.needs = [](const RunConfig& cfg) -> uint32_t {
      return cap_sharded_collectives | (cfg.zero_bits == 4 ? cap_point_to_point : cap_none);
    };
    v.host_only = [](const RunConfig& cfg) -> const char* {
      return cfg.zero_bits == 4 ? "--zero-bits 4 encodes its 4-bit codes on the host" : nullptr;
    };
    return v;
  }();
  return v;
}

}  // namespace dsgd
