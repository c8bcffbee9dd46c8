// The per-layer forward/backward profiler behind `dsgd-bench calibrate`'s compute profile
// and the tuner's "measure what is missing": backward per layer from the layer hook's
// timestamps; forward is one whole-model call, so its time is split over the layers in
// proportion to their parameter counts. Every rank of `comm` profiles the same batches at
// once (as they compute in training); the value returned is the slowest rank's median over
// the iterations, after untimed ones (at least kComputeProfileWarmup and 50 ms); the timed
// iterations are at least `iters` and at least 0.2 s. Each batch size starts from the
// initial model and takes a plain SGD step (untimed, --lr's default) after every iteration, so
// the profile follows the start of a training trajectory rather than timing the initial
// weights over and over (a model's cost can depend on its state: the SVM's backward only
// touches the hinge terms still inside the margin, ~5x fewer after a few steps). The optimizer
// step is profiled apart, once per optimizer (compute_profile_measure_optimizers). Stored as `profiles` rows of a
// calibration, which sim runs read (engine/sim_run.hpp sim_profile_resolve).
// What is profiled is a `model`: a RunConfig whose workload, dataset and model-shape fields
// (--model, --layers, --d-model, --heads, --seq, --vocab) are read; its rows are stored under
// workload_profile_key(model) (workloads/workload.hpp), so each shape has its own profile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/run_config.hpp"
#include "core/vector_ops.hpp"
#include "results/optimizer_profile_store.hpp"
#include "results/store.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

inline constexpr int kComputeProfileWarmup = 3;
// Besides the counts: untimed iterations for at least this long, then timed ones for at least
// kComputeProfileMinTimeS (and at least `iters`), at most kComputeProfileMaxIters.
inline constexpr double kComputeProfileWarmupS = 0.05;
inline constexpr double kComputeProfileMinTimeS = 0.2;
inline constexpr int64_t kComputeProfileMaxIters = 100000;
inline constexpr uint64_t kComputeProfileSeed = 1;  // dataset synthesis and batch order of the profile

// The data and the model a profile runs on (the dataset loaded with kComputeProfileSeed, the
// workload's buffers reserved for the largest batch). Throws InputError ("--batches: ...")
// when a batch exceeds the training set.
struct ComputeProfileSetup {
  DatasetPair data;
  std::unique_ptr<Workload> workload;
};
ComputeProfileSetup compute_profile_setup(const RunConfig& model, const std::vector<int64_t>& batches);

// Collective over comm: per batch of `batches`, `iters` timed iterations at model.threads BLAS
// threads (set for the call, then restored: OpenBLAS's default is every core, and a worker of
// --threads 1 measured at two runs at another speed and spread than the one it stands for); one
// ProfileRow per (batch, layer). Throws Error when the workload's backward does not call the
// hook once per layer.
std::vector<ProfileRow> compute_profile_measure(ComputeProfileSetup& s, const RunConfig& model,
                                                const std::vector<int64_t>& batches, int64_t iters, Communicator& comm);

// The cost class of the optimizer step a run takes: "adamw", "sgd+momentum" (momentum or
// Nesterov) or "sgd" (engine/sim_run.cpp looks its time up under this key).
std::string compute_profile_optimizer_key(const RunConfig& cfg);
inline constexpr const char* kModelPassProfileKey = "model-pass";

// One model pass, timed once on the wall clock: a copy of `params` into `scratch`, then
// scratch ← scratch + 0.5·params; the seconds of the two over 2. Host memory (device
// operations are asynchronous). What calibrate and a run's warm-up (Summary::model_pass_s)
// both time.
double compute_profile_model_pass_s(VectorOps& vec, BufferView scratch, ConstBufferView params);

// Collective over comm: the seconds of one optimizer step of each key above on the workload's
// parameters (median of `iters` after kComputeProfileWarmup untimed, the slowest rank's), at
// model.threads BLAS threads; and under kModelPassProfileKey one model pass (the mean of a
// copy and a y ← y + a·x over the parameters, what the simulator charges per pass an
// algorithm makes outside compute).
std::vector<OptimizerProfileRow> compute_profile_measure_optimizers(ComputeProfileSetup& s, const RunConfig& model,
                                                                    int64_t iters, Communicator& comm);

