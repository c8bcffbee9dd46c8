// Worker topologies: spec parsing, one graph builder per kind (listed in kTopologyKinds),
// Metropolis-Hastings mixing weights, random-perm's per-step matchings and the spectral gap.
// Formulas are in topology.hpp. W is sparse; the gap has a closed form per kind except hier's
// (a dense eigen solve, setup only).
#include "cluster/topology.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <numeric>
#include <string_view>

#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {

namespace {

// Stream id of random-perm's matchings (the second argument of rng_derive_seed).
constexpr uint64_t kStreamPermMatching = 0x7065726dULL;  // "perm"

// Parsed dimensions of torus:RxC / hier:GxW (a = R or G, b = C or W).
struct Dims {
  int a = 0, b = 0;
};

using BuildFn = void (*)(Topology& t, Dims dims);
using GapFn = double (*)(int workers, Dims dims);

struct TopologyKind {
  const char* name;
  const char* usage;
  const char* description;
  bool takes_dims;
  BuildFn build;            // fills neighbors (both directions, any order) and, for hier, groups/group_of
  GapFn gap;                // the spectral gap in closed form; null: a dense eigen solve of W
  bool every_pair = false;  // lists all n(n − 1) pairs (complete, random-perm)
};

// A cycle's offsets along one dimension of size m: ±1 mod m, distinct and nonzero.
std::vector<int> cycle_offsets(int m) {
  if (m == 1) return {};
  if (m == 2) return {1};
  return {1, m - 1};
}

double gap_complete(int, Dims) {
  return 1.0;
}  // W = 11ᵀ/n: eigenvalues 1 and 0

double gap_ring(int n, Dims) {
  return topology_circulant_gap({n}, {cycle_offsets(n)});
}

double gap_torus(int, Dims dims) {
  return topology_circulant_gap({dims.a, dims.b}, {cycle_offsets(dims.a), cycle_offsets(dims.b)});
}

double gap_exp(int n, Dims) {
  std::vector<int> offsets;
  for (int64_t hop = 1; hop <= n - 1; hop *= 2)
    for (int64_t s : {hop % n, (n - hop % n) % n})
      if (s != 0 && std::find(offsets.begin(), offsets.end(), int(s)) == offsets.end()) offsets.push_back(int(s));
  return topology_circulant_gap({n}, {offsets});
}

// E[W] has d on the diagonal and o elsewhere: eigenvalues 1 and d − o (topology.hpp).
double gap_random_perm(int n, Dims) {
  if (n == 1) return 1.0;
  return n % 2 == 0 ? n / (2.0 * (n - 1)) : 0.5;
}

void add_edge(Topology& t, int i, int j) {
  if (i == j) return;
  t.neighbors[i].push_back(j);
  t.neighbors[j].push_back(i);
}

void build_complete(Topology& t, Dims) {
  for (int i = 0; i < t.workers; ++i)
    for (int j = i + 1; j < t.workers; ++j) add_edge(t, i, j);
}

void build_ring(Topology& t, Dims) {
  const int n = t.workers;
  for (int i = 0; i < n; ++i) add_edge(t, i, (i + 1) % n);
}

void build_torus(Topology& t, Dims dims) {
  const int rows = dims.a, cols = dims.b;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int i = r * cols + c;
      add_edge(t, i, ((r + 1) % rows) * cols + c);  // down (wraps)
      add_edge(t, i, r * cols + (c + 1) % cols);    // right (wraps)
    }
}

void build_exp(Topology& t, Dims) {
  const int n = t.workers;
  for (int i = 0; i < n; ++i)
    for (int64_t hop = 1; hop <= n - 1; hop *= 2) add_edge(t, i, static_cast<int>((i + hop) % n));
}

void build_hier(Topology& t, Dims dims) {
  const int group_count = dims.a, group_size = dims.b;
  t.groups = group_count;
  for (int i = 0; i < t.workers; ++i) t.group_of[i] = i / group_size;
  for (int g = 0; g < group_count; ++g) {
    const int first = g * group_size;
    for (int i = first; i < first + group_size; ++i)
      for (int j = i + 1; j < first + group_size; ++j) add_edge(t, i, j);
    if (group_count > 1) add_edge(t, first, ((g + 1) % group_count) * group_size);  // leader ring
  }
}

// random-perm's static graph is the support of E[W]: every pair can be matched.
void build_random_perm(Topology& t, Dims dims) {
  build_complete(t, dims);
  t.time_varying = true;
}

