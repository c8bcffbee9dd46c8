// Stored optimizer-step times of a calibration (`dsgd-bench calibrate`'s compute profile and the
// tuner's missing-profile measurement; schema v10 table optimizer_profiles): per workload and
// dataset, the seconds one step of each optimizer takes on the workload's parameters (the
// slowest rank's median). The simulator charges it as a step's `opt` phase
// (engine/sim_run.cpp sim_profile_resolve); calibrations older than v10 have none (opt 0).
// Functions over a Store's connection, beside the Store class (like the validation tables).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

struct OptimizerProfileRow {
  std::string workload, dataset;
  std::string optimizer;  // engine/compute_profile.hpp compute_profile_optimizer_key: sgd | sgd+momentum | adamw
  int64_t params = 0;     // parameters stepped
  double opt_s = 0;
};

// Appends the rows to calibration `calibration_id` in one transaction.
void optimizer_profiles_append(Store& store, int64_t calibration_id, const std::vector<OptimizerProfileRow>& rows);
// The calibration's rows (empty on a database older than schema v10).
std::vector<OptimizerProfileRow> optimizer_profiles_get(const Store& store, int64_t calibration_id);

}  // namespace dsgd
