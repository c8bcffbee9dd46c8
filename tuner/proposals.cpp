// See proposals.hpp.
#include "tuner/proposals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tuner/acquisition.hpp"
#include "tuner/gaussian_process.hpp"

namespace dsgd {

Eigen::MatrixXd proposal_encode(const std::vector<Candidate>& space) {
  std::vector<std::string> algos, topos, rules, comps, scheds;
  auto add = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  double hmin = std::numeric_limits<double>::infinity(), hmax = -hmin, bmin = hmin, bmax = -hmin;
  for (const Candidate& c : space) {
    add(algos, c.algo);
    add(topos, c.topology);
    add(rules, c.lr_scaling);
    add(comps, c.compress);
    add(scheds, c.period_schedule);
    if (c.period > 0) {
      hmin = std::min(hmin, std::log2(static_cast<double>(c.period)));
      hmax = std::max(hmax, std::log2(static_cast<double>(c.period)));
    }
    bmin = std::min(bmin, std::log2(static_cast<double>(c.batch)));
    bmax = std::max(bmax, std::log2(static_cast<double>(c.batch)));
  }
  // The period schedules get columns only when the space holds more than one (a constant column
  // would add a length scale to fit and nothing else).
  if (scheds.size() < 2) scheds.clear();
  const size_t d = algos.size() + topos.size() + rules.size() + comps.size() + scheds.size() + 2;
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(space.size()), static_cast<Eigen::Index>(d));
  auto pos = [](const std::vector<std::string>& v, const std::string& s) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
  };
  for (size_t i = 0; i < space.size(); ++i) {
    const Candidate& c = space[i];
    const auto r = static_cast<Eigen::Index>(i);
    size_t col = 0;
    X(r, static_cast<Eigen::Index>(col + pos(algos, c.algo))) = 1;
    col += algos.size();
    X(r, static_cast<Eigen::Index>(col + pos(topos, c.topology))) = 1;
    col += topos.size();
    X(r, static_cast<Eigen::Index>(col + pos(rules, c.lr_scaling))) = 1;
    col += rules.size();
    X(r, static_cast<Eigen::Index>(col + pos(comps, c.compress))) = 1;
    col += comps.size();
    if (!scheds.empty()) X(r, static_cast<Eigen::Index>(col + pos(scheds, c.period_schedule))) = 1;
    col += scheds.size();
    // H: 0 for algorithms without one (they differ by the algorithm's one-hot anyway).
    X(r, static_cast<Eigen::Index>(col)) =
        c.period > 0 && hmax > hmin ? (std::log2(static_cast<double>(c.period)) - hmin) / (hmax - hmin) : 0.0;
    X(r, static_cast<Eigen::Index>(col + 1)) =
        bmax > bmin ? (std::log2(static_cast<double>(c.batch)) - bmin) / (bmax - bmin) : 0.0;
  }
  return X;
}

std::vector<Proposal> proposals_weighted_ei(const std::vector<Candidate>& space,
                                            const std::vector<std::pair<size_t, TrialScore>>& observed,
                                            const std::set<size_t>& tried, size_t k, uint64_t seed,
                                            const std::vector<double>& prior_log_time) {
  std::vector<Proposal> out;
  if (k == 0) return out;
  const Eigen::MatrixXd X = proposal_encode(space);
  std::vector<size_t> reached;
  for (size_t j = 0; j < observed.size(); ++j)
    if (observed[j].second.reached && observed[j].second.time_s > 0) reached.push_back(j);
  if (reached.size() < 2) return out;
  const auto n = static_cast<Eigen::Index>(reached.size());
  Eigen::MatrixXd Xo(n, X.cols());
  Eigen::VectorXd y(n), mu0 = Eigen::VectorXd::Zero(n);
  auto prior_at = [&](size_t index) { return prior_log_time.empty() ? 0.0 : prior_log_time.at(index); };
  double best = std::numeric_limits<double>::infinity();
  for (Eigen::Index r = 0; r < n; ++r) {
    const auto& [index, score] = observed[reached[static_cast<size_t>(r)]];
    Xo.row(r) = X.row(static_cast<Eigen::Index>(index));
    y(r) = std::log(score.time_s);
    mu0(r) = prior_at(index);
    best = std::min(best, y(r));
  }
  GaussianProcess gp;
  gp.fit(Xo, y, mu0, seed);
  Eigen::MatrixXd Xall(static_cast<Eigen::Index>(observed.size()), X.cols());
  std::vector<bool> reached_flags;
  for (size_t j = 0; j < observed.size(); ++j) {
    Xall.row(static_cast<Eigen::Index>(j)) = X.row(static_cast<Eigen::Index>(observed[j].first));
    reached_flags.push_back(observed[j].second.reached);
  }
  for (size_t i = 0; i < space.size(); ++i) {
    if (tried.count(i)) continue;
    const Eigen::VectorXd x = X.row(static_cast<Eigen::Index>(i)).transpose();
    const GpPrediction p = gp.predict(x, prior_at(i));
    // P(reach): kernel-weighted share of reached trials near x, one pseudo-trial of 1/2
    // (a Beta(1/4, 1/4) prior) under the fitted length scales.
    const double p_reach = gp_reach_probability(Xall, reached_flags, x, gp.hyper().length_scales, 0.25, 0.25);
    Proposal prop;
    prop.index = i;
    prop.mean_log_time = p.mean;
    prop.sd_log_time = std::sqrt(std::max(0.0, p.variance));
    prop.p_reach = p_reach;
    prop.log_wei = acquisition_log_weighted_ei(p.mean, prop.sd_log_time, best, prop.p_reach);
    out.push_back(prop);
  }
  std::stable_sort(out.begin(), out.end(), [](const Proposal& a, const Proposal& b) { return a.log_wei > b.log_wei; });
  if (out.size() > k) out.resize(k);
  return out;
}

}  // namespace dsgd
