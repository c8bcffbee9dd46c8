// The `transformer` workload (see transformer.hpp): parameter layout, buffers, and the
// forward / backward / evaluate passes over the layers of workloads/layers/.
// Limits: load_batch/forward/backward check only cheap preconditions and throw dsgd::Error
// on misuse; they never allocate (reserve() and the first evaluate() do).
#include "workloads/transformer.hpp"

#include <cmath>
#include <cstring>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "workloads/layers/attention.hpp"
#include "workloads/layers/embedding.hpp"
#include "workloads/layers/gelu.hpp"
#include "workloads/layers/kernel_profile.hpp"
#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/layernorm.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"

namespace dsgd {

namespace {

constexpr uint64_t kStreamInit = 0x6e7;
constexpr double kInitStd = 0.02;

using BlockLayout = TransformerBlockLayout;

void fill_normal(float* p, size_t n, double std, Rng& rng) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(std * rng.normal());
}
void fill_value(float* p, size_t n, float v) {
  for (size_t i = 0; i < n; ++i) p[i] = v;
}

// f() with its time added to kernel k of the step's profile (when profiling is on).
template <class F>
void timed(Kernel k, F&& f) {
  KernelTimer kt(k);
  f();
}

// y[i] += x[i] (the residual adds), on the --threads threads.
void add_into(float* y, const float* x, size_t n) {
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= kParallelMinStreamFloats)
#endif
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace

TransformerBlockLayout::TransformerBlockLayout(size_t d) {
  size_t o = 0;
  auto take = [&o](size_t n) {
    const size_t at = o;
    o += n;
    return at;
  };
  ln1_g = take(d);
  ln1_b = take(d);
  w_qkv = take(3 * d * d);
  b_qkv = take(3 * d);
  w_o = take(d * d);
  b_o = take(d);
  ln2_g = take(d);
  ln2_b = take(d);
  w_fc = take(4 * d * d);
  b_fc = take(4 * d);
  w_proj = take(4 * d * d);
  b_proj = take(d);
  size = o;
}

// Everything a forward over up to `cap` windows saves, plus the backward's scratch.
struct TransformerWorkload::Activations {
  size_t cap = 0;
  std::vector<int32_t> in, target;                     // cap·S
  std::vector<float> x;                                // (L+1)·N·d: block inputs; x[L] the last residual
  std::vector<float> xmid, ln1, ln2, ctx;              // L·N·d
  std::vector<float> m1, r1, m2, r2;                   // L·N
  std::vector<float> qkv;                              // L·N·3d
  std::vector<float> probs;                            // L·cap·H·S·S
  std::vector<float> hfc, hgelu;                       // L·N·4d
  std::vector<float> lnf, mf, rf, logits;              // N·d, N, N, N·V
  std::vector<float> dx, dln, dh, dctx, dqkv, dprobs;  // backward scratch (training buffers only; dprobs cap·H·S·S)

