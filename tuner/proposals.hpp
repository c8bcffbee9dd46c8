// Surrogate proposals of the tuner (DESIGN §8, strategy step 4): after a rung of successive
// halving, a Gaussian process (tuner/gaussian_process.hpp, Matérn 5/2 ARD) on the log
// time-to-target of the rung's reached trials, over the candidates' knobs scaled to [0,1]
// (algorithm, topology, lr rule and compressor one-hot; log2 H and log2 batch over their ranges), proposes
// the not yet tried candidates with the largest expected improvement weighted by P(reach the
// target) (tuner/acquisition.hpp acquisition_log_weighted_ei). P(reach) is the share of reached
// trials near the candidate, weighted by the fitted kernel, with a Beta(1/4, 1/4) prior — one
// pseudo-trial of 1/2, which keeps unexplored regions possible (gp_reach_probability). Censored trials enter P(reach)
// only: their time is a lower bound, not an observation of the GP.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tuner/objective.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

// Rows of the knobs of every candidate, scaled to [0,1].
Eigen::MatrixXd proposal_encode(const std::vector<Candidate>& space);

struct Proposal {
  size_t index = 0;  // into the space
  double mean_log_time = 0, sd_log_time = 0, p_reach = 0, log_wei = 0;
};

// Up to k candidates of `space` not in `tried`, best weighted EI first (ties by index), from the
// observations (index into space, score at one budget). None when fewer than 2 observations
// reached the target (nothing to fit). Deterministic for a seed. prior_log_time: the theory
// prior's log time-to-target per candidate of the space (tuner/prior.hpp), the GP's mean (the GP
// then models the residual); empty: a zero mean.
std::vector<Proposal> proposals_weighted_ei(const std::vector<Candidate>& space,
                                            const std::vector<std::pair<size_t, TrialScore>>& observed,
                                            const std::set<size_t>& tried, size_t k, uint64_t seed,
                                            const std::vector<double>& prior_log_time = {});

}  // namespace dsgd
