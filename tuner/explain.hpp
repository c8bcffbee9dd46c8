// The explanation printed under `dsgd-tune recommend`'s ranking (DESIGN §8 "an explanation"):
//  - why the winner wins: its breakdown against the runner-up's — time-to-target as steps to
//    the target times the step time, the step time split into compute / comm / wait, and bytes
//    per step — and which of the two factors decides;
//  - how sensitive the objective is to each knob around the winner: for every knob (H, batch,
//    lr rule, topology, compressor, algorithm) the winner's neighbours along it (the next value
//    below and above in the searched list; the other rules, topologies, compressors and
//    algorithms), each with its
//    evaluated score where the session ran it (the largest budget it reached, base seed), else
//    the GP's prediction there (tuner/proposals.hpp: the GP on log time-to-target of the
//    reached trials, and P(reach)), saying which. Compared like with like: a neighbour raced
//    over the seeds against the winner's median over its seeds; any other (one base-seed trial,
//    or a GP prediction fitted on base-seed trials) against the winner's base-seed trial.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/tune_store.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

// One side of the comparison: a configuration's representative trial.
struct ExplainSide {
  std::string config;
  bool reached = false;
  double time_s = 0;                                         // time-to-target, or elapsed when censored
  int64_t steps = 0;                                         // steps done at the target (or at the stop)
  double step_s = 0, compute_s = 0, comm_s = 0, wait_s = 0;  // per step (run summary)
  double bytes_per_step = 0;                                 // per worker, the algorithm's formula
};

struct ExplainNeighbour {
  std::string knob;   // "H", "batch", "lr", "topology", "compress", "algo"
  std::string value;  // the neighbour's value of that knob
  std::string config;
  bool evaluated = false;  // else the GP's prediction
  // Evaluated: its score at the largest budget it ran (base seed).
  bool reached = false;
  double time_s = 0, fidelity_s = 0;
  // GP: predicted time-to-target (exp of the mean log time) and P(reach); predicted false when
  // there is no GP (fewer than 2 reached trials).
  bool predicted = false;
  double predicted_s = 0, p_reach = 0;
  // What the neighbour is compared with: "median" (both raced: medians over the race seeds) or
  // "base seed" (the winner's base-seed trial), and the winner's time on that basis.
  std::string basis;
  double winner_time_s = 0;
};

struct Explanation {
  bool available = false;  // a winner that reached the target
  ExplainSide winner;
  bool has_runner_up = false;
  ExplainSide runner_up;
  std::string why;  // one sentence: the deciding factor
  std::vector<ExplainNeighbour> sensitivity;
};

// The configurations as ranked (best first), each with its representative trial; `trials`:
// every trial of the session (the evaluated neighbours); `space`: the feasible candidates and
// their bytes per step; `spec`: the searched values of each knob.
struct ExplainRanked {
  Candidate candidate;
  TrialRow representative;  // the median seed's trial when raced
  double bytes_per_step = 0;
  bool raced = false;  // in the final race (representative is then a median over its seeds)
};
Explanation tune_explain(const TuneSpec& spec, const std::vector<Candidate>& space,
                         const std::vector<ExplainRanked>& ranking, const std::vector<TrialRow>& trials);

nlohmann::json explain_json(const Explanation& e);
// The table output's lines (indented, no trailing newline).
std::vector<std::string> explain_lines(const Explanation& e);

}  // namespace dsgd
