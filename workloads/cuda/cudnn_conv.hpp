// 2-D convolution (no bias) on cuDNN for the GPU ResNet: the shapes of
// workloads/layers/conv2d.hpp (Conv2dShape: square kernel, equal strides, symmetric zero
// padding; weights (Cout, Cin, k, k)) but activations in cuDNN's packed NCHW, not the CPU's
// CNHW (the tests permute). Descriptors, algorithms (cuDNN's heuristics, _v7 queries) and one
// workspace for the three passes are set up once in the constructor; the passes never
// allocate. Math: FMA (exact float) at fp32, tensor-op math (TF32) at tf32.
// cuDNN 9 marks this legacy API deprecated (the graph API replaces it); it is still shipped.
// Only built with CUDA.
#pragma once

#include <cudnn.h>

#include "core/cuda/cuda_buffer.hpp"
#include "workloads/cuda/gpu_context.hpp"
#include "workloads/layers/conv2d.hpp"

namespace dsgd {

class CudnnConv2d {
 public:
  CudnnConv2d(const GpuContext& g, const Conv2dShape& s);
  ~CudnnConv2d();
  CudnnConv2d(const CudnnConv2d&) = delete;
  CudnnConv2d& operator=(const CudnnConv2d&) = delete;

  const Conv2dShape& shape() const { return s_; }
  // y (N, Cout, Ho, Wo) = conv(x (N, Cin, H, W), w).
  void forward(const float* x, const float* w, float* y);
  // dx = the input gradient: overwritten, or added to when accumulate.
  void backward_input(const float* w, const float* dy, float* dx, bool accumulate);
  // dw = the weight gradient (overwritten).
  void backward_weights(const float* x, const float* dy, float* dw);
  size_t workspace_bytes() const { return workspace_.size(); }

 private:
  const GpuContext& g_;
  Conv2dShape s_;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
  CudaBuffer<unsigned char> workspace_;
};

// Batch normalisation of an NCHW activation on cuDNN (spatial mode: per channel over N·H·W),
// the rule of workloads/layers/batchnorm.hpp. cuDNN keeps the running variance with the
// unbiased batch variance and factor `momentum`, as PyTorch and the CPU layer do; it saves
// the batch mean and 1/√(σ² + ε) for the backward.
class CudnnBatchNorm {
 public:
  CudnnBatchNorm(const GpuContext& g, size_t n, size_t c, size_t h, size_t w, float momentum = 0.1f, float eps = 1e-5f);
  ~CudnnBatchNorm();
  CudnnBatchNorm(const CudnnBatchNorm&) = delete;
  CudnnBatchNorm& operator=(const CudnnBatchNorm&) = delete;
  // Training forward: y, save_mean/save_invstd (c floats each), running stats updated.
  void forward_train(const float* x, const float* gamma, const float* beta, float* y, float* save_mean,
                     float* save_invstd, float* running_mean, float* running_var);
  // dx, dgamma, dbeta overwritten.
  void backward(const float* x, const float* gamma, const float* save_mean, const float* save_invstd, const float* dy,
                float* dx, float* dgamma, float* dbeta);

 private:
  const GpuContext& g_;
  float momentum_, eps_;
  cudnnTensorDescriptor_t x_desc_ = nullptr, bn_desc_ = nullptr;
};

}  // namespace dsgd