  Activations(const TransformerConfig& c, size_t cap_, bool with_backward) : cap(cap_) {
    const size_t L = c.layers, D = c.d_model, S = c.seq, N = cap * S;
    in.assign(N, 0);
    target.assign(N, 0);
    x.assign((L + 1) * N * D, 0.0f);
    xmid.assign(L * N * D, 0.0f);
    ln1.assign(L * N * D, 0.0f);
    ln2.assign(L * N * D, 0.0f);
    ctx.assign(L * N * D, 0.0f);
    m1.assign(L * N, 0.0f);
    r1.assign(L * N, 0.0f);
    m2.assign(L * N, 0.0f);
    r2.assign(L * N, 0.0f);
    qkv.assign(L * N * 3 * D, 0.0f);
    probs.assign(L * cap * c.heads * S * S, 0.0f);
    hfc.assign(L * N * 4 * D, 0.0f);
    hgelu.assign(L * N * 4 * D, 0.0f);
    lnf.assign(N * D, 0.0f);
    mf.assign(N, 0.0f);
    rf.assign(N, 0.0f);
    logits.assign(N * c.vocab, 0.0f);
    if (with_backward) {
      dx.assign(N * D, 0.0f);
      dln.assign(N * D, 0.0f);
      dh.assign(N * 4 * D, 0.0f);
      dctx.assign(N * D, 0.0f);
      dqkv.assign(N * 3 * D, 0.0f);
      dprobs.assign(cap * c.heads * S * S, 0.0f);
    }
  }
};

namespace {
// The bytes of Activations(c, cap, with_backward): its constructor's sizes, term by term.
double activation_bytes(const TransformerConfig& c, size_t cap, bool with_backward) {
  const double L = static_cast<double>(c.layers), D = static_cast<double>(c.d_model), S = static_cast<double>(c.seq),
               H = static_cast<double>(c.heads), V = static_cast<double>(c.vocab), n = static_cast<double>(cap);
  const double N = n * S;
  double floats = (L + 1) * N * D + 4 * L * N * D + 4 * L * N + L * N * 3 * D + L * n * H * S * S + 2 * L * N * 4 * D +
                  N * D + 2 * N + N * V;
  if (with_backward) floats += 3 * N * D + N * 4 * D + N * 3 * D + n * H * S * S;
  return floats * sizeof(float) + 2 * N * sizeof(int32_t);
}
}  // namespace

TransformerWorkload::TransformerWorkload(const TransformerConfig& cfg) : cfg_(cfg) {
  const size_t D = cfg.d_model;
  if (cfg.layers == 0 || D == 0 || cfg.heads == 0 || D % cfg.heads != 0 || cfg.seq == 0 || cfg.vocab == 0) {
    DSGD_THROW(Error, "", "transformer: bad shape (layers {}, d {}, heads {}, seq {}, vocab {})", cfg.layers, D,
               cfg.heads, cfg.seq, cfg.vocab);
  }
  size_t offset = 0;
  auto add = [&](std::string name, size_t count) {
    layers_.push_back(LayerView{std::move(name), offset, count});
    offset += count;
  };
  add("embedding", (cfg.vocab + cfg.seq) * D);
  const BlockLayout bl(D);
  for (size_t i = 0; i < cfg.layers; ++i) add("block" + std::to_string(i), bl.size);
  add("head", 2 * D + cfg.vocab * D);
  param_count_ = offset;
}

TransformerWorkload::~TransformerWorkload() = default;

void TransformerWorkload::do_init_params(float* params, uint64_t seed) const {
  Rng rng(rng_derive_seed(seed, kStreamInit));
  const size_t D = cfg_.d_model, L = cfg_.layers;
  const double resid_std = kInitStd / std::sqrt(2.0 * static_cast<double>(L));
  fill_normal(params, (cfg_.vocab + cfg_.seq) * D, kInitStd, rng);
  const BlockLayout bl(D);
  for (size_t i = 0; i < L; ++i) {
    float* p = params + layers_[1 + i].offset;
    fill_value(p + bl.ln1_g, D, 1.0f);
    fill_value(p + bl.ln1_b, D, 0.0f);
    fill_normal(p + bl.w_qkv, 3 * D * D, kInitStd, rng);
    fill_value(p + bl.b_qkv, 3 * D, 0.0f);
    fill_normal(p + bl.w_o, D * D, resid_std, rng);
    fill_value(p + bl.b_o, D, 0.0f);
    fill_value(p + bl.ln2_g, D, 1.0f);
    fill_value(p + bl.ln2_b, D, 0.0f);
    fill_normal(p + bl.w_fc, 4 * D * D, kInitStd, rng);
    fill_value(p + bl.b_fc, 4 * D, 0.0f);
    fill_normal(p + bl.w_proj, 4 * D * D, resid_std, rng);
    fill_value(p + bl.b_proj, D, 0.0f);
  }
  float* h = params + layers_[L + 1].offset;
  fill_value(h, D, 1.0f);
  fill_value(h + D, D, 0.0f);
  fill_normal(h + 2 * D, cfg_.vocab * D, kInitStd, rng);
}

double TransformerWorkload::reserve_bytes(size_t max_batch) const {
  // The training activations, and the evaluation's (kEvalBatch windows, made by the first evaluate()).
  return activation_bytes(cfg_, max_batch, true) + activation_bytes(cfg_, kEvalBatch, false);
}

void TransformerWorkload::reserve(size_t max_batch) {
  train_ = std::make_unique<Activations>(cfg_, max_batch, true);
  batch_n_ = 0;
  have_forward_ = false;
}

void TransformerWorkload::check_dataset(const Dataset& ds) const {
  if (ds.tokens.empty() || ds.window != cfg_.seq + 1 || ds.eval_stride == 0) {
    DSGD_THROW(Error, "load a text dataset and call dataset_set_window(ds, seq + 1) (workload_prepare_data)",
               "transformer: dataset {} is not text in windows of {} tokens (window {})", ds.name, cfg_.seq + 1,
               ds.window);
  }
}

void TransformerWorkload::gather(const Dataset& ds, size_t start, size_t i, Activations& a) const {
  const size_t S = cfg_.seq;
  const int32_t* src = ds.tokens.data() + start;
  for (size_t t = 0; t < S; ++t) {
    a.in[i * S + t] = src[t];
    a.target[i * S + t] = src[t + 1];
  }
}

void TransformerWorkload::load_batch(const Dataset& ds, const uint32_t* idx, size_t n) {
  if (!train_ || n == 0 || n > train_->cap) {
    DSGD_THROW(Error, "call reserve(max_batch) with the largest batch first",
               "transformer: load_batch of {} samples, but reserve() sized the buffers for {}", n,
               train_ ? train_->cap : 0);
  }
  check_dataset(ds);
  for (size_t i = 0; i < n; ++i) {
    if (idx[i] >= ds.rows)
      DSGD_THROW(Error, "", "transformer: sample {} beyond the {} windows of {}", idx[i], ds.rows, ds.name);
    gather(ds, idx[i], i, *train_);
  }
  batch_n_ = n;
  have_forward_ = false;
}

double TransformerWorkload::forward_pass(const float* params, Activations& a, size_t n, double* correct) {
  const size_t L = cfg_.layers, D = cfg_.d_model, S = cfg_.seq, V = cfg_.vocab;
  const size_t N = n * S, NC = a.cap * S;  // rows used, rows per layer slot
  for (size_t r = 0; r < N; ++r)
    if (a.in[r] < 0 || static_cast<size_t>(a.in[r]) >= V || a.target[r] < 0 || static_cast<size_t>(a.target[r]) >= V)
      DSGD_THROW(Error, "use --vocab larger than every token", "transformer: token {} outside the vocabulary of {}",
                 a.in[r] < 0 || static_cast<size_t>(a.in[r]) >= V ? a.in[r] : a.target[r], V);
  const float* wte = params;
  const float* wpe = params + V * D;
  timed(Kernel::gpt_embed, [&] { embedding_forward(EmbeddingShape{n, S, V, D}, a.in.data(), wte, wpe, a.x.data()); });
  const BlockLayout bl(D);
  const LayerNormShape ln{N, D};
  const AttentionShape as{n, S, D, cfg_.heads};
  // The forward hook (training only: an evaluation passes `correct`) between the blocks'
  // halves and before the head.
  const bool training = correct == nullptr;
  size_t hooked = 0;
  const auto hook = [&] {
    if (training) forward_hook_(hooked++);
  };
  for (size_t l = 0; l < L; ++l) {
    hook();
    const float* p = params + layers_[1 + l].offset;
    const float* x = a.x.data() + l * NC * D;
    float* xmid = a.xmid.data() + l * NC * D;
    float* xout = a.x.data() + (l + 1) * NC * D;
    float* ln1 = a.ln1.data() + l * NC * D;
    float* ln2 = a.ln2.data() + l * NC * D;
    float* hfc = a.hfc.data() + l * NC * 4 * D;
    float* hg = a.hgelu.data() + l * NC * 4 * D;
    timed(Kernel::gpt_ln_fwd, [&] {
      layernorm_forward(ln, x, p + bl.ln1_g, p + bl.ln1_b, ln1, a.m1.data() + l * NC, a.r1.data() + l * NC);
    });
    const AttentionCache cache{a.qkv.data() + l * NC * 3 * D, a.probs.data() + l * a.cap * cfg_.heads * S * S,
                               a.ctx.data() + l * NC * D};
    attention_forward(as, AttentionParams{p + bl.w_qkv, p + bl.b_qkv, p + bl.w_o, p + bl.b_o}, ln1, cache, xmid);
    timed(Kernel::gpt_residual, [&] { add_into(xmid, x, N * D); });
    hook();
    timed(Kernel::gpt_ln_fwd, [&] {
      layernorm_forward(ln, xmid, p + bl.ln2_g, p + bl.ln2_b, ln2, a.m2.data() + l * NC, a.r2.data() + l * NC);
    });
    timed(Kernel::gpt_mlp_gemm, [&] { linear_forward(LinearShape{N, D, 4 * D}, ln2, p + bl.w_fc, p + bl.b_fc, hfc); });
    timed(Kernel::gpt_gelu, [&] { gelu_forward(hfc, hg, N * 4 * D); });
    timed(Kernel::gpt_mlp_gemm, [&] {
      linear_forward(LinearShape{N, 4 * D, D}, hg, p + bl.w_proj, p + bl.b_proj, xout);
    });
    timed(Kernel::gpt_residual, [&] { add_into(xout, xmid, N * D); });
  }
  hook();
  const float* h = params + layers_[L + 1].offset;
  timed(Kernel::gpt_ln_fwd,
        [&] { layernorm_forward(ln, a.x.data() + L * NC * D, h, h + D, a.lnf.data(), a.mf.data(), a.rf.data()); });
  timed(Kernel::gpt_head_gemm, [&] {
    linear_forward(LinearShape{N, D, V}, a.lnf.data(), h + 2 * D, nullptr, a.logits.data());
  });
  KernelTimer kt(Kernel::gpt_loss);
  return softmax_cross_entropy_forward(a.logits.data(), a.target.data(), N, V, correct);
}

double TransformerWorkload::do_forward(const float* params) {
  if (batch_n_ == 0) DSGD_THROW(Error, "call load_batch() before forward()", "transformer: forward() without a batch");
  const double loss = forward_pass(params, *train_, batch_n_, nullptr);
  have_forward_ = true;
  return loss;
}

void TransformerWorkload::do_backward(const float* params, float* grads, const LayerHook& hook) {
  if (!have_forward_) {
    DSGD_THROW(Error, "call forward() on the loaded batch before backward()",
               "transformer: backward() without a forward() of the current batch");
  }
  Activations& a = *train_;
  const size_t L = cfg_.layers, D = cfg_.d_model, S = cfg_.seq, V = cfg_.vocab, n = batch_n_;
  const size_t N = n * S, NC = a.cap * S;
  const LayerNormShape ln{N, D};
  // Head: dlogits in place over the logits (the forward's logits are not needed again).
  timed(Kernel::gpt_loss, [&] {
    softmax_cross_entropy_backward(a.logits.data(), a.target.data(), N, V, 1.0f / static_cast<float>(N),
                                   a.logits.data());
  });
  const float* h = params + layers_[L + 1].offset;
  float* gh = grads + layers_[L + 1].offset;
  timed(Kernel::gpt_head_gemm, [&] {
    linear_backward(LinearShape{N, D, V}, a.lnf.data(), h + 2 * D, a.logits.data(), a.dln.data(), gh + 2 * D, nullptr);
  });
  timed(Kernel::gpt_ln_bwd, [&] {
    layernorm_backward(ln, a.x.data() + L * NC * D, h, a.mf.data(), a.rf.data(), a.dln.data(), a.dx.data(), gh, gh + D);
  });
  hook(L + 1);
  // Blocks, last first; a.dx holds the gradient of the residual stream.
  const BlockLayout bl(D);
  const AttentionShape as{n, S, D, cfg_.heads};
  for (size_t l = L; l-- > 0;) {
    const float* p = params + layers_[1 + l].offset;
    float* g = grads + layers_[1 + l].offset;
    const float* x = a.x.data() + l * NC * D;
    const float* xmid = a.xmid.data() + l * NC * D;
    const float* ln1 = a.ln1.data() + l * NC * D;
    const float* ln2 = a.ln2.data() + l * NC * D;
    const float* hfc = a.hfc.data() + l * NC * 4 * D;
    const float* hg = a.hgelu.data() + l * NC * 4 * D;
    // MLP.
    timed(Kernel::gpt_mlp_gemm, [&] {
      linear_backward(LinearShape{N, 4 * D, D}, hg, p + bl.w_proj, a.dx.data(), a.dh.data(), g + bl.w_proj,
                      g + bl.b_proj);
    });
    timed(Kernel::gpt_gelu, [&] { gelu_backward(hfc, a.dh.data(), a.dh.data(), N * 4 * D); });
    timed(Kernel::gpt_mlp_gemm, [&] {
      linear_backward(LinearShape{N, D, 4 * D}, ln2, p + bl.w_fc, a.dh.data(), a.dln.data(), g + bl.w_fc, g + bl.b_fc);
    });
    timed(Kernel::gpt_ln_bwd, [&] {
      layernorm_backward(ln, xmid, p + bl.ln2_g, a.m2.data() + l * NC, a.r2.data() + l * NC, a.dln.data(), a.dx.data(),
                         g + bl.ln2_g, g + bl.ln2_b, true);
    });
    // Attention.
    const AttentionCache cache{a.qkv.data() + l * NC * 3 * D, a.probs.data() + l * a.cap * cfg_.heads * S * S,
                               a.ctx.data() + l * NC * D};
    attention_backward(as, AttentionParams{p + bl.w_qkv, p + bl.b_qkv, p + bl.w_o, p + bl.b_o}, ln1, cache, a.dx.data(),
                       AttentionScratch{a.dctx.data(), a.dqkv.data(), a.dprobs.data()}, a.dln.data(),
                       AttentionGrads{g + bl.w_qkv, g + bl.b_qkv, g + bl.w_o, g + bl.b_o});
    timed(Kernel::gpt_ln_bwd, [&] {
      layernorm_backward(ln, x, p + bl.ln1_g, a.m1.data() + l * NC, a.r1.data() + l * NC, a.dln.data(), a.dx.data(),
                         g + bl.ln1_g, g + bl.ln1_b, true);
    });
    hook(1 + l);
  }
  timed(Kernel::gpt_embed, [&] {
    embedding_backward(EmbeddingShape{n, S, V, D}, a.in.data(), a.dx.data(), grads, grads + V * D);
  });
  hook(0);
  have_forward_ = false;
}

EvalSums TransformerWorkload::do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) {
  EvalSums sums;
  if (begin >= end) return sums;
  check_dataset(ds);
  if (end > ds.rows) {
    DSGD_THROW(Error, "", "transformer: evaluate range [{}, {}) is beyond the {} windows of {}", begin, end, ds.rows,
               ds.name);
  }
  if (!eval_) eval_ = std::make_unique<Activations>(cfg_, kEvalBatch, false);  // not part of the step
  const size_t S = cfg_.seq;
  // The windows at multiples of the stride: a range of ranks' slices covers each once,
  // whatever the number of ranks.
  const size_t stride = ds.eval_stride;
  size_t start = (begin + stride - 1) / stride * stride;
  while (start < end) {
    size_t n = 0;
    for (; n < kEvalBatch && start < end; ++n, start += stride) gather(ds, start, n, *eval_);
    double correct = 0;
    const double mean = forward_pass(params, *eval_, n, &correct);
    const double tokens = static_cast<double>(n * S);
    sums.loss_sum += mean * tokens;
    sums.correct += correct;
    sums.count += tokens;
  }
  return sums;
}

double TransformerWorkload::flops_per_sample() const {
  const double L = double(cfg_.layers), D = double(cfg_.d_model), S = double(cfg_.seq), V = double(cfg_.vocab);
  return 6.0 * S * (12.0 * L * D * D + V * D) + 6.0 * L * S * (S + 1.0) * D;  // causal attention: s ≤ t only
}

std::unique_ptr<Workload> transformer_create(const TransformerConfig& cfg, const Dataset& train) {
  if (train.tokens.empty()) {
    DSGD_THROW(InputError, "use a text dataset: --dataset fortunes, text:PATH or synthetic-text",
               "--workload transformer needs text, but dataset {} is not text", train.name);
  }
  if (static_cast<size_t>(train.classes) > cfg.vocab) {
    DSGD_THROW(InputError, fmt::format("pass --vocab {} (or more)", train.classes),
               "--vocab {} is too small: dataset {} is byte-level text with {} symbols", cfg.vocab, train.name,
               train.classes);
  }
  return std::make_unique<TransformerWorkload>(cfg);
}

}  // namespace dsgd
