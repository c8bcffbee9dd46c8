// The GPU probe (core/gpu_info.hpp) in every build: consistent answers (a device is available
// exactly when one was counted; otherwise a reason), versions present in a CUDA build, the JSON
// a run stores, and the driver release parsed from /proc/driver/nvidia/version's text. Runs on
// machines without a GPU (that is the case it checks there: no crash, a reason).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/gpu_info.hpp"

namespace dsgd {
namespace {

TEST(GpuInfo, ProbeIsConsistent) {
  const GpuInfo g = gpu_info_probe();
  EXPECT_EQ(g.available, g.device_count > 0);
  if (!g.available) {
    EXPECT_FALSE(g.reason.empty());
    EXPECT_TRUE(g.name.empty());
  } else {
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.memory_gb, 0.0);
    EXPECT_GE(g.cc_major, 7);  // CUDA 13 supports Turing (7.5) and newer
  }
#ifdef DSGD_HAVE_CUDA
  EXPECT_TRUE(g.built_with_cuda);
  EXPECT_FALSE(g.runtime_version.empty());
  EXPECT_FALSE(g.cudnn_version.empty());
  EXPECT_FALSE(g.nccl_version.empty());
  const auto j = nlohmann::json::parse(gpu_info_json(g));
  EXPECT_EQ(j.at("cuda_runtime").get<std::string>(), g.runtime_version);
  EXPECT_EQ(j.at("nccl").get<std::string>(), g.nccl_version);
  EXPECT_EQ(j.contains("gpu"), g.available);
  EXPECT_EQ(j.contains("gpu_unavailable"), !g.available);
#else
  EXPECT_FALSE(g.built_with_cuda);
  EXPECT_NE(g.reason.find("without CUDA"), std::string::npos) << g.reason;
  EXPECT_EQ(gpu_info_json(g), "{}");
#endif
}

TEST(GpuInfo, ProbeOfAMissingDeviceSaysSo) {
  const GpuInfo g = gpu_info_probe(1000);
  EXPECT_FALSE(g.available);
  EXPECT_FALSE(g.reason.empty());
}

TEST(GpuInfo, VersionStrings) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(cuda_version_string(0), "");
}

TEST(GpuInfo, DriverReleaseFromProcText) {
  EXPECT_EQ(nvidia_driver_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Tue Jan 14 2025\n"
                                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "570.86.15");
  EXPECT_EQ(nvidia_driver_release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build"),
            "580.65.06");
  EXPECT_EQ(nvidia_driver_release(""), "");
  EXPECT_EQ(nvidia_driver_release("no module here 1.2.3"), "");
}

}  // namespace
}  // namespace dsgd
