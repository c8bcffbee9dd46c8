// SGD with momentum / Nesterov / weight decay; see optimizer.hpp for the rule.
#include "algorithms/optimizer.hpp"

namespace dsgd {

SgdOptimizer::SgdOptimizer(SgdOptions options, size_t count) : options_(options), velocity_(count, 0.0f) {}

void SgdOptimizer::step(float* params, const float* grads) {
  const float lr = static_cast<float>(options_.lr);
  const float mu = static_cast<float>(options_.momentum);
  const float wd = static_cast<float>(options_.weight_decay);
  const size_t n = velocity_.size();
  float* v = velocity_.data();
  if (mu == 0.0f) {
    for (size_t i = 0; i < n; ++i) params[i] -= lr * (grads[i] + wd * params[i]);
    return;
  }
  if (options_.nesterov) {
    for (size_t i = 0; i < n; ++i) {
      const float d = grads[i] + wd * params[i];
      v[i] = mu * v[i] + d;
      params[i] -= lr * (d + mu * v[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + grads[i] + wd * params[i];
      params[i] -= lr * v[i];
    }
  }
}

}  // namespace dsgd