constexpr TopologyKind kTopologyKinds[] = {
    {"complete", "complete", "every worker with every other; W = 11ᵀ/n, spectral gap 1", false, build_complete,
     gap_complete, true},
    {"ring", "ring", "each worker with its two ring neighbours; weights 1/3", false, build_ring, gap_ring},
    {"torus", "torus:RxC", "R×C 2-D torus (R·C = workers), 4 neighbours; weights 1/5", true, build_torus, gap_torus},
    {"exp", "exp", "exponential graph: i with i ± 2^k mod n; Metropolis-Hastings weights", false, build_exp, gap_exp},
    {"hier", "hier:GxW",
     "G groups of W consecutive workers: complete inside, ring of group leaders between; "
     "Metropolis-Hastings weights",
     true, build_hier, nullptr},
    {"random-perm", "random-perm", "a fresh random perfect matching each step; weights 1/2", false, build_random_perm,
     gap_random_perm, true},
};

std::string known_usages() {
  std::string out;
  for (const auto& k : kTopologyKinds) out += (out.empty() ? "" : ", ") + std::string(k.usage);
  return out;
}

// One dimension of "AxB": 1 to 7 decimal digits, at least 1.
bool parse_dim(std::string_view text, int& value) {
  if (text.empty() || text.size() > 7) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 1;
}

Dims parse_dims(const std::string& spec, const TopologyKind& kind, std::string_view arg, int workers) {
  const std::string hint = fmt::format("write {} with positive integers whose product is --workers ({}), e.g. {}:{}x{}",
                                       kind.usage, workers, kind.name, workers >= 4 && workers % 2 == 0 ? 2 : 1,
                                       workers >= 4 && workers % 2 == 0 ? workers / 2 : workers);
  const size_t x = arg.find('x');
  Dims dims;
  if (x == std::string_view::npos || !parse_dim(arg.substr(0, x), dims.a) || !parse_dim(arg.substr(x + 1), dims.b))
    DSGD_THROW(InputError, hint, "topology '{}' has malformed dimensions '{}'", spec, arg);
  const int64_t nodes = int64_t{dims.a} * dims.b;
  if (nodes != workers) DSGD_THROW(InputError, hint, "{} has {} nodes but --workers is {}", spec, nodes, workers);
  return dims;
}

// Metropolis-Hastings weights (topology.hpp). The diagonal is written as
// 1/(1+d_i) + Σ_j (1/(1+d_i) − W_ij), equal to 1 − Σ_j W_ij, so that every term is ≥ 0 and a
// d-regular graph gets W_ii = 1/(1+d) exactly (complete: exactly 1/n everywhere).
void mixing_metropolis_hastings(Topology& t) {
  const auto& nb = t.neighbors;
  const size_t n = nb.size();
  t.neighbor_weights.assign(n, {});
  t.self_weight.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const size_t d_i = nb[i].size();
    const double own = 1.0 / (1.0 + static_cast<double>(d_i));
    double excess = 0;
    for (int j : nb[i]) {
      const double w_ij = 1.0 / (1.0 + static_cast<double>(std::max(d_i, nb[static_cast<size_t>(j)].size())));
      t.neighbor_weights[i].push_back(w_ij);
      excess += own - w_ij;
    }
    t.self_weight[i] = own + excess;
  }
}

// E[W] of random-perm (topology.hpp): 1/2 on the diagonal plus the idle chance for odd n.
void mixing_random_perm_expected(Topology& t) {
  const int n = t.workers;
  const bool even = n % 2 == 0;
  const double off = even ? 1.0 / (2.0 * (n - 1)) : 1.0 / (2.0 * n);
  const double diag = n == 1 ? 1.0 : even ? 0.5 : (n + 1.0) / (2.0 * n);
  t.self_weight.assign(static_cast<size_t>(n), diag);
  t.neighbor_weights.assign(static_cast<size_t>(n), {});
  for (size_t i = 0; i < t.neighbors.size(); ++i) t.neighbor_weights[i].assign(t.neighbors[i].size(), off);
}

