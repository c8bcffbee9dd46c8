// Worker topologies for gossip (decentralised) SGD: which ranks talk to which, the mixing
// matrix W with which a rank averages its neighbours' models (x_i ← Σ_j W_ij x_j), its
// spectral gap, and the link class (self / intra-group / inter-group) each message uses.
//
// Every kind is one row of the table in topology.cpp (topology_list()). Every W built here
// is symmetric, non-negative and doubly stochastic, and W_ij > 0 only for neighbours or i = j.
// Sizes: W is kept sparse (each rank's neighbour weights, O(edges)); the gap has a closed form
// for complete, ring, torus, exp and random-perm (circulant graphs and products of them:
// their eigenvalues are known), and takes a dense O(n³) eigen solve only for hier, up to
// topology_dense_max workers. complete and random-perm list every pair, so they stop at
// topology_dense_max workers too. A run that does not gossip needs only the groups
// (topology_groups), at any size. Build a topology once at setup, never in the timed loop
// (topology_partner_at_step is the allocation-free per-step helper).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsgd {

enum class LinkClass : int { link_self = 0, link_intra = 1, link_inter = 2 };

// The kinds, with n = workers, d_i = |neighbours of i| and Metropolis-Hastings (MH) weights
//   W_ij = 1 / (1 + max(d_i, d_j))  for j a neighbour of i,   W_ii = 1 − Σ_{j≠i} W_ij,
// which are symmetric and doubly stochastic whatever the degrees. On a d-regular graph they
// are W_ij = W_ii = 1/(1+d) exactly (the diagonal is computed so that this holds to the bit).
//
//   complete      every rank with every other: W = 11ᵀ/n, gap 1.
//   ring          rank i with i±1 mod n: W_ij = 1/3 (incl. self) for n ≥ 3; n = 2: W_ij = 1/2;
//                 n = 1: W = [1]. Eigenvalues (1 + 2cos(2πk/n))/3, gap = 1 − max_{k≠0} |that|.
//   torus:RxC     R·C = n, rank r·C + c on an R×C 2-D torus with 4 neighbours (r±1, c±1),
//                 duplicates merged when R or C ≤ 2; MH weights (1/5 when R, C ≥ 3, eigenvalues
//                 (1 + 2cos(2πa/R) + 2cos(2πb/C))/5).
//   exp           exponential graph: i with i ± 2^k mod n for k = 0..⌊log2(n−1)⌋; MH weights
//                 (the graph is circulant, so W_ij = 1/(1+d) with d the common degree).
//   hier:GxW      G·W = n, G groups of W consecutive ranks (group g = ranks g·W .. g·W+W−1);
//                 complete graph inside a group, and the groups' leaders (rank g·W) on a ring
//                 of G (G = 2: one leader link; G = 1: no inter links, W equals complete's).
//                 MH weights. group_of / link() mark intra- and inter-group pairs.
//   random-perm   time-varying: at each step a uniformly random perfect matching of the ranks
//                 (n odd: one uniformly chosen rank idles with W_ii = 1), W_ij = W_ii = 1/2 for
//                 a matched pair. The base object holds the expectation E[W]:
//                 n even: E[W]_ij = 1/(2(n−1)), E[W]_ii = 1/2, gap n/(2(n−1));
//                 n odd:  E[W]_ij = 1/(2n),     E[W]_ii = (n+1)/(2n), gap 1/2;
//                 its neighbours are all other ranks (the support of E[W]).
struct Topology {
  std::string spec;  // as given, e.g. "torus:2x4"
  std::string kind;  // complete | ring | torus | exp | hier | random-perm
  int workers = 0;
  int groups = 1;                           // hier: G; otherwise 1
  std::vector<int> group_of;                // rank -> group index
  std::vector<std::vector<int>> neighbors;  // excluding self, ascending
  // W, sparse: W_ij for j = neighbors[i][k] is neighbor_weights[i][k]; W_ii is self_weight[i];
  // every other entry is 0. Doubly stochastic and symmetric.
  std::vector<std::vector<double>> neighbor_weights;
  std::vector<double> self_weight;
  double spectral_gap = 0;    // 1 − |λ2| (second largest eigenvalue modulus of W)
  bool time_varying = false;  // random-perm

