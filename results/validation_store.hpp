// Stored validations (`dsgd-bench validate`, schema v4): one configuration run on the real
// backend (measured) and on the simulator (predicted), with per-metric relative errors.
// Functions over a Store's connection, beside the Store class (like the calibration tables).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

struct ValidationMetric {
  std::string metric;  // step_time_s | compute_s | comm_s | wait_s | throughput_samples_per_s
  double measured = 0;
  double predicted = 0;
  std::optional<double> rel_error;  // |predicted − measured| / |measured|; empty when measured is 0
};

struct ValidationRecord {
  int64_t id = 0;
  std::string created_at;  // filled by the store when empty
  std::string host;
  std::string config_json;
  int64_t profile_run_id = 0, measured_run_id = 0, simulated_run_id = 0;
  std::vector<ValidationMetric> metrics;
};

// |predicted − measured| / |measured|; empty when measured is 0 or either is not finite.
std::optional<double> validation_rel_error(double measured, double predicted);

// Inserts the record and its metrics in one transaction; returns its id.
int64_t validation_store(Store& store, const ValidationRecord& record);
// Newest first; limit <= 0: all. Empty on a database older than schema v4.
std::vector<ValidationRecord> validations_list(const Store& store, int limit = 100);

}  // namespace dsgd