// The kind of spec and its dimensions, checked (InputError naming what is wrong).
const TopologyKind& kind_parse(const std::string& spec, int workers, Dims& dims) {
  if (workers < 1 || workers > topology_max_workers)
    DSGD_THROW(InputError, fmt::format("use --workers between 1 and {}", topology_max_workers),
               "topology '{}' asked for {} workers", spec, workers);
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const TopologyKind* kind = nullptr;
  for (const auto& k : kTopologyKinds)
    if (name == k.name) kind = &k;
  if (kind == nullptr) DSGD_THROW(InputError, "known topologies: " + known_usages(), "unknown topology '{}'", spec);
  if (kind->takes_dims) {
    if (colon == std::string::npos)
      DSGD_THROW(InputError, fmt::format("write {} (dimensions whose product is --workers)", kind->usage),
                 "topology '{}' needs dimensions", spec);
    dims = parse_dims(spec, *kind, std::string_view(spec).substr(colon + 1), workers);
  } else if (colon != std::string::npos) {
    DSGD_THROW(InputError, fmt::format("write just '{}'", kind->usage), "topology '{}' takes no parameters", spec);
  }
  return *kind;
}

}  // namespace

LinkClass Topology::link(int i, int j) const {
  if (i < 0 || j < 0 || i >= workers || j >= workers)
    DSGD_THROW(Error, "ranks run from 0 to workers − 1", "topology {}: link({}, {}) outside {} workers", spec, i, j,
               workers);
  if (i == j) return LinkClass::link_self;
  return group_of[i] == group_of[j] ? LinkClass::link_intra : LinkClass::link_inter;
}

double Topology::weight(int i, int j) const {
  if (i < 0 || j < 0 || i >= workers || j >= workers || self_weight.size() != static_cast<size_t>(workers))
    DSGD_THROW(Error, "ranks run from 0 to workers − 1 (of a topology with weights)",
               "topology {}: weight({}, {}) outside {} workers", spec, i, j, workers);
  const size_t ri = static_cast<size_t>(i);
  if (i == j) return self_weight[ri];
  const auto& nb = neighbors[ri];
  const auto it = std::lower_bound(nb.begin(), nb.end(), j);
  return it != nb.end() && *it == j ? neighbor_weights[ri][static_cast<size_t>(it - nb.begin())] : 0.0;
}

Topology topology_groups(const std::string& spec, int workers) {
  Dims dims;
  const TopologyKind& kind = kind_parse(spec, workers, dims);
  Topology t;
  t.spec = spec;
  t.kind = kind.name;
  t.workers = workers;
  t.group_of.assign(static_cast<size_t>(workers), 0);
  if (t.kind == "hier") {
    t.groups = dims.a;
    for (int i = 0; i < workers; ++i) t.group_of[static_cast<size_t>(i)] = i / dims.b;
  }
  t.time_varying = kind.build == build_random_perm;
  return t;
}

Topology topology_make(const std::string& spec, int workers, uint64_t /*seed: see topology.hpp*/) {
  Dims dims;
  const TopologyKind& kind = kind_parse(spec, workers, dims);
  if ((kind.every_pair || !kind.gap) && workers > topology_dense_max)
    DSGD_THROW(InputError,
               fmt::format("use ring, exp or torus:RxC for a gossip topology past {} workers", topology_dense_max),
               "topology '{}' at {} workers: {} (up to {} workers)", spec, workers,
               kind.every_pair ? "it lists every pair of workers, n(n − 1) neighbours"
                               : "its spectral gap has no closed form, and the dense eigen solve grows as n³",
               topology_dense_max);
  Topology t;
  t.spec = spec;
  t.kind = kind.name;
  t.workers = workers;
  t.group_of.assign(workers, 0);
  t.neighbors.assign(workers, {});
  kind.build(t, dims);
  for (auto& nb : t.neighbors) {
    std::sort(nb.begin(), nb.end());
    nb.erase(std::unique(nb.begin(), nb.end()), nb.end());
  }
  if (t.time_varying)
    mixing_random_perm_expected(t);
  else
    mixing_metropolis_hastings(t);
  t.spectral_gap = kind.gap ? kind.gap(workers, dims) : topology_spectral_gap(topology_dense_mixing(t), workers);
  return t;
}

int topology_degree_bound(const std::string& spec, int workers) {
  Dims dims;
  const TopologyKind& kind = kind_parse(spec, workers, dims);
  if (kind.every_pair || !kind.gap) return workers - 1;
  return std::min(workers - 1, 2 * static_cast<int>(std::ceil(std::log2(std::max(2, workers)))) + 2);
}

std::vector<double> topology_dense_mixing(const Topology& t) {
  const size_t n = static_cast<size_t>(t.workers);
  std::vector<double> w(n * n, 0.0);
  for (size_t i = 0; i < n && i < t.self_weight.size(); ++i) {
    w[i * n + i] = t.self_weight[i];
    for (size_t k = 0; k < t.neighbors[i].size(); ++k)
      w[i * n + static_cast<size_t>(t.neighbors[i][k])] = t.neighbor_weights[i][k];
  }
  return w;
}

