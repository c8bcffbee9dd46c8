// A series' noise floor from an A/A calibration (`dsgd-bench track calibrate`; docs/reports.md,
// "Tracking and the CI gate"): R runs of one commit, the same binary and configuration, and the
// coefficient of variation of their values (sample standard deviation / mean: process-to-
// process noise, bimodal runs included) per series, metric and machine. `track` widens its
// noise floor to what the calibration implies for the candidate's median of k runs
// (2 x cv x sqrt(pi / 2k), the standard error of a median; cv / sqrt(k) for k <= 2), so a
// series with a short or lucky history does not gate on noise a calibration has seen.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "results/history.hpp"
#include "results/store.hpp"

namespace dsgd {

struct NoiseFloor {
  std::string series, metric, machine, commit;
  double cv = 0;    // sample standard deviation / mean of the runs' values
  size_t runs = 0;  // how many
  std::string created_at;
};

// The coefficients of variation of `runs` (all of one commit, or the newest commit of each
// series is taken) for each metric, per series. Series with fewer than 3 runs are left out.
std::vector<NoiseFloor> noise_floor_measure(const std::vector<RunWithSummary>& runs,
                                            const std::vector<std::string>& metrics);

// Stores the floors, each replacing the series' previous one.
void noise_floor_store(Store& store, const std::vector<NoiseFloor>& floors);
// The stored floors (none before schema v17).
std::vector<NoiseFloor> noise_floors_list(const Store& store);

// The relative noise of a median of k runs that a floor implies: 2 cv sqrt(pi / 2k) (k >= 3),
// 2 cv / sqrt(k) (k = 1, 2).
double noise_floor_of_median(double cv, size_t k);

}  // namespace dsgd
