// See explain.hpp.
#include "tuner/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "algorithms/variant.hpp"
#include "core/run_config.hpp"
#include "tuner/proposals.hpp"

namespace dsgd {

namespace {

ExplainSide side_of(const ExplainRanked& r) {
  ExplainSide s;
  const TrialRow& t = r.representative;
  s.config = candidate_key(r.candidate);
  s.reached = t.reached;
  s.time_s = t.time_s;
  s.steps = t.steps;
  s.step_s = t.step_s;
  s.compute_s = t.compute_s;
  s.comm_s = t.comm_s;
  s.wait_s = t.wait_s;
  s.bytes_per_step = r.bytes_per_step;
  return s;
}

std::string ms(double s) {
  return fmt::format("{:.3f}", s * 1e3);
}

// The part of the step (compute, comm, wait) whose difference is the largest, as text.
std::string largest_part(const ExplainSide& w, const ExplainSide& r) {
  const std::pair<const char*, double> parts[] = {
      {"compute", w.compute_s - r.compute_s}, {"comm", w.comm_s - r.comm_s}, {"wait", w.wait_s - r.wait_s}};
  const auto* best = &parts[0];
  for (const auto& p : parts)
    if (std::abs(p.second) > std::abs(best->second)) best = &p;
  return fmt::format("{} {} vs {} ms", best->first,
                     ms(std::string(best->first) == "compute" ? w.compute_s
                        : std::string(best->first) == "comm"  ? w.comm_s
                                                              : w.wait_s),
                     ms(std::string(best->first) == "compute" ? r.compute_s
                        : std::string(best->first) == "comm"  ? r.comm_s
                                                              : r.wait_s));
}

std::string why_text(const ExplainSide& w, const ExplainSide& r) {
  if (!r.reached)
    return fmt::format(
        "the runner-up did not reach the target within {:.4g} s; the winner reached it in {} steps of {} ms", r.time_s,
        w.steps, ms(w.step_s));
  if (!(w.steps > 0 && r.steps > 0 && w.step_s > 0 && r.step_s > 0))
    return "no step breakdown (a trial stopped before its first timed step)";
  const double rs = static_cast<double>(w.steps) / static_cast<double>(r.steps);
  const double rt = w.step_s / r.step_s;
  const std::string part = largest_part(w, r);
  if (rt < 1 && rs >= 1)
    return fmt::format(
        "it wins on step time: each step costs {:.2f}x the runner-up's (largest difference: {}), "
        "although it needs {:.2f}x the steps",
        rt, part, rs);
  if (rs < 1 && rt >= 1)
    return fmt::format(
        "it wins on steps: it needs {:.2f}x the runner-up's steps to the target, although each costs "
        "{:.2f}x as long ({})",
        rs, rt, part);
  if (rs < 1 && rt < 1)
    return fmt::format("it needs fewer steps ({:.2f}x) and each costs less ({:.2f}x; largest difference: {})", rs, rt,
                       part);
  return fmt::format(
      "steps ({:.2f}x) and step time ({:.2f}x) are not lower: the two differ by less than the evaluation interval "
      "(time-to-target is measured at evaluations)",
      rs, rt);
}

// Neighbours of w along each knob (feasible candidates only), as (knob, value, index into space).
struct Neighbour {
  std::string knob, value;
  size_t index;
};

std::vector<Neighbour> neighbours_of(const TuneSpec& spec, const Candidate& w, const std::vector<Candidate>& space) {
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < space.size(); ++i) by_key[candidate_key(space[i])] = i;
  std::vector<Neighbour> out;
  auto add = [&](const std::string& knob, const std::string& value, const Candidate& c) {
    auto it = by_key.find(candidate_key(c));
    if (it != by_key.end()) out.push_back({knob, value, it->second});
  };
  auto adjacent = [&](const std::string& knob, std::vector<int64_t> values, int64_t Candidate::*field) {
    std::sort(values.begin(), values.end());
    const auto at = std::find(values.begin(), values.end(), w.*field);
    if (at == values.end()) return;
    for (auto it : {at == values.begin() ? values.end() : at - 1, at + 1}) {
      if (it == values.end()) continue;
      Candidate c = w;
      c.*field = *it;
      add(knob, std::to_string(*it), c);
    }
  };
  if (w.period > 0) adjacent("H", spec.periods, &Candidate::period);
  adjacent("batch", spec.batches, &Candidate::batch);
  for (const std::string& rule : spec.lr_scalings)
    if (rule != w.lr_scaling) {
      Candidate c = w;
      c.lr_scaling = rule;
      add("lr", rule, c);
    }
  if (!w.topology.empty())
    for (const std::string& topo : spec.topologies)
      if (topo != w.topology) {
        Candidate c = w;
        c.topology = topo;
        add("topology", topo, c);
      }
  if (tune_algo_has_period_schedule(w.algo))
    for (const std::string& name : spec.period_schedules)
      if ((name == "constant" ? std::string() : name) != w.period_schedule) {
        Candidate c = w;
        c.period_schedule = name == "constant" ? std::string() : name;
        add("schedule", name, c);
      }
  if (variant_uses_compress(w.algo))
    for (const std::string& comp : spec.compressors)
      if (comp != w.compress) {
        Candidate c = w;
        c.compress = comp;
        add("compress", comp.empty() ? "none" : comp, c);
      }
  // Other algorithms at the same batch and rule: the nearest H (log2), the same topology and
  // compressor where they take them.
  for (const std::string& algo : spec.algos) {
    if (algo == w.algo) continue;
    double best = 1e300;
    size_t pick = space.size();
    for (size_t i = 0; i < space.size(); ++i) {
      const Candidate& c = space[i];
      if (c.algo != algo || c.batch != w.batch || c.lr_scaling != w.lr_scaling) continue;
      double d = 0;
      if (c.period > 0 && w.period > 0)
        d += std::abs(std::log2(static_cast<double>(c.period)) - std::log2(static_cast<double>(w.period)));
      if (!c.topology.empty() && c.topology != w.topology) d += 0.5;
      if (c.compress != w.compress) d += 0.5;
      if (c.period_schedule != w.period_schedule) d += 0.5;
      if (d < best) best = d, pick = i;
    }
    if (pick < space.size()) out.push_back({"algo", algo, pick});
  }
  return out;
}

std::string score_text(bool reached, double time_s) {
  return reached ? fmt::format("{:.4g} s", time_s) : fmt::format("not reached by {:.4g} s", time_s);
}

// Each configuration's base-seed trial at the largest budget it ran: what the session knows.
std::map<std::string, const TrialRow*> evaluated_trials(const TuneSpec& spec, const std::vector<TrialRow>& trials) {
  std::map<std::string, const TrialRow*> evaluated;
  for (const TrialRow& t : trials) {
    if (t.seed != spec.base.seed || t.status == TrialStatus::trial_failed) continue;
    const TrialRow*& slot = evaluated[t.config_key];
    if (!slot || t.budget_s > slot->budget_s) slot = &t;
  }
  return evaluated;
}

// The GP's predictions at the neighbours the session did not run (proposals_weighted_ei
// scores exactly the candidates outside `tried`); none when the fit is degenerate.
std::map<size_t, Proposal> neighbour_predictions(const TuneSpec& spec, const std::vector<Candidate>& space,
                                                 const std::vector<Neighbour>& near,
                                                 const std::map<std::string, const TrialRow*>& evaluated) {
  std::map<size_t, Proposal> predicted;
  std::vector<std::pair<size_t, TrialScore>> observed;
  std::set<size_t> tried;
  for (size_t i = 0; i < space.size(); ++i) {
    auto it = evaluated.find(candidate_key(space[i]));
    if (it == evaluated.end()) continue;
    const TrialRow& t = *it->second;
    observed.emplace_back(i, TrialScore{t.reached, t.time_s, t.progress});
  }
  for (size_t i = 0; i < space.size(); ++i) tried.insert(i);
  size_t wanted = 0;
  for (const Neighbour& n : near)
    if (!evaluated.count(candidate_key(space[n.index]))) wanted += tried.erase(n.index);
  if (wanted > 0) {
    try {
      for (const Proposal& p : proposals_weighted_ei(space, observed, tried, wanted, spec.base.seed))
        predicted[p.index] = p;
    } catch (const std::exception&) {  // no GP (a degenerate fit): the neighbour is left unpredicted
    }
  }
  return predicted;
}

}  // namespace

