// The GPT-style transformer's training step on one GPU: the same model, parameter layout and
// arithmetic as workloads/transformer.hpp (TransformerWorkload, whose header states the
// model), with every tensor in device memory and every layer on the CUDA kernels of this
// folder (embedding, LayerNorm, attention on strided-batched cuBLAS GEMMs, GELU, linear on
// cuBLAS, softmax cross-entropy), at the context's GEMM precision (fp32 or tf32).
// A batch is loaded from host token windows into pinned memory and copied asynchronously; the
// forward returns the mean loss (one synchronisation, for the loss); the backward writes the
// gradient of the mean loss into a device gradient buffer and calls the layer hook after each
// layer's gradient kernels are enqueued (an event recorded then marks it ready on the stream).
// Status (docs/gpu.md): compiled and checked against the CPU workload by a GPU test; not yet
// behind the Workload interface (the trainer runs it through bench_gpu_step only), and not yet
// run on a GPU. Only built with CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/cuda_buffer.hpp"
#include "workloads/cuda/gpu_context.hpp"
#include "workloads/transformer.hpp"

namespace dsgd {

class TransformerCuda {
 public:
  TransformerCuda(GpuContext& g, const TransformerConfig& cfg);
  ~TransformerCuda();
  const std::vector<LayerView>& layers() const { return layers_; }
  size_t param_count() const { return param_count_; }
  // Allocates every device buffer for batches up to max_batch windows.
  void reserve(size_t max_batch);
  // n windows of S+1 tokens each (host, row-major): inputs are the first S, targets the last S.
  void load_batch(const int32_t* windows, size_t n);
  double forward(const float* params);
  void backward(const float* params, float* grads, const LayerHook& hook);
  // As TransformerWorkload::flops_per_sample: model FLOPs, the attention's causal half only
  // (the kernels here compute the full S×S square, so MFU does not credit the masked half).
  double flops_per_sample() const;

 private:
  struct Buffers;
  GpuContext& g_;
  TransformerConfig cfg_;
  std::vector<LayerView> layers_;
  size_t param_count_ = 0;
  std::unique_ptr<Buffers> b_;
  size_t batch_n_ = 0;
};

}  // namespace dsgd
