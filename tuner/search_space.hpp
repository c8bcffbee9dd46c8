// The tuner's search space (DESIGN §8): which configurations `dsgd-tune recommend` may try,
// parsed from its flags, and the analytic filter that refuses impossible ones before
// anything runs. A candidate is an algorithm with its knobs — sync period H (algorithms that
// take one), per-worker batch, gossip topology (dpsgd, adpsgd), learning-rate scaling rule —
// applied over the base configuration (workload, dataset, cluster, target, seed).
// TuneSpec is everything a session needs to be replayed; it is stored as JSON with the session
// so `--resume` runs the same plan.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

struct TuneSpec {
  RunConfig base;                            // workload, dataset, cluster, target, seed, db
  std::vector<std::string> algos;            // --algos
  std::vector<int64_t> periods;              // --period (algorithms with H only)
  std::vector<int64_t> batches;              // --batch (per worker)
  std::vector<std::string> topologies;       // --topologies (gossip algorithms only)
  std::vector<std::string> lr_scalings;      // --lr-scaling
  double budget_s = 0;                       // --budget: evaluation (virtual) seconds in all; 0: none
  int64_t trials = 0;                        // --trials: trial runs in all; 0: none
  double trial_time_s = 0;                   // --trial-time: a trial's full budget R; 0: from --budget
  double max_bytes_per_step = 0;             // --max-bytes-per-step; 0: no constraint
  std::vector<std::string> compressors{""};  // --compress ("" = none; the all-reduce variants only)
  double max_memory_bytes = 0;               // --max-memory: bytes one worker needs; 0: no constraint
  int64_t race_top = 3;                      // configurations in the final race
  int64_t race_seeds = 3;                    // seeds each in the final race
  double eta = 3;                            // successive halving keeps 1/eta per rung
  bool prior = false;  // --prior on: the theory prior (tuner/prior.hpp) seeds the design, is the GP's mean
  // --period-schedules: the schedules of the algorithms that take --period-schedule (localsgd)
  std::vector<std::string> period_schedules{"constant"};
};

nlohmann::json tune_spec_to_json(const TuneSpec& spec);
TuneSpec tune_spec_from_json(const nlohmann::json& j);

// Gossip algorithms: the topology is a knob of theirs (others keep the base topology).
bool tune_algo_is_gossip(const std::string& algo);

// "1..64" → powers of two from 1 to 64; "4,16,32" → that list. Throws InputError naming flag.
std::vector<int64_t> tune_parse_int_space(const std::string& flag, const std::string& text);
// "a,b,c" → {a, b, c} (spaces trimmed, empty items refused).
std::vector<std::string> tune_parse_list(const std::string& flag, const std::string& text);
// "5min", "300s", "2h", "90" (seconds), "500ms" → seconds; throws InputError naming flag.
double tune_parse_duration(const std::string& flag, const std::string& text);
// "64MB", "1e6", "512KiB" → bytes (decimal kB/MB/GB, binary KiB/MiB/GiB).
double tune_parse_bytes(const std::string& flag, const std::string& text);

struct Candidate {
  std::string algo;
  int64_t period = 0;  // 0: the algorithm takes no H
  int64_t batch = 0;
  std::string topology;  // empty: not a knob of this algorithm (base topology)
  std::string lr_scaling;
  std::string compress;  // --compress of the candidate; empty: none (or not a knob of this algorithm)
  // --period-schedule of the candidate (localsgd): "qsr" or "adacomm"; empty: constant (or not
  // a knob of this algorithm). qsr's H is its H_base and its α = η·√H with η the candidate's
  // learning rate (candidate_config): the period is H at the peak rate and grows as the
  // schedule decays it. adacomm's H is its H_0.
  // (With an initializer, so aggregates of the six fields before it stay warning-free.)
  std::string period_schedule{};
};

// Whether algo takes --period-schedule (a flag of its registry entry).
bool tune_algo_has_period_schedule(const std::string& algo);
// "constant,qsr,adacomm" → {"constant", "qsr", "adacomm"}; throws InputError naming --period-schedules.
std::vector<std::string> tune_parse_period_schedules(const std::string& text);

// "localsgd H=16 b=64 lr=sqrt", "dpsgd ring b=32 lr=linear", "ssgd b=32 lr=sqrt c=topk:0.01",
// "localsgd H=16 qsr b=64 lr=sqrt":
// unique within a space.
std::string candidate_key(const Candidate& c);
// The run configuration of c over spec.base with this seed (steps and eval-every left to the
// caller); a qsr candidate gets --qsr-alpha η·√H at the learning rate it trains with.
RunConfig candidate_config(const TuneSpec& spec, const Candidate& c, uint64_t seed);

struct Refusal {
  Candidate candidate;
  std::string reason;
};
struct SpaceEnumeration {
  std::vector<Candidate> feasible;
  std::vector<Refusal> refused;
  std::vector<double> bytes_per_step;  // per feasible candidate, the algorithm's own formula
};

// "none,topk:0.01,qsgd:bits=4" → {"", "topk:0.01", "qsgd:bits=4"}: each checked by
// compressor_create; throws InputError naming --compress.
std::vector<std::string> tune_parse_compressors(const std::string& text);

// Every combination of the space, then the analytic filter: config_validate on the
// candidate's configuration, bytes per step (Algorithm::bytes_sent_per_step for a model of
// param_count floats on base.workers, with the candidate's compressor) against
// max_bytes_per_step, and the memory one worker needs (engine/memory_estimate.hpp with one
// worker per process, as a real rank: dataset, model copies and algorithm state, batch; needs
// `data`) against max_memory_bytes. Compressors apply to the algorithms that take --compress
// (variant_uses_compress); the others are enumerated uncompressed; the period schedules to the
// algorithms that take --period-schedule, qsr only under a decaying --lr-schedule (under a
// constant one it is the constant schedule: refused, saying so). Throws InputError for an
// unknown algorithm (listing the valid ones) or an empty list.
SpaceEnumeration space_enumerate(const TuneSpec& spec, size_t param_count, const DatasetPair* data = nullptr);

// k indices of `cands` spread over the space (greedy farthest-point on the scaled knobs,
// algorithm and topology as categories; the start and ties from a seeded shuffle). All of
// them, in order, when k >= cands.size(). Deterministic for a seed. With `start` (indices already
// chosen, fewer than k), the sample begins with them and adds the points farthest from them.
std::vector<size_t> space_fill_sample(const std::vector<Candidate>& cands, size_t k, uint64_t seed,
                                      const std::vector<size_t>& start = {});

}  // namespace dsgd
