// See backends.hpp: the rows, and the checks every program makes through them.
#include "cluster/backends.hpp"

#include <filesystem>

#include "core/errors.hpp"
#include "core/run_config.hpp"

namespace dsgd {

#ifdef DSGD_HAVE_NCCL
// cluster/nccl_communicator.cpp (the CUDA build): the NCCL world of this process, and why
// it cannot run here (empty: it can: a CUDA device is visible).
std::unique_ptr<Communicator> communicator_create_nccl(int* argc, char*** argv);
std::string nccl_unavailable_reason();
#endif

namespace {

BackendAvailability mpi_availability() {
#ifdef DSGD_HAVE_MPI
  return {true, ""};
#else
  return {true, "built without MPI: 1 worker only (install libmpich-dev and rebuild for more)"};
#endif
}

BackendAvailability sim_availability() {
  return {true, ""};
}

// Whether the NVIDIA driver shows a device, without loading CUDA (a missing driver is a
// normal case here): the device nodes the driver creates.
bool nvidia_device_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidia0", ec) || std::filesystem::exists("/dev/nvidiactl", ec);
}

BackendAvailability nccl_availability() {
  std::string why;
#ifdef DSGD_HAVE_NCCL
  why = nccl_unavailable_reason();
  return {why.empty(), why};
#else
  why = "not built: this build has no CUDA toolkit (NCCL, cuBLAS, cuDNN; docs/gpu.md says how to build with it)";
#endif
  if (!nvidia_device_present()) why += "; no CUDA device on this machine (no /dev/nvidia0)";
  return {false, why};
}

std::unique_ptr<Communicator> create_mpi_world(int* argc, char*** argv) {
  return communicator_create_world(argc, argv);  // MPI's world, or one rank without MPI
}

}  // namespace

const std::vector<Backend>& backend_all() {
  // name, description, launch, capabilities, device, availability, create.
  static const std::vector<Backend> rows = {
      {"mpi", "one OS process per worker, real MPI (MPICH) collectives, point-to-point and one-sided windows",
       BackendLaunch::launch_mpiexec,
       cap_one_sided_windows | cap_point_to_point | cap_sharded_collectives | cap_multi_process | cap_network_emulation,
       kHostDevice, mpi_availability, create_mpi_world},
      {"sim", "N logical workers as threads of one process, real numerics, virtual clock from the network model",
       BackendLaunch::launch_in_process,
       cap_one_sided_windows | cap_point_to_point | cap_sharded_collectives | cap_models_network | cap_virtual_clock,
       kHostDevice, sim_availability, nullptr},
      {"nccl", "one process per GPU, NCCL collectives and grouped send/recv on device memory, MPI to bootstrap",
       BackendLaunch::launch_mpiexec,
       cap_point_to_point | cap_sharded_collectives | cap_multi_process | cap_network_emulation | cap_device_memory,
       Device{DeviceKind::device_cuda, 0}, nccl_availability,
#ifdef DSGD_HAVE_NCCL
       communicator_create_nccl
#else
       nullptr
#endif
      },
  };
  return rows;
}