Explanation tune_explain(const TuneSpec& spec, const std::vector<Candidate>& space,
                         const std::vector<ExplainRanked>& ranking, const std::vector<TrialRow>& trials) {
  Explanation e;
  if (ranking.empty() || !ranking.front().representative.reached) return e;
  e.available = true;
  e.winner = side_of(ranking.front());
  if (ranking.size() > 1) {
    e.has_runner_up = true;
    e.runner_up = side_of(ranking[1]);
    e.why = why_text(e.winner, e.runner_up);
  } else {
    e.why = "the only configuration evaluated";
  }

  const std::map<std::string, const TrialRow*> evaluated = evaluated_trials(spec, trials);
  const Candidate& w = ranking.front().candidate;
  const std::vector<Neighbour> near = neighbours_of(spec, w, space);
  // The winner on each basis: its median over the race seeds, and its base-seed trial.
  std::map<std::string, const ExplainRanked*> raced;
  for (const ExplainRanked& r : ranking)
    if (r.raced) raced[candidate_key(r.candidate)] = &r;
  const bool winner_raced = ranking.front().raced;
  const auto winner_base = evaluated.find(candidate_key(w));
  const double winner_base_s =
      winner_base != evaluated.end() ? winner_base->second->time_s : ranking.front().representative.time_s;

  const std::map<size_t, Proposal> predicted = neighbour_predictions(spec, space, near, evaluated);
  for (const Neighbour& n : near) {
    ExplainNeighbour x;
    x.knob = n.knob;
    x.value = n.value;
    x.config = candidate_key(space[n.index]);
    x.basis = "base seed";
    x.winner_time_s = winner_base_s;
    if (auto r = raced.find(x.config); winner_raced && r != raced.end()) {
      x.evaluated = true;
      x.reached = r->second->representative.reached;
      x.time_s = r->second->representative.time_s;
      x.fidelity_s = r->second->representative.budget_s;
      x.basis = "median";
      x.winner_time_s = ranking.front().representative.time_s;
    } else if (auto it = evaluated.find(x.config); it != evaluated.end()) {
      x.evaluated = true;
      x.reached = it->second->reached;
      x.time_s = it->second->time_s;
      x.fidelity_s = it->second->budget_s;
    } else if (auto p = predicted.find(n.index); p != predicted.end()) {
      x.predicted = true;
      x.predicted_s = std::exp(p->second.mean_log_time);
      x.p_reach = p->second.p_reach;
    }
    e.sensitivity.push_back(x);
  }
  return e;
}

