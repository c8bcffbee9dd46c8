// Shared by the GPU unit tests: DSGD_REQUIRE_GPU() skips a test with one line naming why when
// no CUDA device is usable (no driver, no device: the normal case on CI and on this project's
// build machines), and host <-> device copies of test vectors.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "core/cuda/cuda_buffer.hpp"
#include "core/gpu_info.hpp"

namespace dsgd::testing {

inline const GpuInfo& gpu_for_tests() {
  static const GpuInfo info = gpu_info_probe();
  return info;
}

template <class T>
CudaBuffer<T> to_device(const std::vector<T>& v) {
  CudaBuffer<T> d;
  d.upload(v);
  return d;
}

}  // namespace dsgd::testing

#define DSGD_REQUIRE_GPU()                                                                             \
  do {                                                                                                 \
    if (!::dsgd::testing::gpu_for_tests().available)                                                   \
      GTEST_SKIP() << "no CUDA device, GPU test skipped: " << ::dsgd::testing::gpu_for_tests().reason; \
  } while (0)
