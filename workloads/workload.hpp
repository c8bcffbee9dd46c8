// The workload interface: a model whose parameters live in one flat buffer with
// per-layer views, a data phase that assembles a batch, forward and backward passes,
// and an evaluation. Backward calls the layer hook the moment each layer's gradient is
// final (reverse layer order): the seam for wait-free backprop and layer-wise sync.
// Workloads allocate in reserve(); forward/backward/load_batch never allocate.
//
// Parameters and gradients are buffer views (core/buffer.hpp) in the workload's device()
// memory: the public methods check the view (float32, the workload's device, param_count()
// elements) and call the implementation's do_* with the raw pointer, which is a device
// pointer for a device workload. The host-pointer overloads build a host view (for code and
// tests on the host). Every workload today computes on the host; GPU workloads that train end
// to end are planned (docs/gpu.md). Batches (load_batch) are staged by the workload itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

struct LayerView {
  std::string name;
  size_t offset = 0;  // in floats, into the flat parameter (and gradient) buffer
  size_t count = 0;   // number of floats
};

// Called with a layer index when that layer's gradient is complete. A plain function
// pointer + context so calling it never allocates.
struct LayerHook {
  void (*fn)(void* ctx, size_t layer) = nullptr;
  void* ctx = nullptr;
  void operator()(size_t layer) const {
    if (fn) fn(ctx, layer);
  }
};

// Sums over a range of samples; the caller divides (and can all-reduce the sums first).
struct EvalSums {
  double loss_sum = 0;
  double correct = 0;
  double count = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<LayerView>& layers() const = 0;
  virtual size_t param_count() const = 0;
  // Where the parameters, gradients and activations live (default: the host).
  virtual Device device() const { return kHostDevice; }
  // Deterministic initialisation from the seed (same on every rank).
  void init_params(BufferView params, uint64_t seed) const { do_init_params(checked(params, "init_params"), seed); }
  // Allocates every buffer the step needs for batches up to max_batch.
  virtual void reserve(size_t max_batch) = 0;
  // The bytes reserve(max_batch) and the first evaluate() allocate (batch copy, activations,
  // their gradients, scratch, library buffers), from the shapes alone and allocating nothing:
  // the memory preflight's per-worker figure for the batch (engine/memory_estimate.hpp).
  // In double: a refused batch may be far beyond size_t arithmetic.
  // A workload that does not state it returns −1 (the input batch alone is counted).
  virtual double reserve_bytes(size_t max_batch) const { return -1; }
  // Data phase: copies/points the samples idx[0..n) of ds into the batch buffers.
  virtual void load_batch(const Dataset& ds, const uint32_t* idx, size_t n) = 0;
  // Forward on the loaded batch; returns the mean data loss (no regulariser).
  double forward(ConstBufferView params) { return do_forward(checked(params, "forward")); }
  // Backward of the last forward: writes the gradient of the mean data loss into grads
  // (param_count floats, overwritten, not accumulated) and calls hook(layer) for each
  // layer in reverse order as soon as that layer's slice of grads is final.
  void backward(ConstBufferView params, BufferView grads, const LayerHook& hook) {
    do_backward(checked(params, "backward"), checked(grads, "backward"), hook);
  }
  // Copies the state that training evolves besides the parameters (ResNet: the BatchNorm
  // running statistics and the augmentation stream's batch counter; the other workloads have
  // none) from `other`, an instance of the same workload and configuration. Several instances
  // then take turns at one worker's steps as one instance would (pdasgd's forward passes in
  // flight, algorithms/decoupled_forward.hpp), and evaluate() of the copy sees that state.
  virtual void copy_training_state(const Workload& other) {}
  // Loss and accuracy sums over samples [begin, end) of ds (no side effects on training state).
  EvalSums evaluate(ConstBufferView params, const Dataset& ds, size_t begin, size_t end) {
    return do_evaluate(checked(params, "evaluate"), ds, begin, end);
  }

  // Host-pointer convenience overloads (each builds a host view of param_count() floats).
  void init_params(float* params, uint64_t seed) const { init_params(host_view(params, param_count()), seed); }
  double forward(const float* params) { return forward(host_view(params, param_count())); }
  void backward(const float* params, float* grads, const LayerHook& hook) {
    backward(host_view(params, param_count()), host_view(grads, param_count()), hook);
  }
  EvalSums evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) {
    return evaluate(host_view(params, param_count()), ds, begin, end);
  }

  // Floating-point operations of one training sample (forward + backward).
  virtual double flops_per_sample() const = 0;

  // Called between the layers of a training forward pass (not an evaluation's), with the
  // index of the step just done, by the workloads that have layers (ResNet, the transformer):
  // the trainer serves other ranks' requests on this rank's window there
  // (Communicator::window_progress). Default: none. The backward pass's hook is backward()'s
  // argument.
  void set_forward_hook(const LayerHook& hook) { forward_hook_ = hook; }

 protected:
  LayerHook forward_hook_;

  // The implementation, on raw float32 pointers in device() memory (param_count() floats).
  virtual void do_init_params(float* params, uint64_t seed) const = 0;
  virtual double do_forward(const float* params) = 0;
  virtual void do_backward(const float* params, float* grads, const LayerHook& hook) = 0;
  virtual EvalSums do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) = 0;

 private:
  // The pointer of a float32 view on device() with param_count() elements; Error otherwise.
  float* checked(BufferView v, const char* what) const {
    if (!ok(v)) refuse(v, what);
    return v.f32();
  }
  const float* checked(ConstBufferView v, const char* what) const {
    if (!ok(v)) refuse(v, what);
    return v.f32();
  }
  bool ok(ConstBufferView v) const {
    return v.dtype == DType::dtype_f32 && v.device == device() && v.count == param_count();
  }
  [[noreturn]] void refuse(ConstBufferView v, const char* what) const;
};

struct WorkloadInfo {
  std::string name;
  std::string description;
};

struct RunConfig;

// The registry (workloads/registry.cpp): creates cfg.workload (with its model fields:
// --model, --layers, ...) sized for the training set. Throws InputError on an unknown
// workload or a model/dataset mismatch.
std::unique_ptr<Workload> workload_create(const RunConfig& cfg, const Dataset& train);
// What a compute profile of cfg's model is stored and looked up under (engine/compute_profile.hpp):
// the workload's name for its default shape ("svm", "resnet" = ResNet-20, "transformer" = the
// default GPT sizes), else the name and the shape ("resnet:resnet8",
// "transformer:gpt,layers=2,d-model=128,heads=4,seq=64,vocab=256"), so that two shapes never
// share a profile. Throws InputError for an unknown workload.
std::string workload_profile_key(const RunConfig& cfg);
// The run-config keys that shape a workload's model (what workload_profile_key reads besides
// the workload): model, layers, d-model, heads, seq, vocab.
const std::vector<std::string>& workload_shape_keys();
// Those of cfg that differ from their defaults, as (flag, value) pairs for a command line
// ("d-model", "128"): what a `dsgd-bench calibrate` of cfg's model must be given.
std::vector<std::pair<std::string, std::string>> workload_shape_flags(const RunConfig& cfg);
// Call after dataset_load, before workload_create: shapes the data for the workload (text:
// windows of --seq + 1 tokens). Throws InputError when the text is shorter than a window
// or a text dataset is used with a workload that does not read text.
void workload_prepare_data(const RunConfig& cfg, DatasetPair& data);
// Throws InputError (listing the known workloads) when `name` is not one.
void workload_check_name(const std::string& name);
std::vector<WorkloadInfo> workload_list();
bool workload_exists(const std::string& name);

}  // namespace dsgd
