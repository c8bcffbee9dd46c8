// The backend table: every execution backend as one row (name, what it is, whether it is
// available on this machine and why not, how it launches, how its communicator is created, and
// its capabilities), as ggml's backend registry or nccl-tests' table of collectives. The
// programs choose a backend by looking up --backend here and asking its row; nothing else
// compares backend names. Adding a backend is one row here plus its communicator file
// (docs/contributing.md).
//
// Rows today: mpi (real ranks), sim (the simulated cluster), nccl (NCCL on GPUs: built with
// the CUDA toolkit, available where a GPU is found; docs/gpu.md). The single-rank SelfCommunicator is no row: it is
// what mpi is in a build without MPI, and the tests' serial reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/buffer.hpp"

namespace dsgd {

struct RunConfig;

// What a backend can do, as bits: what an algorithm (algorithms/variant.hpp, Variant::needs)
// or a calibration op may require, and the properties the programs branch on.
enum BackendCap : uint32_t {
  cap_none = 0,
  cap_one_sided_windows = 1u << 0,    // window_create / lock / get / put / poll (adpsgd, ps)
  cap_point_to_point = 1u << 1,       // sendrecv, neighbour exchange (dpsgd, zero --zero-bits 4)
  cap_sharded_collectives = 1u << 2,  // reduce-scatter, all-gather (zero, top-k, QSGD)
  cap_models_network = 1u << 3,       // collectives cost by the α-β model, not measured (sim)
  cap_virtual_clock = 1u << 4,        // time is virtual: profiles, --compute-scale, --timing-only (sim)
  cap_multi_process = 1u << 5,        // one OS process per worker, launched through mpiexec
  cap_network_emulation = 1u << 6,    // --bandwidth etc. hold real collectives (docs/cluster.md)
  cap_device_memory = 1u << 7,        // its collectives take GPU memory (Communicator::supports_device)
};
// "one-sided windows", "point-to-point", ... (one name per bit; several: joined with ", ").
std::string backend_caps_text(uint32_t caps);

// How the workers of a run start.
enum class BackendLaunch {
  launch_mpiexec,    // one process per worker: outside mpiexec, N > 1 re-launches through mpiexec -n N
  launch_in_process  // every worker a thread of this process (engine/sim_run.hpp)
};

struct BackendAvailability {
  bool available = false;
  std::string why;  // why not (or a limit when available: "built without MPI: 1 worker only")
};

struct Backend {
  const char* name;         // --backend NAME
  const char* description;  // one line for `dsgd-bench list backends`
  BackendLaunch launch;
  uint32_t caps;  // BackendCap bits
  Device device;  // where its workers compute by default
  // Whether it can run on this machine, and why not (cheap: no MPI or CUDA initialisation).
  BackendAvailability (*availability)();
  // The communicator of this process for a launch_mpiexec backend (initialising the library);
  // null for an in-process backend (its workers' communicators come from its world: SimWorld).
  std::unique_ptr<Communicator> (*create_world)(int* argc, char*** argv);
  bool has(uint32_t cap) const { return (caps & cap) == cap; }
};

// Every row, in listing order.
const std::vector<Backend>& backend_all();
// The row of `name`, or nullptr.
const Backend* backend_find(const std::string& name);
// The row of `name`; InputError "--backend: unknown backend 'x'" listing the rows otherwise.
const Backend& backend_get(const std::string& name);
// The row of cfg.backend, checked for this run: known, the flags that need a capability it
// lacks (--timing-only, --profile-from, --compute-scale and --native-floor need a virtual
// clock), then the capabilities `needs` (the algorithm's, Variant::needs) names; InputError
// naming the flag and what to do. Availability on this machine is checked at launch
// (backend_require_available), so a configuration can be checked anywhere.
const Backend& backend_check_config(const RunConfig& cfg, uint32_t needs, const std::string& needed_by);
// The same against a given row (tests: a backend row lacking windows).
void backend_check_needs(const Backend& b, uint32_t needs, const std::string& needed_by);
// Throws InputError "--backend NAME is not available on this machine: WHY" when it is not.
void backend_require_available(const Backend& b);
// The communicator of this process for b (launch_mpiexec rows): b.create_world after
// backend_require_available.
std::unique_ptr<Communicator> backend_create_world(const Backend& b, int* argc, char*** argv);

}  // namespace dsgd
