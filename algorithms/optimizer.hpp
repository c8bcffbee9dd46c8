// The local optimizer every algorithm applies: SGD with momentum, optional Nesterov, and
// coupled L2 weight decay (the SVM's regulariser):
//   d = g + λ·x;  v ← μ·v + d;  x ← x − η·(nesterov ? d + μ·v : v)
// With μ = 0 this is plain SGD, x ← x − η·(g + λ·x). State is allocated once in setup.
#pragma once

#include <cstddef>
#include <vector>

namespace dsgd {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SgdOptimizer {
 public:
  SgdOptimizer(SgdOptions options, size_t count);
  // x ← update(x, g); params and grads have `count` floats.
  void step(float* params, const float* grads);
  const SgdOptions& options() const { return options_; }
  size_t count() const { return velocity_.size(); }

 private:
  SgdOptions options_;
  std::vector<float> velocity_;
};

}  // namespace dsgd
