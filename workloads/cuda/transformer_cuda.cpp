// See transformer_cuda.hpp. The passes mirror TransformerWorkload::forward_pass / backward line
// by line (workloads/transformer.cpp) with each CPU layer call replaced by its CUDA form.
#include "workloads/cuda/transformer_cuda.hpp"

#include "core/errors.hpp"
#include "workloads/cuda/attention.hpp"
#include "workloads/cuda/elementwise.hpp"
#include "workloads/cuda/embedding.hpp"
#include "workloads/cuda/layernorm.hpp"
#include "workloads/cuda/linear.hpp"
#include "workloads/cuda/softmax.hpp"

namespace dsgd {

struct TransformerCuda::Buffers {
  size_t cap = 0;
  PinnedBuffer<int32_t> host_tokens;         // 2·cap·S: inputs then targets
  CudaBuffer<int32_t> tokens;                // 2·cap·S
  CudaBuffer<float> x, xmid, ln1, ln2, ctx;  // (L+1)·N·d, L·N·d each
  CudaBuffer<float> m1, r1, m2, r2, qkv, probs, hfc, hgelu;
  CudaBuffer<float> lnf, mf, rf, logits, row_loss, row_hit;
  CudaBuffer<float> dx, dln, dh, dctx, dqkv, dprobs;
  CudaBuffer<double> sums;
  Buffers(const TransformerConfig& c, size_t cap_) : cap(cap_), host_tokens(2 * cap_ * c.seq) {
    const size_t L = c.layers, D = c.d_model, S = c.seq, N = cap * S, P = cap * c.heads * S * S;
    tokens.resize(2 * N);
    x.resize((L + 1) * N * D);
    for (auto* b : {&xmid, &ln1, &ln2, &ctx}) b->resize(L * N * D);
    for (auto* b : {&m1, &r1, &m2, &r2}) b->resize(L * N);
    qkv.resize(L * N * 3 * D);
    probs.resize(L * P);
    hfc.resize(L * N * 4 * D);
    hgelu.resize(L * N * 4 * D);
    lnf.resize(N * D);
    mf.resize(N);
    rf.resize(N);
    logits.resize(N * c.vocab);
    row_loss.resize(N);
    row_hit.resize(N);
    dx.resize(N * D);
    dln.resize(N * D);
    dh.resize(N * 4 * D);
    dctx.resize(N * D);
    dqkv.resize(N * 3 * D);
    dprobs.resize(P);
    sums.resize(2);
  }
};

TransformerCuda::TransformerCuda(GpuContext& g, const TransformerConfig& cfg) : g_(g), cfg_(cfg) {
  // The layout is the CPU workload's (one source of truth for the parameter views).
  const TransformerWorkload cpu(cfg);
  layers_ = cpu.layers();
  param_count_ = cpu.param_count();
}

TransformerCuda::~TransformerCuda() = default;

void TransformerCuda::reserve(size_t max_batch) {
  b_ = std::make_unique<Buffers>(cfg_, max_batch);
  batch_n_ = 0;
}

void TransformerCuda::load_batch(const int32_t* windows, size_t n) {
  if (!b_ || n == 0 || n > b_->cap)
    DSGD_THROW(Error, "call reserve(max_batch) with the largest batch first",
               "transformer (GPU): load_batch of {} windows, reserve() sized for {}", n, b_ ? b_->cap : 0);
  const size_t S = cfg_.seq, N = n * S;
  int32_t* h = b_->host_tokens.data();
  for (size_t i = 0; i < n; ++i)
    for (size_t t = 0; t < S; ++t) {
      const int32_t in = windows[i * (S + 1) + t], tgt = windows[i * (S + 1) + t + 1];
      if (in < 0 || size_t(in) >= cfg_.vocab || tgt < 0 || size_t(tgt) >= cfg_.vocab)
        DSGD_THROW(Error, "use --vocab larger than every token",
                   "transformer (GPU): token outside the vocabulary of {}", cfg_.vocab);
      h[i * S + t] = in;
      h[N + i * S + t] = tgt;
    }
  // Pinned source: the copy is asynchronous and overlaps whatever the stream still runs.
  DSGD_CUDA_CHECK(cudaMemcpyAsync(b_->tokens.data(), h, 2 * N * sizeof(int32_t), cudaMemcpyHostToDevice, g_.stream()));
  batch_n_ = n;
}

double TransformerCuda::forward(const float* params) {
  if (batch_n_ == 0) DSGD_THROW(Error, "call load_batch() before forward()", "transformer (GPU): no batch");
  Buffers& a = *b_;
  const size_t L = cfg_.layers, D = cfg_.d_model, S = cfg_.seq, V = cfg_.vocab, n = batch_n_;
  const size_t N = n * S, NC = a.cap * S;
  const cudaStream_t st = g_.stream();
  const int32_t* in = a.tokens.data();
  const int32_t* target = a.tokens.data() + N;
  embedding_forward_cuda(EmbeddingShape{n, S, V, D}, in, params, params + V * D, a.x.data(), st);
  const TransformerBlockLayout bl(D);
  const LayerNormShape ln{N, D};
  const AttentionShape as{n, S, D, cfg_.heads};
  for (size_t l = 0; l < L; ++l) {
    const float* p = params + layers_[1 + l].offset;
    const float* x = a.x.data() + l * NC * D;
    float* xmid = a.xmid.data() + l * NC * D;
    float* xout = a.x.data() + (l + 1) * NC * D;
    float* ln1 = a.ln1.data() + l * NC * D;
    float* ln2 = a.ln2.data() + l * NC * D;
    float* hfc = a.hfc.data() + l * NC * 4 * D;
    float* hg = a.hgelu.data() + l * NC * 4 * D;
    layernorm_forward_cuda(ln, x, p + bl.ln1_g, p + bl.ln1_b, ln1, a.m1.data() + l * NC, a.r1.data() + l * NC, st);
    const AttentionCache cache{a.qkv.data() + l * NC * 3 * D, a.probs.data() + l * a.cap * cfg_.heads * S * S,
                               a.ctx.data() + l * NC * D};
    attention_forward_cuda(g_, as, AttentionParams{p + bl.w_qkv, p + bl.b_qkv, p + bl.w_o, p + bl.b_o}, ln1, cache,
                           xmid);
    add_inplace_cuda(xmid, x, N * D, st);
    layernorm_forward_cuda(ln, xmid, p + bl.ln2_g, p + bl.ln2_b, ln2, a.m2.data() + l * NC, a.r2.data() + l * NC, st);
    linear_forward_cuda(g_, LinearShape{N, D, 4 * D}, ln2, p + bl.w_fc, p + bl.b_fc, hfc);
    gelu_forward_cuda(hfc, hg, N * 4 * D, st);
    linear_forward_cuda(g_, LinearShape{N, 4 * D, D}, hg, p + bl.w_proj, p + bl.b_proj, xout);
    add_inplace_cuda(xout, xmid, N * D, st);
  }
  const float* h = params + layers_[L + 1].offset;
  layernorm_forward_cuda(ln, a.x.data() + L * NC * D, h, h + D, a.lnf.data(), a.mf.data(), a.rf.data(), st);
  linear_forward_cuda(g_, LinearShape{N, D, V}, a.lnf.data(), h + 2 * D, nullptr, a.logits.data());
  return softmax_cross_entropy_forward_cuda(a.logits.data(), target, N, V, a.row_loss.data(), a.row_hit.data(),
                                            a.sums.data(), st);
}

void TransformerCuda::backward(const float* params, float* grads, const LayerHook& hook) {
  if (batch_n_ == 0) DSGD_THROW(Error, "call forward() before backward()", "transformer (GPU): no batch");
  Buffers& a = *b_;
  const size_t L = cfg_.layers, D = cfg_.d_model, S = cfg_.seq, V = cfg_.vocab, n = batch_n_;
  const size_t N = n * S, NC = a.cap * S;
  const cudaStream_t st = g_.stream();
  const int32_t* in = a.tokens.data();
  const int32_t* target = a.tokens.data() + N;
  const LayerNormShape ln{N, D};
  softmax_cross_entropy_backward_cuda(a.logits.data(), target, N, V, 1.0f / float(N), a.logits.data(), st);
  const float* h = params + layers_[L + 1].offset;
  float* gh = grads + layers_[L + 1].offset;
  linear_backward_cuda(g_, LinearShape{N, D, V}, a.lnf.data(), h + 2 * D, a.logits.data(), a.dln.data(), gh + 2 * D,
                       nullptr);
  layernorm_backward_cuda(ln, a.x.data() + L * NC * D, h, a.mf.data(), a.rf.data(), a.dln.data(), a.dx.data(), gh,
                          gh + D, false, st);
  hook(L + 1);
  const TransformerBlockLayout bl(D);
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
    linear_backward_cuda(g_, LinearShape{N, 4 * D, D}, hg, p + bl.w_proj, a.dx.data(), a.dh.data(), g + bl.w_proj,
                         g + bl.b_proj);
    gelu_backward_cuda(hfc, a.dh.data(), a.dh.data(), N * 4 * D, st);
    linear_backward_cuda(g_, LinearShape{N, D, 4 * D}, ln2, p + bl.w_fc, a.dh.data(), a.dln.data(), g + bl.w_fc,
                         g + bl.b_fc);
    layernorm_backward_cuda(ln, xmid, p + bl.ln2_g, a.m2.data() + l * NC, a.r2.data() + l * NC, a.dln.data(),
                            a.dx.data(), g + bl.ln2_g, g + bl.ln2_b, true, st);
    const AttentionCache cache{a.qkv.data() + l * NC * 3 * D, a.probs.data() + l * a.cap * cfg_.heads * S * S,
                               a.ctx.data() + l * NC * D};
    attention_backward_cuda(g_, as, AttentionParams{p + bl.w_qkv, p + bl.b_qkv, p + bl.w_o, p + bl.b_o}, ln1, cache,
                            a.dx.data(), AttentionScratch{a.dctx.data(), a.dqkv.data(), a.dprobs.data()}, a.dln.data(),
                            AttentionGrads{g + bl.w_qkv, g + bl.b_qkv, g + bl.w_o, g + bl.b_o});
    layernorm_backward_cuda(ln, x, p + bl.ln1_g, a.m1.data() + l * NC, a.r1.data() + l * NC, a.dln.data(), a.dx.data(),
                            g + bl.ln1_g, g + bl.ln1_b, true, st);
    hook(1 + l);
  }
  embedding_backward_cuda(EmbeddingShape{n, S, V, D}, in, a.dx.data(), grads, grads + V * D, st);
  hook(0);
}

double TransformerCuda::flops_per_sample() const {
  return TransformerWorkload(cfg_).flops_per_sample();
}

}  // namespace dsgd
