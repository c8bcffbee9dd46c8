// Owning handles for device memory, pinned host memory, streams and events (RAII, move-only),
// allocated once at setup (never in the timed loop) and checked (cuda_check.hpp). Copies between host
// and device are asynchronous on a given stream; the synchronous helpers are for tests and setup.
// Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "core/cuda/cuda_check.hpp"

namespace dsgd {

// count elements of T in device memory (uninitialised).
template <class T>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(size_t count) { resize(count); }
  ~CudaBuffer() { release(); }
  CudaBuffer(CudaBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  void resize(size_t count) {
    release();
    if (count) DSGD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
    count_ = count;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  // Synchronous copies (setup, tests): the buffer is resized to the vector's size.
  void upload(const std::vector<T>& host) {
    if (host.size() != count_) resize(host.size());
    if (count_) DSGD_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_) DSGD_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  void zero() {
    if (count_) DSGD_CUDA_CHECK(cudaMemset(ptr_, 0, bytes()));
  }

 private:
  void release() {
    if (ptr_) (void)cudaFree(ptr_);  // never throws from a destructor
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// count elements of T in page-locked host memory: the source of asynchronous host-to-device
// copies (the data loader's batch buffer), which pageable memory would serialise.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) {
    if (count) DSGD_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
    count_ = count;
  }
  ~PinnedBuffer() {
    if (ptr_) (void)cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* data() { return ptr_; }
  size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// A non-blocking stream (does not synchronise with the legacy default stream).
class CudaStream {
 public:
  CudaStream() { DSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (s_) (void)cudaStreamDestroy(s_);
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const { DSGD_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

// An event with timing (cudaEventElapsedTime between two of them).
class CudaEvent {
 public:
  CudaEvent() { DSGD_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~CudaEvent() {
    if (e_) (void)cudaEventDestroy(e_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { DSGD_CUDA_CHECK(cudaEventRecord(e_, s)); }
  void synchronize() const { DSGD_CUDA_CHECK(cudaEventSynchronize(e_)); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const CudaEvent& start) const {
    float ms = 0;
    DSGD_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace dsgd
