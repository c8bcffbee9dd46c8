// Optional wall-clock accounting of a training step by kernel kind (im2col, GEMM, oneDNN,
// BatchNorm, the GPT step's layers, ...), for profiling (bench_resnet --profile,
// bench_gpt_step --profile 1). Off by default: a disabled KernelTimer costs one load and branch. The accounting is
// process-global and meant for one thread driving the step (the kernels' own threads are inside the timed calls); it
// never changes a result.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <vector>

namespace dsgd {

enum class Kernel : size_t {
  im2col,
  col2im,
  gemm_fwd,
  gemm_bwd_w,
  gemm_bwd_in,
  zero_dx,
  onednn_fwd,
  onednn_bwd_w,
  onednn_bwd_in,
  direct_fwd,
  direct_bwd_w,
  direct_bwd_in,
  bn_fwd,
  bn_bwd,
  join_fwd,
  join_bwd,
  pool_head,
  loss,
  // The GPT step (workloads/transformer.cpp, layers/attention.cpp):
  gpt_embed,      // embedding gather and its gradient scatter
  gpt_ln_fwd,     // LayerNorm forward (ln1, ln2, lnf)
  gpt_ln_bwd,     // LayerNorm backward
  gpt_attn_proj,  // the attention's qkv and output projections (GEMMs), forward + backward
  gpt_attn_fwd,   // the causal products and softmax, per (sample, head)
  gpt_attn_bwd,   // their backward
  gpt_mlp_gemm,   // fc and proj (GEMMs and bias), forward + backward
  gpt_gelu,       // GELU forward + backward
  gpt_residual,   // residual adds
  gpt_head_gemm,  // the head's GEMMs, forward + backward
  gpt_loss,       // softmax cross-entropy forward + backward
  count
};

inline const char* kernel_name(Kernel k) {
  static const char* names[] = {"im2col",       "col2im",        "gemm_fwd",      "gemm_bwd_w",    "gemm_bwd_in",
                                "zero_dx",      "onednn_fwd",    "onednn_bwd_w",  "onednn_bwd_in", "direct_fwd",
                                "direct_bwd_w", "direct_bwd_in", "bn_relu_fwd",   "bn_relu_bwd",   "join_fwd",
                                "join_bwd",     "pool_head",     "loss",          "gpt_embed",     "gpt_ln_fwd",
                                "gpt_ln_bwd",   "gpt_attn_proj", "gpt_attn_fwd",  "gpt_attn_bwd",  "gpt_mlp_gemm",
                                "gpt_gelu",     "gpt_residual",  "gpt_head_gemm", "gpt_loss"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Kernel::count), "a name per Kernel");
  return names[static_cast<size_t>(k)];
}

struct KernelProfile {
  bool enabled = false;
  std::array<double, static_cast<size_t>(Kernel::count)> seconds{};
  void clear() { seconds.fill(0.0); }
};

inline KernelProfile& kernel_profile() {
  static KernelProfile p;
  return p;
}

// Adds the time from construction to destruction to kernel k (when profiling is enabled).
class KernelTimer {
 public:
  explicit KernelTimer(Kernel k) : k_(k), on_(kernel_profile().enabled) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~KernelTimer() {
    if (on_)
      kernel_profile().seconds[static_cast<size_t>(k_)] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  Kernel k_;
  bool on_;
  std::chrono::steady_clock::time_point t0_;
};

// Adds the time from construction to destruction to slots[i] (when profiling is enabled):
// per-layer accounting by the workloads.
class SlotTimer {
 public:
  SlotTimer(std::vector<double>& slots, size_t i) : slots_(slots), i_(i), on_(kernel_profile().enabled) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~SlotTimer() {
    if (on_ && i_ < slots_.size())
      slots_[i_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  SlotTimer(const SlotTimer&) = delete;
  SlotTimer& operator=(const SlotTimer&) = delete;

 private:
  std::vector<double>& slots_;
  size_t i_;
  bool on_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace dsgd
