// Human-readable tables of runs, shared by `run` (its final summary), `show` and `runs`.
#pragma once

#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "results/store.hpp"

namespace dsgd {

std::string format_config(const RunConfig& cfg, const RunRecord& record);
std::string format_eval_line(const EvalRow& row, int64_t total_steps);
std::string format_run_summary(const RunWithSummary& run);
std::string format_runs_table(const std::vector<RunWithSummary>& runs);

}  // namespace dsgd
