// The `transformer` workload, `--model gpt`: a GPT-2-style decoder over byte-level text.
//   x0 = wte[token] + wpe[position]                       (layer 0 "embedding")
//   for each block i (layer i+1 "block{i}"), pre-LayerNorm:
//     x = x + attention(LN1(x))                           causal, `heads` heads (attention.hpp)
//     x = x + W_proj GELU(W_fc LN2(x) + b_fc) + b_proj     4·d hidden units, GELU tanh approx.
//   logits = W_head LNf(x)                                (layer L+1 "head": final LN + head)
//   loss   = mean over the batch's tokens of the next-token cross-entropy, in nats.
// The head is untied from wte and has no bias (GPT-2's head has none either).
// Parameters live in one flat buffer; a layer's view holds, in this order:
//   embedding: wte (V×d), wpe (S×d)
//   block:     ln1 γ, β (d each), W_qkv (3d×d), b_qkv (3d), W_o (d×d), b_o (d), ln2 γ, β,
//              W_fc (4d×d), b_fc (4d), W_proj (d×4d), b_proj (d)
//   head:      lnf γ, β (d each), W_head (V×d)
// Backward fires the hook for the head, then blocks L−1..0, then the embedding, each right
// after that layer's gradient is written: the embedding's is final only at the very end.
// Init as GPT-2, from the seed: weights N(0, 0.02), the residual projections W_o and
// W_proj N(0, 0.02/√(2L)), biases 0, LayerNorm γ = 1, β = 0.
// A sample is a window of S+1 tokens of the dataset (dataset_set_window): the first S are
// the input, the last S the targets. evaluate() uses the non-overlapping windows starting at
// begin, begin+S, ... < end, and returns sums per token (loss in nats, top-1 accuracy).
// Limits: the elementwise kernels run on --threads OpenMP threads only above 32k floats; the
// attention computes the diagonal tiles of the S×S score square whole and masks their upper
// triangles (attention.hpp), so it does about (S + 32)/(2·S) of the square, not exactly half.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "workloads/workload.hpp"

namespace dsgd {

struct TransformerConfig {
  size_t layers = 4;
  size_t d_model = 256;
  size_t heads = 4;
  size_t seq = 128;
  size_t vocab = 256;
};

// Offsets (in floats) of a block's tensors from the start of its view (the order above); shared
// by the CPU pass and the GPU one (workloads/cuda/transformer_cuda.*).
struct TransformerBlockLayout {
  size_t ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_fc, b_fc, w_proj, b_proj, size;
  explicit TransformerBlockLayout(size_t d);
};

class TransformerWorkload final : public Workload {
 public:
  explicit TransformerWorkload(const TransformerConfig& cfg);
  ~TransformerWorkload() override;

  std::string name() const override { return "transformer"; }
  const std::vector<LayerView>& layers() const override { return layers_; }
  size_t param_count() const override { return param_count_; }
  void reserve(size_t max_batch) override;
  double reserve_bytes(size_t max_batch) const override;
  void load_batch(const Dataset& ds, const uint32_t* idx, size_t n) override;
  // Model FLOPs per sample (S tokens), forward + backward = 3 × forward:
  //   6·S·(12·L·d² + V·d)   the projections (qkv 3d², out d², fc 4d², proj 4d² per block) and the head
  // + 6·L·S·(S+1)·d        q·kᵀ and P·v over the causal positions only, the S(S+1)/2 pairs s ≤ t
  //                        (2·S·(S+1)·d forward per block), not the full S×S square
  // Elementwise work (LayerNorm, GELU, softmax, residuals) and the embedding gather are left out,
  // and so are the masked entries the kernel computes in its diagonal tiles.
  double flops_per_sample() const override;

  const TransformerConfig& config() const { return cfg_; }
  static constexpr size_t kEvalBatch = 4;

 protected:
  void do_init_params(float* params, uint64_t seed) const override;
  double do_forward(const float* params) override;
  void do_backward(const float* params, float* grads, const LayerHook& hook) override;
  EvalSums do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) override;

 private:
  struct Activations;
  void check_dataset(const Dataset& ds) const;
  void gather(const Dataset& ds, size_t start, size_t i, Activations& a) const;
  double forward_pass(const float* params, Activations& a, size_t n, double* correct);

  TransformerConfig cfg_;
  std::vector<LayerView> layers_;
  size_t param_count_ = 0;
  std::unique_ptr<Activations> train_;  // reserve(max_batch)
  std::unique_ptr<Activations> eval_;   // kEvalBatch windows, allocated on first evaluate()
  size_t batch_n_ = 0;
  bool have_forward_ = false;
};

// From --layers/--d-model/--heads/--seq/--vocab, for a text training set; throws InputError
// when the dataset is not text or has symbols beyond --vocab.
std::unique_ptr<Workload> transformer_create(const TransformerConfig& cfg, const Dataset& train);

}  // namespace dsgd
