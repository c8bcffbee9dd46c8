// The options of a calibration (`dsgd-bench calibrate`, or any caller that calibrates the same
// way) turned into what engine/calibration.hpp runs: sizes parsed ("256MiB"), --quick's
// defaults, every range checked (InputError naming the flag), the stored config, the host's
// warnings; and the setup every rank agrees on before anything is measured.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "engine/calibration.hpp"
#include "engine/compute_profile.hpp"
#include "results/store.hpp"

namespace dsgd {

struct Backend;

struct CalibrationOptions {
  static RunConfig default_model() {
    RunConfig m;
    m.workload = "svm";
    m.dataset = "fashion-mnist";
    return m;
  }
  std::string backend = "mpi";  // a multi-process row of the backend table (cluster/backends.hpp)
  int64_t workers = 2;
  std::string hostfile;
  std::string db = "./dsgd.db";
  std::string min_size = "4";
  std::string max_size = "256MiB";
  int64_t reps = 5;
  bool quick = false;
  // The profiled model: its workload, dataset and model-shape fields (workload_shape_keys:
  // --model, --layers, --d-model, --heads, --seq, --vocab); other fields are not read.
  RunConfig model = default_model();
  std::vector<int64_t> batches = {16, 64, 256};
  int64_t profile_iters = 20;
  int64_t threads = 1;
  // Which were given (--quick changes only the defaults; --workers must match the job).
  bool workers_given = false, max_size_given = false, reps_given = false, profile_iters_given = false;
};

// The effective plan, after --quick and validation.
struct CalibrationPlan {
  int64_t min_bytes = 4, max_bytes = 0;
  int64_t size_factor = 2;
  int64_t profile_iters = 20;
  CalibrationSweepPlan sweep;  // sizes (bytes) and repetitions
  // The profiled workload's model (its gradient's) bytes when within the range, swept besides
  // the octaves: a protocol switch between two octaves (MPICH's all-reduce: between 24 and 28
  // KB here) makes the curve read between them miss that size, the one every exchange of the
  // workload has (0: outside the range, or not whole floats).
  int64_t model_bytes = 0;
};

// "256MiB", "1MiB", "64KiB", "4", "4B", "1GB" (decimal units: kB, MB, GB), up to 2 GiB;
// InputError naming `option` otherwise.
int64_t calibration_size_parse(const std::string& option, const std::string& text);
// The largest binary unit that divides it: "256MiB", "4KiB", "12B".
std::string calibration_size_text(int64_t bytes);

// Everything checkable without the ranks or the database.
CalibrationPlan calibration_plan_make(const CalibrationOptions& o);
// Adds the workload's model bytes to the plan's sizes, in order (CalibrationPlan::model_bytes).
void calibration_plan_add_model_size(CalibrationPlan& plan, int64_t model_bytes);
// The backend row to calibrate: a multi-process one available here (InputError otherwise).
const Backend& calibration_backend(const CalibrationOptions& o);
// The plan, the workload and dataset names, the hostfile, then the database (last, so that a
// bad flag never creates a file): what `calibrate` checks before launching ranks.
void calibration_options_validate(const CalibrationOptions& o);

// The calibration's stored configuration (its options and protocol).
nlohmann::json calibration_config_json(const CalibrationOptions& o, const CalibrationPlan& plan, int ranks);
// Why this host's timings may not be trustworthy (ranks × threads over cores, a Debug build, a
// scaling CPU governor); empty when none.
std::vector<std::string> calibration_warnings(const CalibrationOptions& o, const Communicator& comm);

// What every rank holds once setup succeeded everywhere.
// Flagged by clang-tidy 14 as CalibrationRequest is (engine/calibration.hpp says why).
// NOLINTNEXTLINE(bugprone-exception-escape)
struct CalibrationSetup {
  CalibrationPlan plan;
  CalibrationRequest request;
  ComputeProfileSetup profile;
  std::optional<Store> store;  // rank 0
};
// Collective: the plan, --workers against the job's size, the BLAS threads, rank 0's store and
// the profile's data and model, agreed by every rank (collective_check: a failure anywhere
// throws on every rank before anything is measured).
CalibrationSetup calibration_setup(const CalibrationOptions& o, Communicator& comm);

}  // namespace dsgd