nlohmann::json explain_json(const Explanation& e) {
  if (!e.available) return nullptr;
  auto side = [](const ExplainSide& s) {
    return nlohmann::json{{"config", s.config}, {"reached", s.reached}, {"time_s", s.time_s},
                          {"steps", s.steps},   {"step_s", s.step_s},   {"compute_s", s.compute_s},
                          {"comm_s", s.comm_s}, {"wait_s", s.wait_s},   {"bytes_per_step", s.bytes_per_step}};
  };
  nlohmann::json sens = nlohmann::json::array();
  for (const ExplainNeighbour& n : e.sensitivity) {
    nlohmann::json j{{"knob", n.knob},
                     {"value", n.value},
                     {"config", n.config},
                     {"source", n.evaluated   ? "evaluated"
                                : n.predicted ? "gp"
                                              : "none"}};
    if (n.evaluated || n.predicted) {
      j["basis"] = n.basis;
      j["winner_time_s"] = n.winner_time_s;
    }
    if (n.evaluated) {
      j["reached"] = n.reached;
      j["time_s"] = n.time_s;
      j["fidelity_s"] = n.fidelity_s;
      if (n.reached && n.winner_time_s > 0) j["relative_to_winner"] = n.time_s / n.winner_time_s;
    } else if (n.predicted) {
      j["predicted_time_s"] = n.predicted_s;
      j["p_reach"] = n.p_reach;
      if (n.winner_time_s > 0) j["relative_to_winner"] = n.predicted_s / n.winner_time_s;
    }
    sens.push_back(j);
  }
  return {{"winner", side(e.winner)},
          {"runner_up", e.has_runner_up ? side(e.runner_up) : nlohmann::json()},
          {"why", e.why},
          {"sensitivity", sens}};
}

std::vector<std::string> explain_lines(const Explanation& e) {
  std::vector<std::string> lines;
  if (!e.available) return lines;
  auto side = [](const char* who, const ExplainSide& s) {
    return fmt::format(
        "  {:<10} {:<30} {:>22}: {} steps at {} ms/step (compute {}, comm {}, wait {} ms), {:.4g} "
        "bytes/step",
        who, s.config, score_text(s.reached, s.time_s), s.steps, ms(s.step_s), ms(s.compute_s), ms(s.comm_s),
        ms(s.wait_s), s.bytes_per_step);
  };
  lines.push_back(e.has_runner_up ? "why the winner wins (its breakdown against the runner-up's):"
                                  : "the winner's breakdown:");
  lines.push_back(side("winner", e.winner));
  if (e.has_runner_up) lines.push_back(side("runner-up", e.runner_up));
  lines.push_back("  " + e.why);
  if (e.sensitivity.empty()) return lines;
  lines.push_back(
      "sensitivity around the winner (its neighbour along each knob: evaluated = raced, median over the seeds against "
      "the winner's median, else the session's trial at the largest budget it ran, base seed, against the winner's "
      "base-seed trial; GP = predicted, against the winner's base-seed trial):");
  for (const ExplainNeighbour& n : e.sensitivity) {
    std::string what;
    if (n.evaluated)
      what = fmt::format("{}{} ({} at {:.4g} s)", score_text(n.reached, n.time_s),
                         n.reached && n.winner_time_s > 0 ? fmt::format(", {:.2f}x the winner's {:.4g} s",
                                                                        n.time_s / n.winner_time_s, n.winner_time_s)
                                                          : "",
                         n.basis == "median" ? "median over the race seeds" : "evaluated, base seed", n.fidelity_s);
    else if (n.predicted)
      what = fmt::format("{:.4g} s, {:.2f}x the winner's base-seed {:.4g} s (GP prediction, P(reach) {:.2f})",
                         n.predicted_s, n.winner_time_s > 0 ? n.predicted_s / n.winner_time_s : 0.0, n.winner_time_s,
                         n.p_reach);
    else
      what = "not evaluated, no GP (fewer than 2 trials reached the target)";
    lines.push_back(fmt::format("  {:<8} {:<10} {:<30} {}", n.knob, n.value, n.config, what));
  }
  return lines;
}

}  // namespace dsgd
