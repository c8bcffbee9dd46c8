// Token + position embedding of a batch of token windows: for sample b, position t,
// x[b,t,:] = wte[token[b,t],:] + wpe[t,:]. wte is vocab×d, wpe is seq×d (row-major), x is
// (batch·seq)×d. Backward scatters dx into dwte (rows of the tokens present; the rest are
// zero) and sums it over the batch into dwpe. A double-precision naive reference (one-hot
// products over the whole vocabulary) is beside each pass.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsgd {

struct EmbeddingShape {
  size_t batch = 0;
  size_t seq = 0;    // positions per sample (rows of wpe used)
  size_t vocab = 0;  // rows of wte
  size_t d = 0;
};

// tokens: batch·seq ids in [0, vocab).
void embedding_forward(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe, float* x);
// dwte (vocab×d) and dwpe (seq×d) are overwritten.
void embedding_backward(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte, float* dwpe);

void embedding_forward_naive(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe,
                             float* x);
void embedding_backward_naive(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte,
                              float* dwpe);

}  // namespace dsgd
