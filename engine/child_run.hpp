// Runs one configuration as a child `dsgd-bench run --config FILE` of the dsgd-bench binary and
// returns the id of the run it stored: the path a real-backend run takes from the command line
// (for --backend mpi with workers > 1, `run` launches itself through mpiexec: cluster/launcher.hpp),
// used by `dsgd-bench validate` and `dsgd-tune validate` to measure what the simulator predicted.
// The configuration is written as JSON beside its database and removed afterwards. Limits: the
// child's output is read line by line (stdout and stderr together); only its `run_id=<id>`
// line is interpreted, wherever it lands (another rank's warning may follow it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/run_config.hpp"

namespace dsgd {

// The dsgd-bench executable: this process's own when it is dsgd-bench, else the `dsgd-bench`
// beside it (dsgd-tune is built and installed next to it); $DSGD_BENCH overrides both.
// Throws Error when there is none.
std::string child_run_binary();

// Runs `binary run --config <file of cfg> [extra_args]`, passing each output line to on_line,
// and returns the run id. Throws InputError when the child refused the configuration (exit 2),
// Error when it failed; `role` names the run in the message.
int64_t child_run_config(const RunConfig& cfg, const std::string& role, const std::string& extra_args,
                         const std::function<void(const std::string& line)>& on_line);

// Runs `dsgd-bench calibrate --workers N --quick SIZES --db DB` (the fabric's collectives and
// their alpha-beta fits, a few seconds) with `model`'s workload, dataset and shape (so the
// sweep measures that model's size too), passing each output line to on_line; returns the
// calibration id. `sizes` are calibrate's size options (default: up to 4 MiB, which holds the
// deep workloads' gradients). Throws Error when it fails.
inline constexpr const char* kChildCalibrateSizes = "--max-size 4MiB";
int64_t child_calibrate_fabric(const std::string& db, int workers, const RunConfig& model,
                               const std::function<void(const std::string& line)>& on_line,
                               const std::string& sizes = kChildCalibrateSizes);

}  // namespace dsgd
