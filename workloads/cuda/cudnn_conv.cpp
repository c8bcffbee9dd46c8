// See cudnn_conv.hpp.
#include "workloads/cuda/cudnn_conv.hpp"

#include <algorithm>

#include "core/errors.hpp"

// The legacy convolution and batch-norm API is deprecated in cuDNN 9 but shipped and supported.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dsgd {

namespace {

void set_nchw(cudnnTensorDescriptor_t d, size_t n, size_t c, size_t h, size_t w) {
  DSGD_CUDA_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(n), int(c), int(h), int(w)));
}

// The first algorithm of cuDNN's heuristic list whose status is success.
template <class Perf>
auto first_ok(const Perf* perf, int returned, const char* what) {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i].algo;
  DSGD_THROW(Error, "", "cuDNN offers no {} algorithm for this convolution", what);
}

}  // namespace

CudnnConv2d::CudnnConv2d(const GpuContext& g, const Conv2dShape& s) : g_(g), s_(s) {
  DSGD_CUDA_CHECK(cudnnCreateTensorDescriptor(&x_desc_));
  DSGD_CUDA_CHECK(cudnnCreateTensorDescriptor(&y_desc_));
  DSGD_CUDA_CHECK(cudnnCreateFilterDescriptor(&w_desc_));
  DSGD_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv_desc_));
  set_nchw(x_desc_, s.n, s.c_in, s.h, s.w);
  set_nchw(y_desc_, s.n, s.c_out, s.h_out(), s.w_out());
  DSGD_CUDA_CHECK(cudnnSetFilter4dDescriptor(w_desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, int(s.c_out), int(s.c_in),
                                             int(s.k), int(s.k)));
  DSGD_CUDA_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_, int(s.pad), int(s.pad), int(s.stride), int(s.stride), 1,
                                                  1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DSGD_CUDA_CHECK(cudnnSetConvolutionMathType(
      conv_desc_, g.precision() == GemmPrecision::fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
  constexpr int kMax = 8;
  int returned = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[kMax];
  DSGD_CUDA_CHECK(
      cudnnGetConvolutionForwardAlgorithm_v7(g.dnn(), x_desc_, w_desc_, conv_desc_, y_desc_, kMax, &returned, fwd));
  fwd_algo_ = first_ok(fwd, returned, "forward");
  cudnnConvolutionBwdDataAlgoPerf_t bd[kMax];
  DSGD_CUDA_CHECK(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(g.dnn(), w_desc_, y_desc_, conv_desc_, x_desc_, kMax, &returned, bd));
  bwd_data_algo_ = first_ok(bd, returned, "backward-data");
  cudnnConvolutionBwdFilterAlgoPerf_t bf[kMax];
  DSGD_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(g.dnn(), x_desc_, y_desc_, conv_desc_, w_desc_, kMax,
                                                                &returned, bf));
  bwd_filter_algo_ = first_ok(bf, returned, "backward-filter");
  size_t a = 0, b = 0, c = 0;
  DSGD_CUDA_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(g.dnn(), x_desc_, w_desc_, conv_desc_, y_desc_, fwd_algo_, &a));
  DSGD_CUDA_CHECK(
      cudnnGetConvolutionBackwardDataWorkspaceSize(g.dnn(), w_desc_, y_desc_, conv_desc_, x_desc_, bwd_data_algo_, &b));
  DSGD_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(g.dnn(), x_desc_, y_desc_, conv_desc_, w_desc_,
                                                                 bwd_filter_algo_, &c));
  workspace_.resize(std::max({a, b, c}));
}

CudnnConv2d::~CudnnConv2d() {
  if (conv_desc_) (void)cudnnDestroyConvolutionDescriptor(conv_desc_);
  if (w_desc_) (void)cudnnDestroyFilterDescriptor(w_desc_);
  if (y_desc_) (void)cudnnDestroyTensorDescriptor(y_desc_);
  if (x_desc_) (void)cudnnDestroyTensorDescriptor(x_desc_);
}

void CudnnConv2d::forward(const float* x, const float* w, float* y) {
  const float one = 1.0f, zero = 0.0f;
  DSGD_CUDA_CHECK(cudnnConvolutionForward(g_.dnn(), &one, x_desc_, x, w_desc_, w, conv_desc_, fwd_algo_,
                                          workspace_.data(), workspace_.size(), &zero, y_desc_, y));
}

void CudnnConv2d::backward_input(const float* w, const float* dy, float* dx, bool accumulate) {
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  DSGD_CUDA_CHECK(cudnnConvolutionBackwardData(g_.dnn(), &one, w_desc_, w, y_desc_, dy, conv_desc_, bwd_data_algo_,
                                               workspace_.data(), workspace_.size(), &beta, x_desc_, dx));
}

void CudnnConv2d::backward_weights(const float* x, const float* dy, float* dw) {
  const float one = 1.0f, zero = 0.0f;
  DSGD_CUDA_CHECK(cudnnConvolutionBackwardFilter(g_.dnn(), &one, x_desc_, x, y_desc_, dy, conv_desc_, bwd_filter_algo_,
                                                 workspace_.data(), workspace_.size(), &zero, w_desc_, dw));
}

CudnnBatchNorm::CudnnBatchNorm(const GpuContext& g, size_t n, size_t c, size_t h, size_t w, float momentum, float eps)
    : g_(g), momentum_(momentum), eps_(std::max(eps, float(CUDNN_BN_MIN_EPSILON))) {
  DSGD_CUDA_CHECK(cudnnCreateTensorDescriptor(&x_desc_));
  DSGD_CUDA_CHECK(cudnnCreateTensorDescriptor(&bn_desc_));
  set_nchw(x_desc_, n, c, h, w);
  DSGD_CUDA_CHECK(cudnnDeriveBNTensorDescriptor(bn_desc_, x_desc_, CUDNN_BATCHNORM_SPATIAL));
}

CudnnBatchNorm::~CudnnBatchNorm() {
  if (bn_desc_) (void)cudnnDestroyTensorDescriptor(bn_desc_);
  if (x_desc_) (void)cudnnDestroyTensorDescriptor(x_desc_);
}

void CudnnBatchNorm::forward_train(const float* x, const float* gamma, const float* beta, float* y, float* save_mean,
                                   float* save_invstd, float* running_mean, float* running_var) {
  const float one = 1.0f, zero = 0.0f;
  DSGD_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
      g_.dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc_, x, x_desc_, y, bn_desc_, gamma, beta, double(momentum_),
      running_mean, running_var, double(eps_), save_mean, save_invstd));
}

void CudnnBatchNorm::backward(const float* x, const float* gamma, const float* save_mean, const float* save_invstd,
                              const float* dy, float* dx, float* dgamma, float* dbeta) {
  const float one = 1.0f, zero = 0.0f;
  DSGD_CUDA_CHECK(cudnnBatchNormalizationBackward(g_.dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x_desc_,
                                                  x, x_desc_, dy, x_desc_, dx, bn_desc_, gamma, dgamma, dbeta,
                                                  double(eps_), save_mean, save_invstd));
}

}  // namespace dsgd
