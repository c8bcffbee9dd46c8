// How well `dsgd-bench history` finds change points (results/change_points.hpp), measured on
// seeded synthetic series whose change points are known: precision, recall and F1 with a
// ±5-point margin, false change points per 1,000 stationary points, and the detection delay
// (points after a change before the detector, run on the history so far, reports it).
//
// The series imitate a benchmark's per-commit medians: a level of 1 with noise of a given
// coefficient of variation (CV), of several shapes (Gaussian, log-normal, heavy-tailed
// Student t with 3 degrees of freedom, bimodal, AR(1) autocorrelated, Gaussian with 2 % spikes),
// and steps of k sigma (sigma = CV, the noise's standard deviation); the detector sees their
// logarithms, as `history` does. Everything is drawn from fixed seeds, so the table is the same
// on every run and machine. Exit status 1 when a target below is missed (the ctest smoke run
// checks them on a smaller sample): at most 1 false point per 1,000 stationary points; recall
// >= 0.95 and precision >= 0.90 for single steps of >= 3 sigma; F1 >= 0.85 on series with several
// changes; median detection delay <= 6 points. 1- and 2-sigma steps and slow drift are reported without
// a target.
//
//   bench_change_points [--reps N] [--format table|json]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "results/change_points.hpp"

namespace {

using dsgd::ChangePoint;
using dsgd::ChangePointOptions;

constexpr size_t kMargin = 5;  // a detected point within ±5 of a true one is a hit

enum class Noise { gaussian, lognormal, heavy_tailed, bimodal, autocorrelated, spikes };

const char* noise_name(Noise n) {
  switch (n) {
    case Noise::gaussian: return "gaussian";
    case Noise::lognormal: return "lognormal";
    case Noise::heavy_tailed: return "student-t3";
    case Noise::bimodal: return "bimodal";
    case Noise::autocorrelated: return "ar1-0.5";
    case Noise::spikes: return "spikes-2%";
  }
  return "?";
}

// n draws of zero-mean noise with standard deviation cv (before spikes) of the given shape.
std::vector<double> noise_draw(Noise shape, size_t n, double cv, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::student_t_distribution<double> t3(3.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> e(n);
  double prev = 0;
  for (size_t i = 0; i < n; ++i) {
    switch (shape) {
      case Noise::gaussian: e[i] = cv * normal(rng); break;
      case Noise::lognormal: {  // exp(N(0, s)) − its mean, with standard deviation ≈ cv
        const double s = std::sqrt(std::log1p(cv * cv));
        e[i] = std::exp(s * normal(rng) - s * s / 2) - 1;
        break;
      }
      case Noise::heavy_tailed: e[i] = cv * t3(rng) / std::sqrt(3.0); break;  // Var(t3) = 3
      case Noise::bimodal: e[i] = cv * ((unit(rng) < 0.5 ? -0.8 : 0.8) + 0.6 * normal(rng)); break;
      case Noise::autocorrelated:  // AR(1), phi = 0.5, stationary variance cv²
        prev = 0.5 * prev + cv * std::sqrt(0.75) * normal(rng);
        e[i] = prev;
        break;
      case Noise::spikes: e[i] = cv * normal(rng) + (unit(rng) < 0.02 ? 0.5 : 0.0); break;
    }
  }
  return e;
}

// A series of per-commit values: level 1 times (1 + the level's shifts) plus noise; changes at
// the given indices by the given multiples of cv (the first value after each change is shifted).
std::vector<double> series_make(Noise shape, size_t n, double cv, const std::vector<size_t>& at,
                                const std::vector<double>& sigmas, std::mt19937_64& rng) {
  const std::vector<double> e = noise_draw(shape, n, cv, rng);
  std::vector<double> log_values(n);
  double level = 1;
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    while (next < at.size() && at[next] == i) level *= 1 + sigmas[next++] * cv;
    log_values[i] = std::log(std::max(1e-6, level * (1 + e[i])));
  }
  return log_values;
}

ChangePointOptions detector_options() {
  ChangePointOptions o;  // the defaults `dsgd-bench history` uses
  o.log_values = true;
  return o;
}

std::vector<size_t> detect(const std::vector<double>& log_values) {
  std::vector<size_t> out;
  for (const ChangePoint& p : dsgd::change_points_detect(log_values, detector_options())) out.push_back(p.index);
  return out;
}

struct Counts {
  size_t true_points = 0, detected = 0, hits = 0, stationary_points = 0, false_in_stationary = 0;
  std::vector<double> delays;
  double precision() const { return detected ? double(hits) / double(detected) : 1.0; }
  double recall() const { return true_points ? double(hits) / double(true_points) : 1.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
  double false_per_1000() const {
    return stationary_points ? 1000.0 * double(false_in_stationary) / double(stationary_points) : 0.0;
  }
};

// Matches detected to true points (each true point at most once, nearest first within the margin).
void score(const std::vector<size_t>& truth, const std::vector<size_t>& found, Counts& c) {
  c.true_points += truth.size();
  c.detected += found.size();
  std::vector<bool> used(found.size(), false);
  for (size_t t : truth) {
    size_t best = found.size();
    for (size_t k = 0; k < found.size(); ++k) {
      const size_t d = found[k] > t ? found[k] - t : t - found[k];
      if (!used[k] && d <= kMargin &&
          (best == found.size() || d < (found[best] > t ? found[best] - t : t - found[best])))
        best = k;
    }
    if (best < found.size()) {
      used[best] = true;
      ++c.hits;
    }
  }
}

// Points after the change at `at` until the detector, run on the history so far, reports a
// point within the margin of it (the history grows one commit at a time); -1 when it never does.
double detection_delay(const std::vector<double>& log_values, size_t at) {
  for (size_t end = at + 1; end <= log_values.size(); ++end) {
    const std::vector<double> prefix(log_values.begin(), log_values.begin() + static_cast<std::ptrdiff_t>(end));
    for (size_t p : detect(prefix))
      if ((p > at ? p - at : at - p) <= kMargin) return double(end - at);
  }
  return -1;
}

struct Row {
  std::string scenario, noise;
  double cv = 0;
  size_t length = 0, series = 0;
  Counts counts;
};

const std::vector<Noise> kShapes = {Noise::gaussian, Noise::lognormal,      Noise::heavy_tailed,
                                    Noise::bimodal,  Noise::autocorrelated, Noise::spikes};

// Stationary series: every detected point is false.
Row run_stationary(Noise shape, size_t length, double cv, size_t reps, uint64_t seed) {
  Row row{"stationary", noise_name(shape), cv, length, reps, {}};
  std::mt19937_64 rng(seed);
  for (size_t r = 0; r < reps; ++r) {
    const std::vector<size_t> found = detect(series_make(shape, length, cv, {}, {}, rng));
    row.counts.stationary_points += length;
    row.counts.false_in_stationary += found.size();
    row.counts.detected += found.size();
  }
  return row;
}

// One step of `sigmas` at a uniformly drawn index in [length/5, 4·length/5), random sign.
Row run_step(Noise shape, size_t length, double cv, double sigmas, size_t reps, bool delays, uint64_t seed) {
  Row row{fmt::format("step {:g} sigma", sigmas), noise_name(shape), cv, length, reps, {}};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> where(length / 5, 4 * length / 5 - 1);
  std::bernoulli_distribution up(0.5);
  for (size_t r = 0; r < reps; ++r) {
    const size_t at = where(rng);
    const double s = up(rng) ? sigmas : -sigmas;
    const std::vector<double> values = series_make(shape, length, cv, {at}, {s}, rng);
    score({at}, detect(values), row.counts);
    if (delays) {
      const double d = detection_delay(values, at);
      if (d >= 0) row.counts.delays.push_back(d);
    }
  }
  return row;
}

// Three changes of 3-5 sigma (random signs), at least 30 points apart, in a series of `length`.
Row run_multi(Noise shape, size_t length, double cv, size_t reps, size_t gap, const char* name, uint64_t seed) {
  Row row{name, noise_name(shape), cv, length, reps, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> size(3.0, 5.0);
  std::bernoulli_distribution up(0.5);
  for (size_t r = 0; r < reps; ++r) {
    std::vector<size_t> at;
    std::vector<double> s;
    std::uniform_int_distribution<size_t> first(20, length / 3);
    size_t next = first(rng);
    while (at.size() < 3 && next + 20 < length) {
      at.push_back(next);
      s.push_back(up(rng) ? size(rng) : -size(rng));
      next += gap + std::uniform_int_distribution<size_t>(0, gap / 2)(rng);
    }
    score(at, detect(series_make(shape, length, cv, at, s, rng)), row.counts);
  }
  return row;
}

// A slow drift of 3 sigma spread evenly over the series: no point is "true"; reported as the
// points found per series.
Row run_drift(size_t length, double cv, size_t reps, uint64_t seed) {
  Row row{"drift 3 sigma", "gaussian", cv, length, reps, {}};
  std::mt19937_64 rng(seed);
  for (size_t r = 0; r < reps; ++r) {
    std::vector<double> values = series_make(Noise::gaussian, length, cv, {}, {}, rng);
    for (size_t i = 0; i < length; ++i) values[i] += std::log1p(3 * cv * double(i) / double(length));
    row.counts.detected += detect(values).size();
  }
  return row;
}

struct Options {
  size_t reps = 100;
  bool json = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      o.reps = static_cast<size_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--format" && i + 1 < argc) {
      o.json = std::strcmp(argv[++i], "json") == 0;
    } else {
      fmt::print(stderr, "usage: bench_change_points [--reps N] [--format table|json]\n");
      std::exit(2);
    }
  }
  if (o.reps < 1) {
    fmt::print(stderr, "bench_change_points: --reps must be at least 1\n");
    std::exit(2);
  }
  return o;
}

void print_row(const Row& r, bool json) {
  const Counts& c = r.counts;
  const double delay = c.delays.empty() ? -1 : dsgd::stats_median(c.delays);
  if (json) {
    fmt::print(
        "{{\"scenario\":\"{}\",\"noise\":\"{}\",\"cv\":{},\"length\":{},\"series\":{},\"precision\":{:.4f},"
        "\"recall\":{:.4f},\"f1\":{:.4f},\"false_per_1000\":{:.3f},\"median_delay\":{}}}\n",
        r.scenario, r.noise, r.cv, r.length, r.series, c.precision(), c.recall(), c.f1(), c.false_per_1000(), delay);
    return;
  }
  const bool stationary = r.scenario == "stationary";
  const bool drift = r.scenario.rfind("drift", 0) == 0;
  fmt::print("{:<16} {:<11} {:>4.0f}% {:>6} {:>6}  ", r.scenario, r.noise, 100 * r.cv, r.length, r.series);
  if (stationary)
    fmt::print("{:>9} {:>7} {:>6} {:>10.2f} {:>7}\n", "", "", "", c.false_per_1000(), "");
  else if (drift)
    fmt::print("{:>9} {:>7} {:>6} {:>10} {:>7}   {:.2f} points per series\n", "", "", "", "", "",
               double(c.detected) / double(r.series));
  else
    fmt::print("{:>9.3f} {:>7.3f} {:>6.3f} {:>10} {:>7}\n", c.precision(), c.recall(), c.f1(), "",
               delay < 0 ? std::string() : fmt::format("{:g}", delay));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::vector<Row> rows;
  uint64_t seed = 1;
  Counts stationary, step3, multi;
  std::vector<double> delays;
  for (size_t length : {50, 200, 1000}) {
    const size_t reps = std::max<size_t>(1, o.reps * 200 / length);
    for (Noise shape : kShapes)
      for (double cv : {0.01, 0.05, 0.10}) {
        rows.push_back(run_stationary(shape, length, cv, reps, seed++));
        stationary.stationary_points += rows.back().counts.stationary_points;
        stationary.false_in_stationary += rows.back().counts.false_in_stationary;
      }
  }
  for (Noise shape : kShapes)
    for (double sigmas : {1.0, 2.0, 3.0, 4.0, 5.0}) {
      rows.push_back(run_step(shape, 200, 0.05, sigmas, o.reps, sigmas == 3.0, seed++));
      if (sigmas >= 3.0) {
        const Counts& c = rows.back().counts;
        step3.true_points += c.true_points;
        step3.detected += c.detected;
        step3.hits += c.hits;
        delays.insert(delays.end(), c.delays.begin(), c.delays.end());
      }
    }
  for (Noise shape : kShapes) {
    rows.push_back(run_multi(shape, 200, 0.05, o.reps, 40, "3 changes", seed++));
    multi.true_points += rows.back().counts.true_points;
    multi.detected += rows.back().counts.detected;
    multi.hits += rows.back().counts.hits;
  }
  rows.push_back(run_multi(Noise::gaussian, 200, 0.05, o.reps, 10, "changes 10 apart", seed++));
  rows.push_back(run_drift(200, 0.05, o.reps, seed++));

  if (!o.json) {
    const ChangePointOptions d = detector_options();
    fmt::print(
        "detector: E-Divisive means + Student t, window {}, max p {}, min magnitude {}, min segment {}; "
        "on log values; margin ±{} points\n\n",
        d.window, d.max_pvalue, d.min_magnitude, d.min_segment, kMargin);
    fmt::print("{:<16} {:<11} {:>5} {:>6} {:>6}  {:>9} {:>7} {:>6} {:>10} {:>7}\n", "scenario", "noise", "cv", "length",
               "series", "precision", "recall", "F1", "false/1000", "delay");
  }
  for (const Row& r : rows) print_row(r, o.json);

  const double delay = delays.empty() ? 1e9 : dsgd::stats_median(delays);
  struct Target {
    const char* what;
    double value, limit;
    bool at_most;
  };
  const Target targets[] = {
      {"false change points per 1,000 stationary points", stationary.false_per_1000(), 1.0, true},
      {"recall, single steps >= 3 sigma", step3.recall(), 0.95, false},
      {"precision, single steps >= 3 sigma", step3.precision(), 0.90, false},
      {"F1, series with 3 changes", multi.f1(), 0.85, false},
      {"median detection delay (points), 3-sigma steps", delay, 6.0, true},
  };
  int missed = 0;
  if (!o.json) fmt::print("\ntargets:\n");
  for (const Target& t : targets) {
    const bool ok = t.at_most ? t.value <= t.limit : t.value >= t.limit;
    missed += ok ? 0 : 1;
    if (!o.json)
      fmt::print("  {:<50} {:>8.3f}  ({} {})  {}\n", t.what, t.value, t.at_most ? "<=" : ">=", t.limit,
                 ok ? "met" : "MISSED");
  }
  return missed ? 1 : 0;
}
