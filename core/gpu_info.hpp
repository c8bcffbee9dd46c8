// What GPU this process could use: whether one is there and, if not, why (no CUDA in the
// build, no driver, no device, a driver older than the runtime), and the versions a run
// records in its context (device name, memory, compute capability, driver, CUDA runtime,
// cuDNN, NCCL). Compiled in every build; without CUDA it reports "built without CUDA".
// The probe never throws: a machine without a GPU is a normal case (CI, laptops).
#pragma once

#include <string>

namespace dsgd {

struct GpuInfo {
  bool built_with_cuda = false;
  bool available = false;  // at least one device the runtime can use
  std::string reason;      // why not, when !available (one sentence naming the cause)
  int device_count = 0;
  // Device 0 (or the device `gpu_info_probe(device)` asked for), when available.
  std::string name;
  double memory_gb = 0;  // total global memory, GB = 1e9 bytes
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  // Versions as "major.minor[.patch]"; the build-time ones are known without a device.
  std::string driver_version;   // the CUDA version the driver supports (cudaDriverGetVersion); empty without one
  std::string driver_release;   // the kernel module's release ("570.86.15", /proc/driver/nvidia/version)
  std::string runtime_version;  // the CUDA runtime linked in
  std::string cudnn_version;
  std::string nccl_version;
};

GpuInfo gpu_info_probe(int device = 0);

// The versions as a JSON object's text, for a run's stored context ("{}" without CUDA).
std::string gpu_info_json(const GpuInfo& info);

// The driver release in the text of /proc/driver/nvidia/version (empty when not found).
std::string nvidia_driver_release(const std::string& proc_text);

// "major.minor" of a CUDA version integer (1000·major + 10·minor: 13000 → "13.0").
std::string cuda_version_string(int version);

}  // namespace dsgd