  // Class of the link a message from rank i to rank j travels on: self if i == j, intra if
  // both are in the same group, inter otherwise. It classifies by group only, whether or not
  // i and j are neighbours (a collective may route any pair). Throws Error for a bad rank.
  LinkClass link(int i, int j) const;
  // W_ij (0 when j is neither i nor a neighbour of i).
  double weight(int i, int j) const;
};

struct TopologyInfo {
  std::string name, usage, description;
};

// The most workers topology_make and topology_groups accept.
inline constexpr int topology_max_workers = 100000;
// The most workers of the kinds that list every pair (complete, random-perm) and of a dense
// eigen solve (hier's gap).
inline constexpr int topology_dense_max = 4096;

// Builds the topology named by spec for the given number of workers. Throws InputError
// naming the spec for an unknown kind (the message lists the known ones), malformed
// torus/hier dimensions, dimensions whose product is not workers, or workers outside
// [1, topology_max_workers], and complete, random-perm or hier past topology_dense_max (saying
// why). seed: no kind is drawn at random once at build time, so the result does not depend on
// it; random-perm draws a matching per step in topology_at_step.
Topology topology_make(const std::string& spec, int workers, uint64_t seed = 0);

// The spec checked as topology_make checks it, but only spec, kind, workers, groups and
// group_of filled (no neighbours, weights or gap): what a run that does not gossip needs (the
// link classes of hier), at any size up to topology_max_workers.
Topology topology_groups(const std::string& spec, int workers);

// At most how many neighbours a rank of spec's graph has at `workers` (n − 1 for the kinds that
// list every pair and for hier; 2⌈log2 n⌉ + 2 bounds ring, torus and exp), without building it:
// for memory estimates. Throws as topology_groups for a bad spec.
int topology_degree_bound(const std::string& spec, int workers);

// W as a dense row-major workers×workers matrix (for printing and tests; O(n²)).
std::vector<double> topology_dense_mixing(const Topology& t);

// random-perm: the step's matching, drawn from (seed, step) deterministically (the same on
// every rank and platform), with its mixing matrix, neighbours (the partner, or none when
// idle) and gap (0 for n > 2: one matching alone never mixes the whole cluster; 1 for n = 2,
// where the matching is the whole cluster). Other kinds return base unchanged.
// Allocates a full Topology; per-step code should use topology_partner_at_step.
Topology topology_at_step(const Topology& base, int64_t step, uint64_t seed);

// random-perm's matching at a step without allocating once partner and scratch have been
// sized: partner[i] = the rank i averages with (W_i,partner = 1/2), or i itself when it idles.
// Both vectors are resized to workers (no reallocation when they already have that size).
void topology_partner_at_step(int workers, int64_t step, uint64_t seed, std::vector<int>& partner,
                              std::vector<int>& scratch);

// The kinds in table order, for `dsgd-bench list` and error messages.
std::vector<TopologyInfo> topology_list();

// 1 − |λ2| of a symmetric n×n row-major matrix (λ sorted by modulus, λ1 = 1 for a doubly
// stochastic W), by Eigen's SelfAdjointEigenSolver (reads the lower triangle). n = 1: 1.
// 0 means the graph is disconnected (1 is a repeated eigenvalue) or W never mixes.
double topology_spectral_gap(const std::vector<double>& mixing, int n);

// 1 − max_{k≠0} |λ_k| of a circulant mixing matrix on Z_{m_1} × ... × Z_{m_r} (a Cartesian
// product of cycles): W = (I + Σ_{s∈S} P_s) / (1 + |S|) with the offset set S the union over
// dimensions d of offsets[d] (distinct, nonzero, symmetric mod m_d) along that dimension, so
// λ_k = (1 + Σ_d Σ_{s∈offsets[d]} cos(2π k_d s / m_d)) / (1 + |S|). O(n · |S|).
double topology_circulant_gap(const std::vector<int>& sizes, const std::vector<std::vector<int>>& offsets);

}  // namespace dsgd
