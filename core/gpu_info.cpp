// See gpu_info.hpp. The CUDA part asks the runtime (cudaGetDeviceCount first: it fails with
// cudaErrorNoDevice or cudaErrorInsufficientDriver on a machine without a GPU or driver),
// cuDNN (cudnnGetVersion) and NCCL (ncclGetVersion) for what is loaded, not what was compiled.
#include "core/gpu_info.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#ifdef DSGD_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>
#endif

namespace dsgd {

std::string cuda_version_string(int version) {
  if (version <= 0) return {};
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string nvidia_driver_release(const std::string& proc_text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Tue ..." (open and closed
  // modules word it differently): the first token after "Module" that starts with a digit.
  std::istringstream in(proc_text);
  std::string word;
  bool after_module = false;
  while (in >> word) {
    if (after_module && !word.empty() && word[0] >= '0' && word[0] <= '9') return word;
    if (word == "Module") after_module = true;
  }
  return {};
}

GpuInfo gpu_info_probe(int device) {
  GpuInfo info;
#ifndef DSGD_HAVE_CUDA
  (void)device;
  info.reason = "this dsgd-bench was built without CUDA (configure with the CUDA toolkit, cuDNN and NCCL present)";
  return info;
#else
  info.built_with_cuda = true;
  {
    std::ifstream in("/proc/driver/nvidia/version");
    std::ostringstream text;
    text << in.rdbuf();
    info.driver_release = nvidia_driver_release(text.str());
  }
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime_version = cuda_version_string(v);
  v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) info.driver_version = cuda_version_string(v);
  const size_t cudnn = cudnnGetVersion();  // 9.19.0 is 91900
  info.cudnn_version = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)  // 2.28.3 is 22803
    info.nccl_version = fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (e != cudaSuccess || count <= 0) {
    if (e == cudaErrorInsufficientDriver && info.driver_version.empty())
      info.reason = "no NVIDIA driver is loaded (cudaGetDeviceCount: cudaErrorInsufficientDriver): no GPU to use";
    else if (e == cudaErrorInsufficientDriver)
      info.reason = fmt::format("the NVIDIA driver supports CUDA {} but this build needs {} (update the driver)",
                                info.driver_version, info.runtime_version);
    else if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0))
      info.reason = "no CUDA device is visible (cudaGetDeviceCount: none; check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    else
      info.reason = fmt::format("the CUDA runtime cannot see a device (cudaGetDeviceCount: {}: {})",
                                cudaGetErrorName(e), cudaGetErrorString(e));
    return info;
  }
  info.device_count = count;
  if (device < 0 || device >= count) {
    info.reason = fmt::format("device {} does not exist ({} visible)", device, count);
    return info;
  }
  cudaDeviceProp prop{};
  const cudaError_t pe = cudaGetDeviceProperties(&prop, device);
  (void)cudaGetLastError();
  if (pe != cudaSuccess) {
    info.reason = fmt::format("cudaGetDeviceProperties({}): {}", device, cudaGetErrorString(pe));
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.memory_gb = double(prop.totalGlobalMem) / 1e9;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  return info;
#endif
}

std::string gpu_info_json(const GpuInfo& info) {
  nlohmann::json j = nlohmann::json::object();
  if (!info.built_with_cuda) return j.dump();
  j["cuda_runtime"] = info.runtime_version;
  j["cudnn"] = info.cudnn_version;
  j["nccl"] = info.nccl_version;
  if (!info.driver_version.empty()) j["driver_cuda"] = info.driver_version;
  if (!info.driver_release.empty()) j["driver"] = info.driver_release;
  j["gpu_count"] = info.device_count;
  if (info.available) {
    j["gpu"] = info.name;
    j["gpu_memory_gb"] = info.memory_gb;
    j["gpu_compute_capability"] = fmt::format("{}.{}", info.cc_major, info.cc_minor);
    j["gpu_sms"] = info.sm_count;
  } else {
    j["gpu_unavailable"] = info.reason;
  }
  return j.dump();
}

}  // namespace dsgd
