// `dsgd-bench topology NAME --workers N [--seed S] [--format table|json]`: shows a worker
// topology (cluster/topology.hpp): neighbours per rank, the mixing matrix W, its spectral gap,
// hier's link classes and random-perm's first matchings. Limits: the table prints W, the
// neighbour lists and the link classes only up to 16 workers (a summary above that);
// --format json always carries everything.
#include "cluster/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.hpp"

namespace dsgd {

namespace {

struct TopologyOptions {
  std::string name;
  int workers = 0;
  uint64_t seed = 0;
  std::string format = "table";
};

// Above this many workers the table shows summaries instead of n×n grids.
constexpr int kTopologyFullTableMax = 16;
// random-perm: how many steps' matchings the table shows.
constexpr int kTopologyShownSteps = 4;

// Up to this many workers the JSON also has W as dense rows ("mixing").
constexpr int kTopologyDenseJsonMax = 256;

// Keys in a fixed, readable order (spec first); W sparse (each rank's neighbour weights, in
// the order of its neighbours, and its own weight), and dense up to kTopologyDenseJsonMax.
nlohmann::ordered_json topology_to_json(const Topology& t) {
  nlohmann::ordered_json out = {{"spec", t.spec},
                                {"kind", t.kind},
                                {"workers", t.workers},
                                {"groups", t.groups},
                                {"group_of", t.group_of},
                                {"neighbors", t.neighbors},
                                {"neighbor_weights", t.neighbor_weights},
                                {"self_weight", t.self_weight}};
  if (t.workers <= kTopologyDenseJsonMax) {
    nlohmann::ordered_json mixing = nlohmann::ordered_json::array();
    for (int i = 0; i < t.workers; ++i) {
      nlohmann::ordered_json row = nlohmann::ordered_json::array();
      for (int j = 0; j < t.workers; ++j) row.push_back(t.weight(i, j));
      mixing.push_back(row);
    }
    out["mixing"] = mixing;
  }
  out["spectral_gap"] = t.spectral_gap;
  out["time_varying"] = t.time_varying;
  return out;
}

void print_neighbours(const Topology& t) {
  size_t min_degree = t.neighbors[0].size(), max_degree = 0;
  for (const auto& nb : t.neighbors) {
    min_degree = std::min(min_degree, nb.size());
    max_degree = std::max(max_degree, nb.size());
  }
  fmt::print("degree: min {}, max {}\n", min_degree, max_degree);
  if (t.workers > kTopologyFullTableMax) return;
  fmt::print("neighbours (rank: the ranks it averages with):\n");
  for (int i = 0; i < t.workers; ++i) fmt::print("  {:>3}: {}\n", i, fmt::join(t.neighbors[i], " "));
}

void print_mixing(const Topology& t) {
  const int n = t.workers;
  if (n > kTopologyFullTableMax) {
    // From the sparse W: O(edges · log degree).
    double row_error = 0, column_error = 0, min_weight = 1;
    bool symmetric = true;
    std::vector<double> column(static_cast<size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {
      const size_t ri = static_cast<size_t>(i);
      double row = t.self_weight[ri];
      column[ri] += t.self_weight[ri];
      if (t.self_weight[ri] > 0) min_weight = std::min(min_weight, t.self_weight[ri]);
      for (size_t k = 0; k < t.neighbors[ri].size(); ++k) {
        const int j = t.neighbors[ri][k];
        const double w = t.neighbor_weights[ri][k];
        row += w;
        column[static_cast<size_t>(j)] += w;
        symmetric = symmetric && w == t.weight(j, i);
        if (w > 0) min_weight = std::min(min_weight, w);
      }
      row_error = std::max(row_error, std::abs(row - 1));
    }
    for (double c : column) column_error = std::max(column_error, std::abs(c - 1));
    fmt::print("mixing matrix W ({0}×{0}, not shown above {1} workers; see --format json):\n", n,
               kTopologyFullTableMax);
    fmt::print("  max |row sum − 1| {:.1e}, max |column sum − 1| {:.1e}, {}, smallest non-zero weight {:.4f}\n",
               row_error, column_error, symmetric ? "symmetric" : "NOT symmetric", min_weight);
    return;
  }
  fmt::print("mixing matrix W (row i: the weight rank i gives each rank's model; . = 0):\n     ");
  for (int j = 0; j < n; ++j) fmt::print(" {:>6}", j);
  fmt::print("\n");
  for (int i = 0; i < n; ++i) {
    fmt::print("  {:>3}", i);
    for (int j = 0; j < n; ++j) {
      const double w = t.weight(i, j);
      if (w == 0)
        fmt::print(" {:>6}", ".");
      else
        fmt::print(" {:>6.4f}", w);
    }
    fmt::print("\n");
  }
}

void print_link_classes(const Topology& t) {
  if (t.workers > kTopologyFullTableMax) {
    fmt::print("link classes: {} groups of {} ranks (rank r is in group r / {}); matrix not shown above {} workers\n",
               t.groups, t.workers / t.groups, t.workers / t.groups, kTopologyFullTableMax);
    return;
  }
  fmt::print("link classes (- self, i intra-group, e inter-group):\n     ");
  for (int j = 0; j < t.workers; ++j) fmt::print(" {:>2}", j);
  fmt::print("\n");
  for (int i = 0; i < t.workers; ++i) {
    fmt::print("  {:>3}", i);
    for (int j = 0; j < t.workers; ++j) {
      const LinkClass c = t.link(i, j);
      fmt::print(" {:>2}", c == LinkClass::link_self ? "-" : c == LinkClass::link_intra ? "i" : "e");
    }
    fmt::print("\n");
  }
}

void print_matchings(const Topology& t, uint64_t seed) {
  if (t.workers > kTopologyFullTableMax) return;
  fmt::print("matchings (seed {}; a-b average with weight 1/2):\n", seed);
  std::vector<int> partner, scratch;
  for (int step = 0; step < kTopologyShownSteps; ++step) {
    topology_partner_at_step(t.workers, step, seed, partner, scratch);
    std::string pairs, idle;
    for (int i = 0; i < t.workers; ++i) {
      if (partner[i] == i)
        idle = fmt::format("  (idle: {})", i);
      else if (i < partner[i])
        pairs += fmt::format(" {}-{}", i, partner[i]);
    }
    fmt::print("  step {}:{}{}\n", step, pairs, idle);
  }
}

void run_topology(const TopologyOptions& opts) {
  const Topology t = topology_make(opts.name, opts.workers, opts.seed);
  if (opts.format == "json") {
    fmt::print("{}\n", topology_to_json(t).dump(2));
    return;
  }
  fmt::print("topology {}: kind {}, {} worker{}, {} group{}{}\n", t.spec, t.kind, t.workers, t.workers == 1 ? "" : "s",
             t.groups, t.groups == 1 ? "" : "s",
             t.time_varying ? ", time-varying (W below is the expectation E[W])" : "");
  // ||Wx − x̄|| ≤ |λ2|·||x − x̄||; for random matchings (W² = W) E||Wx − x̄||² ≤ λ2(E[W])·||x − x̄||².
  fmt::print(
      "spectral gap {:.6f} (1 − |λ2| of W: each gossip step shrinks the {} to consensus by a factor "
      "of at most {:.4f})\n",
      t.spectral_gap, t.time_varying ? "expected squared distance" : "distance", 1 - t.spectral_gap);
  print_neighbours(t);
  print_mixing(t);
  if (t.kind == "hier") print_link_classes(t);
  if (t.time_varying) print_matchings(t, opts.seed);
}

}  // namespace

void setup_topology(CLI::App& app) {
  auto opts = std::make_shared<TopologyOptions>();
  CLI::App* sub =
      app.add_subcommand("topology", "Show a worker topology: neighbours, mixing matrix, spectral gap, link classes");
  std::string kinds;
  for (const auto& k : topology_list()) kinds += (kinds.empty() ? "" : " | ") + k.usage;
  sub->add_option("name", opts->name, kinds)->required();
  sub->add_option("--workers", opts->workers, "number of workers")->required();
  sub->add_option("--seed", opts->seed, "seed of random-perm's per-step matchings")->capture_default_str();
  sub->add_option("--format", opts->format, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  sub->callback([opts]() { run_topology(*opts); });
}

}  // namespace dsgd
