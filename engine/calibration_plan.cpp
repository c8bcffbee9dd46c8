// See calibration_plan.hpp.
#include "engine/calibration_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <filesystem>
#include <string_view>

#include "cluster/backends.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/collective_check.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

constexpr int64_t kMaxSizeBytes = int64_t(2) << 30;

}  // namespace

// "256MiB", "1MiB", "64KiB", "4", "4B", "1GB" (decimal units: kB, MB, GB).
int64_t calibration_size_parse(const std::string& option, const std::string& text) {
  const std::string hint = fmt::format("pass {} as bytes with an optional unit: 4, 64KiB, 1MiB, 256MiB, 1GB", option);
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [unit_begin, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || unit_begin == begin || value < 0) {
    DSGD_THROW(InputError, hint, "{} '{}' is not a size", option, text);
  }
  const std::string_view unit(unit_begin, static_cast<size_t>(end - unit_begin));
  struct Unit {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Unit units[] = {{"", 1},      {"B", 1},     {"KiB", 1 << 10}, {"MiB", 1 << 20},  {"GiB", 1 << 30},
                                   {"kB", 1000}, {"KB", 1000}, {"MB", 1000000},  {"GB", 1000000000}};
  for (const Unit& u : units) {
    if (unit == u.name) {
      if (value > kMaxSizeBytes / u.bytes) {
        DSGD_THROW(InputError, "sizes up to 2GiB are supported", "{} '{}' is larger than 2GiB", option, text);
      }
      return value * u.bytes;
    }
  }
  DSGD_THROW(InputError, hint, "{} '{}': unknown unit '{}'", option, text, unit);
}

std::string calibration_size_text(int64_t bytes) {
  if (bytes >= (1 << 30) && bytes % (1 << 30) == 0) return fmt::format("{}GiB", bytes >> 30);
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return fmt::format("{}MiB", bytes >> 20);
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return fmt::format("{}KiB", bytes >> 10);
  return fmt::format("{}B", bytes);
}

CalibrationPlan calibration_plan_make(const CalibrationOptions& o) {
  CalibrationPlan plan;
  plan.min_bytes = calibration_size_parse("--min-size", o.min_size);
  plan.max_bytes = o.quick && !o.max_size_given ? int64_t(1) << 20 : calibration_size_parse("--max-size", o.max_size);
  plan.size_factor = 2;  // --quick too: a protocol switch (MPICH: 16 -> 32 KiB) needs every octave
  plan.sweep.reps = o.quick && !o.reps_given ? 2 : o.reps;
  plan.profile_iters = o.quick && !o.profile_iters_given ? 5 : o.profile_iters;
  if (plan.min_bytes < 4 || plan.min_bytes % 4 != 0) {
    DSGD_THROW(InputError, "pass --min-size 4 or another multiple of 4 (float32 elements)",
               "--min-size {} is not a positive multiple of 4 bytes", o.min_size);
  }
  if (plan.max_bytes < plan.min_bytes) {
    DSGD_THROW(InputError, "pass --max-size at or above --min-size", "--max-size {} is below --min-size {}",
               calibration_size_text(plan.max_bytes), calibration_size_text(plan.min_bytes));
  }
  if (plan.sweep.reps < 1 || plan.sweep.reps > 1000) {
    DSGD_THROW(InputError, "pass e.g. --reps 5", "--reps must be in 1..1000 (got {})", plan.sweep.reps);
  }
  if (plan.profile_iters < 1 || plan.profile_iters > 100000) {
    DSGD_THROW(InputError, "pass e.g. --profile-iters 20", "--profile-iters must be in 1..100000 (got {})",
               plan.profile_iters);
  }
  for (int64_t bytes = plan.min_bytes; bytes <= plan.max_bytes; bytes *= plan.size_factor) {
    plan.sweep.sizes.push_back(bytes);
  }
  if (o.workers < 1 || o.workers > kRunConfigMaxComputingWorkers) {
    DSGD_THROW(InputError, "pass --workers 2 or more", "--workers must be in 1..{} (got {})",
               kRunConfigMaxComputingWorkers, o.workers);
  }
  if (o.threads < 1 || o.threads > 256) {
    DSGD_THROW(InputError, "pass e.g. --threads 1", "--threads must be in 1..256 (got {})", o.threads);
  }
  if (o.batches.empty()) DSGD_THROW(InputError, "pass e.g. --batches 16,64,256", "--batches is empty");
  for (int64_t batch : o.batches) {
    if (batch < 1 || batch > (int64_t(1) << 24)) {
      DSGD_THROW(InputError, "pass positive batch sizes, e.g. --batches 16,64,256",
                 "--batches: {} is not a batch size in 1..16777216", batch);
    }
  }
  return plan;
}

const Backend& calibration_backend(const CalibrationOptions& o) {
  const Backend& b = backend_get(o.backend);
  if (b.launch != BackendLaunch::launch_mpiexec)
    DSGD_THROW(InputError, "calibrate a real fabric (--backend mpi); a simulated run takes its network from the flags",
               "--backend {}: its workers share this process and its network is the model given to it, not a fabric "
               "to measure",
               b.name);
  backend_require_available(b);
  return b;
}

void calibration_options_validate(const CalibrationOptions& o) {
  calibration_backend(o);
  calibration_plan_make(o);
  workload_check_name(o.model.workload);
  dataset_validate_spec(o.model.dataset);
  run_config_check_ranges(o.model);  // the shape flags' ranges (--layers, --d-model, ...)
  if (!o.hostfile.empty() && !std::filesystem::is_regular_file(o.hostfile)) {
    DSGD_THROW(InputError, "pass an existing MPI hostfile", "--hostfile: no file '{}'", o.hostfile);
  }
  Store::open(o.db);
}

nlohmann::json calibration_config_json(const CalibrationOptions& o, const CalibrationPlan& plan, int ranks) {
  std::vector<std::string> op_names;
  for (const CalibrationOp& op : calibration_ops())
    if (calibration_op_runs_on(op, ranks)) op_names.push_back(op.name);
  return {
      {"backend", o.backend},
      {"workers", ranks},
      {"min_size", plan.min_bytes},
      {"max_size", plan.max_bytes},
      {"size_factor", plan.size_factor},
      {"sizes", plan.sweep.sizes.size()},
      {"reps", plan.sweep.reps},
      {"quick", o.quick},
      {"dtype", "float32"},
      {"min_rep_time_s", plan.sweep.min_rep_time_s},
      {"max_iters", plan.sweep.max_iters},
      {"rank_aggregation", "max over ranks of the per-iteration time of a repetition"},
      {"statistic", "median over repetitions (min and max kept)"},
      {"ops", op_names},
      {"fit", "t = alpha + beta * bytes * busbw_factor, weights 1/t^2"},
      {"workload", workload_profile_key(o.model)},
      {"dataset", o.model.dataset},
      {"batches", o.batches},
      {"profile_iters", plan.profile_iters},
      {"profile_warmup", kComputeProfileWarmup},
      {"profile_seed", kComputeProfileSeed},
      {"threads", o.threads},
  };
}

std::vector<std::string> calibration_warnings(const CalibrationOptions& o, const Communicator& comm) {
  std::vector<std::string> warnings;
  const SystemInfo sys = system_info_read();
  const int local = comm.ranks_on_this_host();
  if (local * o.threads > sys.cores)
    warnings.push_back(
        fmt::format("{} ranks x {} BLAS threads on {} cores: ranks exceed cores, the calibration is "
                    "not trustworthy (MPICH busy-polls)",
                    local, o.threads, sys.cores));
  if (sys.build_type != "Release" && sys.build_type != "RelWithDebInfo")
    warnings.push_back(fmt::format("this is a {} build; timings are not representative", sys.build_type));
  if (!sys.cpu_governor.empty() && sys.cpu_governor != "performance")
    warnings.push_back(
        fmt::format("CPU frequency governor is '{}' (not 'performance'); timings may vary", sys.cpu_governor));
  return warnings;
}

void calibration_plan_add_model_size(CalibrationPlan& plan, int64_t model_bytes) {
  std::vector<int64_t>& sizes = plan.sweep.sizes;
  if (model_bytes < plan.min_bytes || model_bytes > plan.max_bytes || model_bytes % 4 != 0) return;
  plan.model_bytes = model_bytes;
  if (std::find(sizes.begin(), sizes.end(), model_bytes) == sizes.end())
    sizes.insert(std::upper_bound(sizes.begin(), sizes.end(), model_bytes), model_bytes);
}

CalibrationSetup calibration_setup(const CalibrationOptions& o, Communicator& comm) {
  CalibrationSetup setup;
  std::exception_ptr local;
  try {
    setup.plan = calibration_plan_make(o);
    if (o.workers_given && o.workers != comm.size()) {
      DSGD_THROW(InputError, "make --workers match mpiexec -n (or run without mpiexec)",
                 "--workers {} but this job has {} MPI ranks", o.workers, comm.size());
    }
    if (comm.rank() == 0) setup.store = Store::open(o.db);
    setup.profile = compute_profile_setup(o.model, o.batches);
    calibration_plan_add_model_size(setup.plan,
                                    static_cast<int64_t>(setup.profile.workload->param_count() * sizeof(float)));
  } catch (...) {
    local = std::current_exception();
  }
  collective_check(comm, local);
  CalibrationRequest& request = setup.request;
  request.sweep = setup.plan.sweep;
  request.model = o.model;
  request.model.threads = o.threads;  // the profile's BLAS threads (compute_profile_measure sets them)
  request.batches = o.batches;
  request.profile_iters = setup.plan.profile_iters;
  request.config = calibration_config_json(o, setup.plan, comm.size());
  if (setup.plan.model_bytes > 0) request.config["model_bytes"] = setup.plan.model_bytes;
  request.config["conditions"] = compute_profile_conditions(setup.profile.data.train, comm.ranks_on_this_host());
  return setup;
}

}  // namespace dsgd
