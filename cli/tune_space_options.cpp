// See tune_space_options.hpp.
#include "cli/tune_space_options.hpp"

#include <vector>

#include "core/errors.hpp"
#include "tuner/trial_pool.hpp"

namespace dsgd {

namespace {

// The run flags the tuner owns (searched, or decided per trial).
const std::vector<std::string> kTunerOwnedKeys = {
    "algo",   "period",     "batch", "topology", "compress",    "lr-scaling",      "steps",
    "epochs", "eval-every", "tag",   "hostfile", "save-params", "period-schedule", "qsr-alpha"};

}  // namespace

void tune_space_options_bind(CLI::App* sub, TuneSpaceOptions& o, const std::string& trial_time_help) {
  sub->add_option("--config", o.run.config_file, "base configuration (JSON or TOML, keys of dsgd-bench run)")
      ->check(CLI::ExistingFile);
  run_options_bind(sub, o.run, kTunerOwnedKeys);
  for (auto& [field, option] : o.run.bound)
    if (std::string(field->key) == "backend")
      option->default_str("sim")->description(
          "where trials run: sim (simulated workers: virtual clock, real numerics) or mpi (real ranks on this machine, "
          "recommend only)");
  sub->add_option("--algos", o.algos, "algorithms to search (dsgd-bench list algorithms)")->capture_default_str();
  sub->add_option("--period", o.periods, "sync period H: MIN..MAX (powers of 2) or a list")->capture_default_str();
  sub->add_option("--batch", o.batches, "per-worker batch: MIN..MAX (powers of 2) or a list")->capture_default_str();
  sub->add_option("--topologies", o.topologies, "gossip topologies (dpsgd, adpsgd only)")->capture_default_str();
  sub->add_option("--lr-scaling", o.lr_scalings, "learning-rate scaling rules to search (none, linear, sqrt)")
      ->capture_default_str();
  sub->add_option("--period-schedules", o.period_schedules,
                  "localsgd's sync-period schedules to search: constant, qsr (needs a decaying --lr-schedule), adacomm")
      ->capture_default_str();
  sub->add_option("--trial-time", o.trial_time, trial_time_help);
  sub->add_option("--max-bytes-per-step", o.max_bytes, "constraint: bytes a worker sends per step (e.g. 1MB)");
  sub->add_option("--compress", o.compress,
                  "compressors to search for the all-reduce variants: none, topk:RATIO, qsgd:bits=B, powersgd:rank=R")
      ->capture_default_str();
  sub->add_option("--max-memory", o.max_memory,
                  "constraint: memory one worker needs (dataset, model copies, algorithm state, batch; e.g. 2GB)");
  o.jobs_option = sub->add_option("--jobs", o.jobs, "trials run at a time (default: one per core)");
  sub->add_option("--max-trial-steps", o.max_trial_steps, "a trial stops after this many steps (real-time guard)")
      ->capture_default_str();
}

TuneSpec tune_space_options_spec(const TuneSpaceOptions& o) {
  TuneSpec spec;
  spec.base = run_options_resolve(o.run);
  bool backend_given = false;
  for (const auto& [field, option] : o.run.bound)
    if (std::string(field->key) == "backend" && option->count() > 0) backend_given = true;
  if (!backend_given && o.run.config_file.empty()) spec.base.backend = "sim";
  if (spec.base.backend == RunConfig{}.backend && !backend_given) spec.base.backend = "sim";  // the default
  spec.algos = tune_parse_list("--algos", o.algos);
  spec.periods = tune_parse_int_space("--period", o.periods);
  spec.batches = tune_parse_int_space("--batch", o.batches);
  spec.topologies = tune_parse_list("--topologies", o.topologies);
  spec.lr_scalings = tune_parse_list("--lr-scaling", o.lr_scalings);
  spec.period_schedules = tune_parse_period_schedules(o.period_schedules);
  if (!o.trial_time.empty()) spec.trial_time_s = tune_parse_duration("--trial-time", o.trial_time);
  if (!o.max_bytes.empty()) spec.max_bytes_per_step = tune_parse_bytes("--max-bytes-per-step", o.max_bytes);
  spec.compressors = tune_parse_compressors(o.compress);
  if (!o.max_memory.empty()) spec.max_memory_bytes = tune_parse_bytes("--max-memory", o.max_memory);
  return spec;
}

int tune_space_options_jobs(const TuneSpaceOptions& o, int64_t threads_per_trial) {
  if (o.jobs_option && o.jobs_option->count() > 0 && (o.jobs < 1 || o.jobs > 1024))
    DSGD_THROW(InputError, "pass e.g. --jobs 2 (trials at a time; default: one per core)",
               "--jobs must be in 1..1024 (got {})", o.jobs);
  return o.jobs > 0 ? static_cast<int>(o.jobs) : trial_pool_default_jobs(threads_per_trial);
}

}  // namespace dsgd