// The threads per worker a calibration's profile was measured with (its config's "threads");
// 0 when it does not say (profiles the tuner and the simulator measured before they recorded
// it, at OpenBLAS's default of every core). A profile applies to a run of the same threads:
// compute_profile_threads_differ is true when the calibration records another count.
int64_t compute_profile_threads(const CalibrationRecord& cal);
bool compute_profile_threads_differ(const CalibrationRecord& cal, const RunConfig& model);

// Batches of `batches` that have no calibration profile of the model on its dataset on `host`
// in `store` measured with the model's threads per worker (the lookup sim_profile_resolve makes).
std::vector<int64_t> compute_profile_missing(const Store& store, const std::string& host, const RunConfig& model,
                                             const std::vector<int64_t>& batches);

// Measures `batches` on this process alone (one rank, as `dsgd-bench calibrate --workers 1`),
// with model.threads threads (restored after), and stores them as a new profile-only calibration of this host; `by`
// names the caller in the calibration's config. Returns the calibration id.
int64_t compute_profile_store_new(Store& store, const RunConfig& model, const std::vector<int64_t>& batches,
                                  int64_t iters, const std::string& by);

// The simulator's compute jitter from a profiled batch (ProfileRow::jitter): the quantiles of
// `times` (per-iteration forward + backward) at probabilities (k + ½)/K for K =
// kProfileJitterPoints, relative to the first; empty for fewer than 2 times.
inline constexpr size_t kProfileJitterPoints = 100;
std::vector<double> profile_jitter_quantiles(std::vector<double> times);

// A batch whose per-iteration compute spreads wider than this (interquartile range / median)
// is too noisy to predict from: calibrate and the simulator say so. A chosen bound, between
// what was measured on an idle 2-core machine (SVM on 2 ranks: 8-10 %) and the profiles that
// were 3x off the trainer (38-129 %).
inline constexpr double kProfileSpreadLimit = 0.3;

// What is wrong with a set of profile rows (one workload and dataset), one line each: batches
// whose spread exceeds kProfileSpreadLimit or is unknown (stored before spreads were), and a
// larger batch measured faster than a smaller one beyond their spreads (at least 10 %).
// Empty when the profile can be predicted from.
std::vector<std::string> compute_profile_warnings(const std::vector<ProfileRow>& rows);

// compute_profile_warnings of the profiles the simulator would use for `batches` of the model
// on `host` (for each batch, the newest calibration that has it, as sim_profile_resolve
// picks), taken together so that batch scaling is checked across calibrations. Each line
// names the calibration(s) it comes from. `dsgd-tune` prints them before it searches.
std::vector<std::string> compute_profile_warnings_stored(const Store& store, const std::string& host,
                                                         const RunConfig& model, const std::vector<int64_t>& batches);

// The conditions a profile is measured under, stored in its calibration's config
// ("conditions"): the 1-minute load average and core count, the ranks on this host, the
// machine's transparent-huge-page setting, how much of the training set is on huge pages, and
// whether this process's memory copies were slow by placement (copy_aliasing().state).
nlohmann::json compute_profile_conditions(const Dataset& train, int ranks_on_host);

inline constexpr int64_t kComputeProfileIters = 20;  // timed iterations when measuring what is missing (as calibrate)

// What compute_profile_fill_missing measured: nothing (batches empty) when every batch had a profile.
struct ComputeProfileFill {
  std::vector<int64_t> batches;  // the batches measured
  int64_t calibration_id = 0;    // the profile-only calibration they were stored as
  int64_t iters = 0;
  double wall_s = 0;  // real seconds measuring
};

// "When no calibration exists for the workload, batch and host, measure what is needed and
// store it": the batches of `batches` without a profile of this host (compute_profile_missing)
// measured and stored by compute_profile_store_new. `before` (may be empty) is called with the
// missing batches before measuring, so the caller can say why it waits. The sim runs of
// `dsgd-bench run --backend sim` and of `dsgd-tune` call it before they resolve their profile.
ComputeProfileFill compute_profile_fill_missing(Store& store, const RunConfig& model,
                                                const std::vector<int64_t>& batches, const std::string& by,
                                                const std::function<void(const std::vector<int64_t>&)>& before = {},
                                                int64_t iters = kComputeProfileIters);

}  // namespace dsgd
