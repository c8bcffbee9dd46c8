// The options `dsgd-tune recommend` and `dsgd-tune grid` share: every workload and cluster flag of
// `dsgd-bench run` (cli/run_options.hpp) except the knobs the tuner searches or decides per
// trial, the search space (--algos, --period, --batch, --topologies, --lr-scaling, --compress,
// --period-schedules), the constraints (--max-bytes-per-step, --max-memory), the trial time R
// and the real-time guard on a trial's steps.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "cli/run_options.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

struct TuneSpaceOptions {
  RunOptionBinding run;
  std::string algos = "ssgd,localsgd,diloco,dpsgd";
  std::string periods = "1..64";
  std::string batches = "16..128";
  std::string topologies = "ring,exp,complete";
  std::string lr_scalings = "linear,sqrt";
  std::string period_schedules = "constant";
  std::string trial_time;
  std::string max_bytes;
  std::string compress = "none";
  std::string max_memory;
  int64_t max_trial_steps = 20000;
  int64_t jobs = 0;  // --jobs: trials at a time; 0: one per core (trial_pool_default_jobs)
  CLI::Option* jobs_option = nullptr;
};

// Binds them on `sub` (--config, the run flags, the space; --trial-time with `trial_time_help`).
void tune_space_options_bind(CLI::App* sub, TuneSpaceOptions& o, const std::string& trial_time_help);
// The spec they describe (budget, trials and race left at their defaults). Throws InputError
// naming the flag for a malformed value.
TuneSpec tune_space_options_spec(const TuneSpaceOptions& o);
// Trials at a time: --jobs, or one per core for trials of `threads_per_trial` threads. Throws
// InputError for a --jobs outside 1..1024.
int tune_space_options_jobs(const TuneSpaceOptions& o, int64_t threads_per_trial);

}  // namespace dsgd