std::string backend_caps_text(uint32_t caps) {
  static const std::pair<uint32_t, const char*> names[] = {
      {cap_one_sided_windows, "one-sided windows"},
      {cap_point_to_point, "point-to-point"},
      {cap_sharded_collectives, "reduce-scatter/all-gather"},
      {cap_models_network, "models the network"},
      {cap_virtual_clock, "virtual clock"},
      {cap_multi_process, "multi-process"},
      {cap_network_emulation, "network emulation"},
      {cap_device_memory, "device memory"},
  };
  std::string out;
  for (const auto& [bit, name] : names)
    if (caps & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

const Backend* backend_find(const std::string& name) {
  for (const Backend& b : backend_all())
    if (name == b.name) return &b;
  return nullptr;
}

const Backend& backend_get(const std::string& name) {
  if (const Backend* b = backend_find(name)) return *b;
  std::string names;
  for (const Backend& b : backend_all()) names += (names.empty() ? "" : ", ") + std::string(b.name);
  DSGD_THROW(InputError, fmt::format("available: {} (dsgd-bench list backends)", names),
             "--backend: unknown backend '{}'", name);
}

void backend_check_needs(const Backend& b, uint32_t needs, const std::string& needed_by) {
  const uint32_t missing = needs & ~b.caps;
  if (missing == 0) return;
  std::string with;
  for (const Backend& other : backend_all())
    if (other.has(needs)) with += (with.empty() ? "" : " or ") + std::string(other.name);
  DSGD_THROW(InputError, with.empty() ? "use another --algo" : fmt::format("use --backend {}, or another --algo", with),
             "--backend {}: {} needs {}, which backend {} lacks", b.name, needed_by, backend_caps_text(missing),
             b.name);
}

const Backend& backend_check_config(const RunConfig& cfg, uint32_t needs, const std::string& needed_by) {
  const Backend& b = backend_get(cfg.backend);
  auto fail = [](const char* flag, const std::string& what, const std::string& hint) {
    DSGD_THROW(InputError, hint, "--{}: {}", flag, what);
  };
  if (cfg.compute_jitter != "profile" && cfg.compute_jitter != "replay" && cfg.compute_jitter != "off")
    fail("compute-jitter", fmt::format("'{}' is not profile, replay or off", cfg.compute_jitter),
         "pass --compute-jitter profile (the profile's measured spread), replay (the --profile-from run's "
         "compute, per rank and step) or off (every step at its mean)");
  std::string clocked;  // the rows with a virtual clock, for the hints
  for (const Backend& other : backend_all())
    if (other.has(cap_virtual_clock)) clocked += (clocked.empty() ? "" : "|") + std::string(other.name);
  if (!b.has(cap_virtual_clock)) {
    if (cfg.timing_only || cfg.given("timing-only"))
      fail("timing-only", fmt::format("needs a backend with a virtual clock (--backend {}; got {})", clocked, b.name),
           fmt::format("add --backend {}", clocked));
    const bool profile_set = cfg.profile_from != 0 || cfg.given("profile-from");
    if (profile_set || cfg.compute_scale != 1.0 || cfg.given("compute-scale"))
      fail(profile_set ? "profile-from" : "compute-scale", fmt::format("applies to --backend {} only", clocked),
           fmt::format("add --backend {}, or drop the flag", clocked));
    if (cfg.native_floor)
      fail("native-floor", fmt::format("applies to --backend {} only", clocked),
           fmt::format("add --backend {}, or drop the flag", clocked));
    if (cfg.given("compute-jitter"))
      fail("compute-jitter", fmt::format("applies to --backend {} only (real compute varies by itself)", clocked),
           fmt::format("add --backend {}, or drop the flag", clocked));
    if (!cfg.fabric.empty())
      fail("fabric", fmt::format("applies to --backend {} only (a real run uses the real network)", clocked),
           fmt::format("add --backend {}, or drop the flag", clocked));
  }
  if (cfg.compute_jitter == "replay" && cfg.profile_from == 0)
    fail("compute-jitter", "replay replays a measured run's compute: it needs --profile-from RUN",
         "add --profile-from RUN (a real run of this workload), or pass --compute-jitter profile");
  if (!cfg.fabric.empty() && !cfg.bandwidth.empty())
    fail("fabric", "and --bandwidth both describe the network: give one",
         "drop --bandwidth to simulate the fabric file's network, or --fabric to simulate the link");
  backend_check_needs(b, needs, needed_by);
  return b;
}

void backend_require_available(const Backend& b) {
  const BackendAvailability a = b.availability();
  if (a.available) return;
  std::string others;
  for (const Backend& other : backend_all())
    if (other.availability().available) others += (others.empty() ? "" : " or ") + std::string(other.name);
  DSGD_THROW(InputError, fmt::format("use --backend {} (dsgd-bench list backends)", others),
             "--backend {} is not available on this machine: {}", b.name, a.why);
}

std::unique_ptr<Communicator> backend_create_world(const Backend& b, int* argc, char*** argv) {
  backend_require_available(b);
  if (!b.create_world)
    DSGD_THROW(Error, "this is a bug: an in-process backend's workers get their communicators from its world",
               "backend {} has no world communicator", b.name);
  return b.create_world(argc, argv);
}

}  // namespace dsgd