void topology_partner_at_step(int workers, int64_t step, uint64_t seed, std::vector<int>& partner,
                              std::vector<int>& scratch) {
  const auto n = static_cast<size_t>(workers);
  scratch.resize(n);
  partner.resize(n);
  std::iota(scratch.begin(), scratch.end(), 0);
  Rng(rng_derive_seed(seed, kStreamPermMatching, static_cast<uint64_t>(step))).shuffle(scratch.data(), n);
  // Consecutive entries of the shuffled ranks are matched; with n odd the last one idles.
  for (size_t p = 0; p + 1 < n; p += 2) {
    partner[scratch[p]] = scratch[p + 1];
    partner[scratch[p + 1]] = scratch[p];
  }
  if (n % 2 == 1) partner[scratch[n - 1]] = scratch[n - 1];
}

Topology topology_at_step(const Topology& base, int64_t step, uint64_t seed) {
  if (!base.time_varying) return base;
  const int n = base.workers;
  std::vector<int> partner, scratch;
  topology_partner_at_step(n, step, seed, partner, scratch);
  Topology t = base;
  bool everyone_matched = true;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    const int j = partner[i];
    t.neighbors[i].clear();
    t.neighbor_weights[i].clear();
    if (j == static_cast<int>(i)) {
      t.self_weight[i] = 1.0;
      everyone_matched = false;
    } else {
      t.neighbors[i].push_back(j);
      t.neighbor_weights[i].push_back(0.5);
      t.self_weight[i] = 0.5;
    }
  }
  // One matching is a block-diagonal W of 2×2 averaging blocks (eigenvalues 1 and 0 each) and
  // idle 1×1 blocks: λ2 = 1 unless the single block of n = 2 is the whole cluster.
  t.spectral_gap = n == 1 || (n == 2 && everyone_matched) ? 1.0 : 0.0;
  return t;
}

std::vector<TopologyInfo> topology_list() {
  std::vector<TopologyInfo> out;
  for (const auto& k : kTopologyKinds) out.push_back({k.name, k.usage, k.description});
  return out;
}

double topology_circulant_gap(const std::vector<int>& sizes, const std::vector<std::vector<int>>& offsets) {
  if (sizes.size() != offsets.size() || sizes.empty())
    DSGD_THROW(Error, "pass one offset list per dimension", "topology_circulant_gap: {} sizes, {} offset lists",
               sizes.size(), offsets.size());
  size_t degree = 0, n = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    degree += offsets[d].size();
    n *= static_cast<size_t>(sizes[d]);
  }
  // Each dimension's eigenvalue contributions, cos(2π k s / m) summed over its offsets.
  std::vector<std::vector<double>> part(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int m = sizes[d];
    part[d].assign(static_cast<size_t>(m), 0.0);
    for (int k = 0; k < m; ++k)
      for (int s : offsets[d]) part[d][static_cast<size_t>(k)] += std::cos(2 * M_PI * double(k) * s / m);
  }
  double largest = 0;  // max |λ_k| over k ≠ 0
  std::vector<size_t> k(sizes.size(), 0);
  for (size_t index = 1; index < n; ++index) {
    for (size_t d = sizes.size(); d-- > 0;) {  // the next multi-index, last dimension fastest
      if (++k[d] < static_cast<size_t>(sizes[d])) break;
      k[d] = 0;
    }
    double sum = 1;
    for (size_t d = 0; d < sizes.size(); ++d) sum += part[d][k[d]];
    largest = std::max(largest, std::fabs(sum / double(1 + degree)));
  }
  return std::max(0.0, 1.0 - largest);
}

double topology_spectral_gap(const std::vector<double>& mixing, int n) {
  if (n < 1 || mixing.size() != static_cast<size_t>(n) * n)
    DSGD_THROW(Error, "pass a row-major n×n matrix", "topology_spectral_gap: {} entries for n = {}", mixing.size(), n);
  if (n == 1) return 1.0;
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> w(mixing.data(), n, n);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(w, Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success)
    DSGD_THROW(Error, "", "topology_spectral_gap: the eigen solver did not converge (n = {})", n);
  std::vector<double> modulus(n);
  for (int k = 0; k < n; ++k) modulus[k] = std::abs(solver.eigenvalues()[k]);
  std::partial_sort(modulus.begin(), modulus.begin() + 2, modulus.end(), std::greater<>());
  return std::max(0.0, 1.0 - modulus[1]);
}

}  // namespace dsgd
