// The backend table (cluster/backends.hpp): its rows and their availability here, the refusal
// of an unknown backend, of flags that need a virtual clock, and of an algorithm that needs a
// capability the backend lacks (a test row without windows or point-to-point, and the nccl
// row) — up front, by config_validate, with the reason and what to do.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/errors.hpp"
#include "core/gpu_info.hpp"
#include "core/run_config.hpp"
#include "error_text.hpp"

namespace dsgd {
namespace {

using dsgd::testing::error_of;

TEST(Backends, RowsAndAvailability) {
  ASSERT_NE(backend_find("mpi"), nullptr);
  ASSERT_NE(backend_find("sim"), nullptr);
  ASSERT_NE(backend_find("nccl"), nullptr);
  EXPECT_EQ(backend_find("carrier-pigeon"), nullptr);
  EXPECT_TRUE(backend_get("mpi").availability().available);
  EXPECT_TRUE(backend_get("sim").availability().available);
  const Backend& sim = backend_get("sim");
  EXPECT_EQ(sim.launch, BackendLaunch::launch_in_process);
  EXPECT_TRUE(sim.has(cap_virtual_clock | cap_models_network | cap_one_sided_windows));
  EXPECT_EQ(sim.create_world, nullptr);
  const Backend& mpi = backend_get("mpi");
  EXPECT_TRUE(mpi.has(cap_multi_process | cap_one_sided_windows | cap_network_emulation));
  EXPECT_FALSE(mpi.has(cap_virtual_clock));
  const Backend& nccl = backend_get("nccl");
  EXPECT_FALSE(nccl.has(cap_one_sided_windows));
  EXPECT_TRUE(nccl.has(cap_device_memory));
  EXPECT_EQ(nccl.device.kind, DeviceKind::device_cuda);
#ifndef DSGD_HAVE_NCCL
  const BackendAvailability a = nccl.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.why.find("not built"), std::string::npos) << a.why;
  if (!std::filesystem::exists("/dev/nvidia0") && !std::filesystem::exists("/dev/nvidiactl"))
    EXPECT_NE(a.why.find("no CUDA device"), std::string::npos) << a.why;
  const std::string msg = error_of([&] { backend_require_available(nccl); });
  EXPECT_NE(msg.find("--backend nccl is not available on this machine: not built"), std::string::npos) << msg;
  EXPECT_THROW(backend_create_world(nccl, nullptr, nullptr), InputError);
#else
  // Built with NCCL: available exactly when the GPU probe finds a device; otherwise refused
  // with the probe's reason (no driver is the normal case on CI), before any NCCL call.
  const BackendAvailability a = nccl.availability();
  const GpuInfo g = gpu_info_probe();
  EXPECT_EQ(a.available, g.available) << a.why;
  if (!a.available) {
    EXPECT_EQ(a.why, g.reason);
    const std::string msg = error_of([&] { backend_require_available(nccl); });
    EXPECT_NE(msg.find("--backend nccl is not available on this machine: " + g.reason), std::string::npos) << msg;
    EXPECT_THROW(backend_create_world(nccl, nullptr, nullptr), InputError);
  }
  EXPECT_NE(nccl.create_world, nullptr);
#endif
  EXPECT_EQ(backend_caps_text(cap_one_sided_windows | cap_point_to_point), "one-sided windows, point-to-point");
}

TEST(Backends, UnknownBackendListsTheRows) {
  RunConfig cfg;
  cfg.backend = "carrier-pigeon";
  const std::string msg = error_of([&] { config_validate(cfg); });
  EXPECT_NE(msg.find("--backend: unknown backend 'carrier-pigeon'"), std::string::npos) << msg;
  try {
    config_validate(cfg);
  } catch (const InputError& e) {
    EXPECT_NE(e.hint().find("mpi, sim, nccl"), std::string::npos) << e.hint();
  }
}

TEST(Backends, VirtualClockFlagsNeedAVirtualClock) {
  RunConfig cfg;  // mpi
  cfg.timing_only = true;
  EXPECT_NE(error_of([&] { config_validate(cfg); }).find("--timing-only: needs a backend with a virtual clock"),
            std::string::npos);
  cfg.backend = "sim";
  EXPECT_EQ(error_of([&] { config_validate(cfg); }), "");
  RunConfig nf;
  nf.native_floor = true;
  EXPECT_NE(error_of([&] { config_validate(nf); }).find("--native-floor: applies to --backend sim only"),
            std::string::npos);
  RunConfig cs;
  cs.compute_scale = 0.5;
  EXPECT_NE(error_of([&] { config_validate(cs); }).find("--compute-scale: applies to --backend sim only"),
            std::string::npos);
}

// adpsgd and ps need one-sided windows; the nccl row has none: refused up front (before any
// availability check, so the message is the same on a GPU machine), naming the backends that
// have them. Every variant that declares nothing it lacks passes.
TEST(Backends, AlgorithmsNeedingWhatTheBackendLacksAreRefused) {
  for (const char* algo : {"adpsgd", "ps"}) {
    RunConfig cfg;
    cfg.backend = "nccl";
    cfg.algo = algo;
    const std::string msg = error_of([&] { config_validate(cfg); });
    EXPECT_NE(
        msg.find(fmt::format("--backend nccl: --algo {} needs one-sided windows, which backend nccl lacks", algo)),
        std::string::npos)
        << msg;
    try {
      config_validate(cfg);
    } catch (const InputError& e) {
      EXPECT_NE(e.hint().find("use --backend mpi or sim"), std::string::npos) << e.hint();
    }
    cfg.backend = "mpi";
    EXPECT_EQ(error_of([&] { config_validate(cfg); }), "") << algo;
  }
  for (const char* algo :
       {"ssgd", "localsgd", "diloco", "cocod", "dasgd", "overlap-local", "dpsgd", "dreamddp", "zero"}) {
    RunConfig cfg;
    cfg.backend = "nccl";
    cfg.algo = algo;
    if (variant_get(algo).takes_period) run_config_mark_given(cfg, "period");
    EXPECT_EQ(error_of([&] { config_validate(cfg); }), "") << algo;
  }
}

// The host-only parts on a device backend: zero's 4-bit codes and every compressor.
TEST(Backends, HostOnlyPartsAreRefusedOnADeviceBackend) {
  RunConfig cfg;
  cfg.backend = "nccl";
  cfg.algo = "zero";
  cfg.zero_bits = 4;
  std::string msg = error_of([&] { config_validate(cfg); });
  EXPECT_NE(msg.find("zero keeps its model in host memory (--zero-bits 4 encodes its 4-bit codes on the host)"),
            std::string::npos)
      << msg;
  RunConfig c;
  c.backend = "nccl";
  c.compress = "powersgd:rank=2";
  msg = error_of([&] { config_validate(c); });
  EXPECT_NE(msg.find("--compress: runs on host memory only"), std::string::npos) << msg;
  c.backend = "mpi";
  EXPECT_EQ(error_of([&] { config_validate(c); }), "");
}

// A backend row without windows or point-to-point (as a backend of collectives only would be).
TEST(Backends, ATestRowLackingCapabilitiesRefusesWhatNeedsThem) {
  const Backend collectives_only{"allreduce-only",
                                 "test: collectives only",
                                 BackendLaunch::launch_mpiexec,
                                 cap_multi_process,
                                 kHostDevice,
                                 [] {
                                   return BackendAvailability{true, ""};
                                 },
                                 nullptr};
  struct Case {
    const char* algo;
    const char* missing;
  };
  for (const Case& k : {Case{"adpsgd", "one-sided windows"}, Case{"ps", "one-sided windows"},
                        Case{"dpsgd", "point-to-point"}, Case{"zero", "reduce-scatter/all-gather"}}) {
    RunConfig cfg;
    cfg.algo = k.algo;
    const Variant& v = variant_get(k.algo);
    ASSERT_NE(v.needs, nullptr) << k.algo;
    const std::string msg =
        error_of([&] { backend_check_needs(collectives_only, v.needs(cfg), std::string("--algo ") + k.algo); });
    EXPECT_NE(msg.find(fmt::format("--algo {} needs {}, which backend allreduce-only lacks", k.algo, k.missing)),
              std::string::npos)
        << msg;
  }
  RunConfig z;
  z.algo = "zero";
  z.zero_bits = 4;
  EXPECT_EQ(variant_get("zero").needs(z), uint32_t(cap_sharded_collectives | cap_point_to_point));
  EXPECT_EQ(compressor_backend_needs("topk:0.01"), uint32_t(cap_sharded_collectives));
  EXPECT_EQ(compressor_backend_needs("powersgd:rank=2"), uint32_t(cap_none));
  for (const char* algo : {"ssgd", "localsgd", "diloco", "cocod", "dasgd", "overlap-local", "dreamddp"})
    EXPECT_NO_THROW(backend_check_needs(collectives_only,
                                        variant_get(algo).needs ? variant_get(algo).needs(RunConfig{}) : 0u, algo));
}

}  // namespace
}  // namespace dsgd
