// One trial of the tuner on real MPI ranks (`dsgd-tune recommend --backend mpi`): the run
// configuration as a child `dsgd-bench run --backend mpi` (engine/child_run.hpp, the path
// `--validate` takes), which launches itself through mpiexec on this host with the configured
// emulated link and stragglers, stores its run in `store` (a pool slot's private database,
// tuner/trial_pool.hpp) and ends itself at its own stop rules: --stop-at-target, and
// --time-limit = the trial's budget in seconds of training time (the clock of time-to-target:
// wall seconds on rank 0, evaluations excluded), both checked at evaluations as on the sim.
// The outcome is read from the stored run's evaluations with the sim trial's rules
// (tuner/trial.hpp TrialWatch), and a stopped run is finished as `interrupted` ("stopped by
// dsgd-tune: ...") as a sim trial's is. Limits: the child's launch (mpiexec, loading the
// dataset, setup; ~1-2 s) is real time outside the budget; real timings vary between runs, so
// two trials of one configuration and seed reach the target at different times.
#pragma once

#include "core/run_config.hpp"
#include "results/store.hpp"
#include "results/target.hpp"
#include "tuner/trial.hpp"

namespace dsgd {

// Runs cfg (backend mpi; cfg.steps and cfg.eval_every set by the caller, an upper bound: the
// time limit ends it) until the target, divergence, `budget_s` seconds of training or the last
// step. A configuration the child refuses, or a run that fails, is a failed outcome with the
// message (nothing thrown).
TrialOutcome trial_run_mpi(const RunConfig& cfg, double budget_s, const Target& target, Store& store);

}  // namespace dsgd
