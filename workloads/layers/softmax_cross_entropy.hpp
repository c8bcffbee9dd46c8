// Softmax cross-entropy over a batch of logits (n rows × c classes) with integer targets:
// the loss of classifiers (ResNet) and of next-token prediction (transformer). Forward
// returns the mean loss and keeps nothing; backward writes dlogits = (softmax − onehot)
// × scale (scale = 1/n for the mean). A naive double-precision reference is beside each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsgd {

// Mean over rows of −log softmax(logits)[target]; numerically stable (max-subtracted).
// correct (optional) receives the number of rows whose arg-max equals the target.
double softmax_cross_entropy_forward(const float* logits, const int32_t* targets, size_t n, size_t c,
                                     double* correct = nullptr);
// dlogits[i] = (softmax(logits[i]) − onehot(target[i])) × scale; dlogits may alias logits.
void softmax_cross_entropy_backward(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                    float* dlogits);

double softmax_cross_entropy_forward_naive(const float* logits, const int32_t* targets, size_t n, size_t c);
void softmax_cross_entropy_backward_naive(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                          float* dlogits);

}  // namespace dsgd
