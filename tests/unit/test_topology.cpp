// Topologies (cluster/topology.hpp): every kind's W is symmetric, non-negative, doubly
// stochastic and supported on the graph; spectral gaps match closed forms (ring, torus,
// complete, random-perm's E[W]); hier's link classes; random-perm's per-step matchings are
// deterministic and average to E[W]; bad specs throw InputError naming the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "cluster/topology.hpp"
#include "core/errors.hpp"

using namespace dsgd;

namespace {

double at(const Topology& t, int i, int j) {
  return t.weight(i, j);
}

// The invariants every topology (static or one step of random-perm) must satisfy.
void expect_valid_mixing(const Topology& t) {
  SCOPED_TRACE(t.spec + " with " + std::to_string(t.workers) + " workers");
  const int n = t.workers;
  ASSERT_EQ(t.self_weight.size(), static_cast<size_t>(n));
  ASSERT_EQ(t.neighbor_weights.size(), static_cast<size_t>(n));
  ASSERT_EQ(t.neighbors.size(), static_cast<size_t>(n));
  ASSERT_EQ(t.group_of.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double row = 0, col = 0;
    for (int j = 0; j < n; ++j) {
      row += at(t, i, j);
      col += at(t, j, i);
      EXPECT_GE(at(t, i, j), 0.0) << i << "," << j;
      EXPECT_EQ(at(t, i, j), at(t, j, i)) << i << "," << j;
    }
    EXPECT_NEAR(row, 1.0, 1e-12) << "row " << i;
    EXPECT_NEAR(col, 1.0, 1e-12) << "column " << i;

    const std::vector<int>& nb = t.neighbors[i];
    EXPECT_TRUE(std::is_sorted(nb.begin(), nb.end())) << "rank " << i;
    EXPECT_EQ(std::set<int>(nb.begin(), nb.end()).size(), nb.size()) << "duplicate neighbour of " << i;
    const std::set<int> nbset(nb.begin(), nb.end());
    EXPECT_EQ(nbset.count(i), 0u) << "rank " << i << " is its own neighbour";
    for (int j : nb) {
      ASSERT_TRUE(j >= 0 && j < n);
      const auto& back = t.neighbors[j];
      EXPECT_TRUE(std::binary_search(back.begin(), back.end(), i)) << i << " -> " << j << " not symmetric";
    }
    // W_ij > 0 exactly on the neighbours (and possibly self).
    for (int j = 0; j < n; ++j) {
      if (j != i) {
        EXPECT_EQ(at(t, i, j) > 0, nbset.count(j) == 1) << i << "," << j;
      }
    }
  }
  EXPECT_GE(t.spectral_gap, 0.0);
  EXPECT_LE(t.spectral_gap, 1.0 + 1e-12);
}

std::string input_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return std::string(e.what()) + " | hint: " + e.hint();
  }
  return "";
}

constexpr double kPi = std::numbers::pi;

}  // namespace

TEST(Topology, EveryKindGivesAValidMixingMatrix) {
  struct Case {
    std::string spec;
    int workers;
  };
  std::vector<Case> cases;
  for (const char* kind : {"complete", "ring", "exp", "random-perm"})
    for (int n : {1, 2, 3, 4, 8, 9}) cases.push_back({kind, n});
  for (const char* dims :
       {"1x1", "1x2", "2x1", "1x3", "3x1", "2x2", "1x4", "4x1", "2x4", "4x2", "1x8", "3x3", "1x9", "9x1"}) {
    const std::string d = dims;
    const int n = (d[0] - '0') * (d[2] - '0');
    cases.push_back({"torus:" + d, n});
    cases.push_back({"hier:" + d, n});
  }
  for (const auto& c : cases) {
    const Topology t = topology_make(c.spec, c.workers);
    EXPECT_EQ(t.spec, c.spec);
    EXPECT_EQ(t.workers, c.workers);
    expect_valid_mixing(t);
  }
}

TEST(Topology, NeighboursOfSmallGraphs) {
  EXPECT_EQ(topology_make("ring", 1).neighbors[0], std::vector<int>{});
  EXPECT_EQ(topology_make("ring", 2).neighbors[0], std::vector<int>{1});
  EXPECT_DOUBLE_EQ(at(topology_make("ring", 2), 0, 1), 0.5);
  EXPECT_EQ(topology_make("ring", 8).neighbors[0], (std::vector<int>{1, 7}));
  EXPECT_EQ(at(topology_make("ring", 8), 3, 3), 1.0 / 3);
  // torus:2x4: the two vertical neighbours coincide, so degree 3 and weights 1/4.
  const Topology t24 = topology_make("torus:2x4", 8);
  EXPECT_EQ(t24.neighbors[0], (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(at(t24, 0, 0), 0.25);
  EXPECT_EQ(at(t24, 0, 4), 0.25);
  EXPECT_EQ(at(topology_make("torus:3x3", 9), 4, 4), 0.2);
  // exp with 8: hops 1, 2, 4 both ways.
  const Topology e8 = topology_make("exp", 8);
  EXPECT_EQ(e8.neighbors[0], (std::vector<int>{1, 2, 4, 6, 7}));
  EXPECT_EQ(at(e8, 0, 0), 1.0 / 6);
  EXPECT_EQ(topology_make("exp", 9).neighbors[0], (std::vector<int>{1, 2, 4, 5, 7, 8}));
}

TEST(Topology, RingGapMatchesClosedForm) {
  for (int n : {5, 8, 16}) {
    double lambda2 = 0;
    for (int k = 1; k < n; ++k) lambda2 = std::max(lambda2, std::abs((1 + 2 * std::cos(2 * kPi * k / n)) / 3));
    EXPECT_NEAR(topology_make("ring", n).spectral_gap, 1 - lambda2, 1e-10) << n;
  }
}

TEST(Topology, TorusGapMatchesClosedForm) {
  for (auto [rows, cols] : {std::pair{3, 3}, std::pair{4, 4}, std::pair{3, 5}}) {
    double lambda2 = 0;
    for (int a = 0; a < rows; ++a)
      for (int b = 0; b < cols; ++b)
        if (a != 0 || b != 0)
          lambda2 = std::max(lambda2,
                             std::abs((1 + 2 * std::cos(2 * kPi * a / rows) + 2 * std::cos(2 * kPi * b / cols)) / 5));
    const std::string spec = "torus:" + std::to_string(rows) + "x" + std::to_string(cols);
    EXPECT_NEAR(topology_make(spec, rows * cols).spectral_gap, 1 - lambda2, 1e-10) << spec;
  }
}

TEST(Topology, CompleteIsUniformWithGapOne) {
  for (int n : {1, 2, 3, 4, 8, 9}) {
    const Topology t = topology_make("complete", n);
    EXPECT_NEAR(t.spectral_gap, 1.0, 1e-12) << n;
    for (double w : topology_dense_mixing(t)) EXPECT_EQ(w, 1.0 / n);
  }
}

TEST(Topology, HierWithOneGroupEqualsComplete) {
  for (int n : {1, 2, 3, 4, 8, 9}) {
    const Topology h = topology_make("hier:1x" + std::to_string(n), n);
    const Topology c = topology_make("complete", n);
    EXPECT_EQ(h.kind, "hier");
    EXPECT_EQ(h.groups, 1);
    EXPECT_EQ(topology_dense_mixing(h), topology_dense_mixing(c)) << n;
    EXPECT_EQ(h.neighbors, c.neighbors) << n;
    EXPECT_EQ(h.group_of, c.group_of) << n;
    EXPECT_NEAR(h.spectral_gap, c.spectral_gap, 1e-12) << n;  // a dense solve against the closed form
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        EXPECT_EQ(h.link(i, j), i == j ? LinkClass::link_self : LinkClass::link_intra);
        EXPECT_EQ(h.link(i, j), c.link(i, j));
      }
  }
}

TEST(Topology, HierLinkClassesAndLeaderRing) {
  const Topology t = topology_make("hier:2x2", 4);
  EXPECT_EQ(t.groups, 2);
  EXPECT_EQ(t.group_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(t.link(0, 0), LinkClass::link_self);
  EXPECT_EQ(t.link(0, 1), LinkClass::link_intra);
  EXPECT_EQ(t.link(2, 3), LinkClass::link_intra);
  EXPECT_EQ(t.link(0, 2), LinkClass::link_inter);
  EXPECT_EQ(t.link(1, 3), LinkClass::link_inter);  // by group, though 1 and 3 are not neighbours
  EXPECT_EQ(t.neighbors[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(t.neighbors[1], (std::vector<int>{0}));
  EXPECT_EQ(at(t, 1, 1), 1 - 1.0 / 3);  // Metropolis-Hastings: d_0 = 2, d_1 = 1
  // Three groups: leaders 0, 3, 6 on a ring.
  const Topology h = topology_make("hier:3x3", 9);
  EXPECT_EQ(h.neighbors[0], (std::vector<int>{1, 2, 3, 6}));
  EXPECT_EQ(h.neighbors[4], (std::vector<int>{3, 5}));
  EXPECT_GT(h.spectral_gap, 0.0);
  EXPECT_THROW(t.link(0, 4), Error);
  EXPECT_THROW(t.link(-1, 0), Error);
}

TEST(Topology, RandomPermExpectationHasClosedFormGap) {
  for (int n : {2, 4, 8}) EXPECT_NEAR(topology_make("random-perm", n).spectral_gap, n / (2.0 * (n - 1)), 1e-12) << n;
  for (int n : {3, 9}) EXPECT_NEAR(topology_make("random-perm", n).spectral_gap, 0.5, 1e-12) << n;
  EXPECT_TRUE(topology_make("random-perm", 4).time_varying);
  EXPECT_FALSE(topology_make("ring", 4).time_varying);
}

TEST(Topology, RandomPermStepsAreDeterministicMatchings) {
  for (int n : {1, 2, 3, 4, 8, 9}) {
    const Topology base = topology_make("random-perm", n);
    std::set<std::vector<double>> distinct;
    for (int64_t step = 0; step < 12; ++step) {
      const Topology s = topology_at_step(base, step, 42);
      expect_valid_mixing(s);
      int idle = 0;
      for (int i = 0; i < n; ++i) {
        int nonzero = 0;
        for (int j = 0; j < n; ++j) nonzero += at(s, i, j) != 0;
        EXPECT_LE(nonzero, 2);
        EXPECT_LE(s.neighbors[i].size(), 1u);
        idle += at(s, i, i) == 1.0;
      }
      EXPECT_EQ(idle, n % 2) << n;
      EXPECT_EQ(topology_dense_mixing(s),
                topology_dense_mixing(topology_at_step(base, step, 42)));  // same (seed, step), same W
      distinct.insert(topology_dense_mixing(s));
    }
    if (n >= 4) {
      EXPECT_GT(distinct.size(), 1u) << n;
    }
  }
  const Topology base = topology_make("random-perm", 8);
  EXPECT_NE(topology_dense_mixing(topology_at_step(base, 0, 42)), topology_dense_mixing(topology_at_step(base, 1, 42)));
  EXPECT_NE(topology_dense_mixing(topology_at_step(base, 3, 42)), topology_dense_mixing(topology_at_step(base, 3, 43)));
  EXPECT_NEAR(topology_at_step(base, 3, 42).spectral_gap, 0.0, 1e-12);  // one matching never mixes 8 ranks
  // Static kinds ignore the step.
  const Topology ring = topology_make("ring", 8);
  EXPECT_EQ(topology_dense_mixing(topology_at_step(ring, 7, 1)), topology_dense_mixing(ring));
}

TEST(Topology, RandomPermMatchingsAverageToExpectation) {
  for (int n : {4, 5}) {
    const Topology base = topology_make("random-perm", n);
    std::vector<int> partner, scratch;
    std::vector<double> sum(static_cast<size_t>(n) * n, 0.0);
    const int steps = 20000;
    for (int64_t step = 0; step < steps; ++step) {
      topology_partner_at_step(n, step, 7, partner, scratch);
      for (int i = 0; i < n; ++i) {
        sum[static_cast<size_t>(i) * n + i] += partner[i] == i ? 1.0 : 0.5;
        if (partner[i] != i) sum[static_cast<size_t>(i) * n + partner[i]] += 0.5;
      }
    }
    const std::vector<double> expected = topology_dense_mixing(base);
    for (size_t k = 0; k < sum.size(); ++k) EXPECT_NEAR(sum[k] / steps, expected[k], 0.01) << n << " entry " << k;
    // The allocation-free helper agrees with topology_at_step.
    topology_partner_at_step(n, 11, 3, partner, scratch);
    const Topology s = topology_at_step(base, 11, 3);
    for (int i = 0; i < n; ++i) EXPECT_EQ(at(s, i, partner[i]), partner[i] == i ? 1.0 : 0.5);
  }
}

TEST(Topology, BadSpecsThrowInputErrorNamingTheSpec) {
  struct Bad {
    std::string spec;
    int workers;
    std::string expect;  // substring of message + hint
  };
  const std::vector<Bad> bad = {
      {"torus:3x3", 4, "torus:3x3 has 9 nodes but --workers is 4"},
      {"hier:2x3", 4, "hier:2x3 has 6 nodes"},
      {"mesh", 4, "unknown topology 'mesh'"},
      {"mesh", 4, "torus:RxC"},  // the hint lists the known kinds
      {"torus:3", 3, "torus:3"},
      {"torus:3x", 3, "malformed"},
      {"torus:x3", 3, "malformed"},
      {"torus:0x4", 4, "torus:0x4"},
      {"torus:-2x-2", 4, "torus:-2x-2"},
      {"torus:2x2x1", 4, "torus:2x2x1"},
      {"torus: 2x2", 4, "malformed"},
      {"torus:99999999x1", 4, "malformed"},
      {"torus", 4, "needs dimensions"},
      {"hier", 4, "hier:GxW"},
      {"ring:4", 4, "ring:4"},
      {"ring", 0, "'ring' asked for 0 workers"},
      {"complete", -3, "complete"},
      {"complete", topology_max_workers + 1, "--workers between 1 and"},
      {"", 4, "unknown topology ''"},
  };
  for (const auto& b : bad) {
    const std::string msg = input_error_of([&] { topology_make(b.spec, b.workers); });
    EXPECT_NE(msg.find(b.expect), std::string::npos) << "spec '" << b.spec << "' gave: " << msg;
  }
}

TEST(Topology, ListNamesEveryKind) {
  std::vector<std::string> names;
  for (const auto& k : topology_list()) {
    names.push_back(k.name);
    EXPECT_FALSE(k.usage.empty());
    EXPECT_FALSE(k.description.empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"complete", "ring", "torus", "exp", "hier", "random-perm"}));
}

// The closed forms of the spectral gap (circulant graphs and their products) against the dense
// eigen solve of the same W, at sizes where both run: every kind but hier has one.
TEST(Topology, ClosedFormGapsMatchTheDenseSolve) {
  std::vector<std::string> specs = {"complete", "ring", "exp", "random-perm"};
  for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 257}) {
    for (const std::string& spec : specs) {
      const Topology t = topology_make(spec, n);
      EXPECT_NEAR(t.spectral_gap, topology_spectral_gap(topology_dense_mixing(t), n), 1e-10) << spec << " " << n;
    }
    for (int rows = 1; rows <= n; ++rows) {
      if (n % rows != 0 || n > 64) continue;
      const std::string spec = "torus:" + std::to_string(rows) + "x" + std::to_string(n / rows);
      const Topology t = topology_make(spec, n);
      EXPECT_NEAR(t.spectral_gap, topology_spectral_gap(topology_dense_mixing(t), n), 1e-10) << spec;
    }
  }
}

// At scale: W is sparse (O(edges)) and the gaps are closed forms, so a ring, an exponential
// graph and a torus of 100,000 workers build; the kinds that list every pair, and hier's dense
// solve, refuse past topology_dense_max with the reason; groups alone build at any size.
TEST(Topology, LargeSparseTopologiesBuildAndDenseOnesRefuse) {
  const int n = topology_max_workers;
  const Topology ring = topology_make("ring", n);
  EXPECT_NEAR(ring.spectral_gap, 1 - (1 + 2 * std::cos(2 * M_PI / n)) / 3, 1e-12);
  EXPECT_EQ(ring.neighbors[0], (std::vector<int>{1, n - 1}));
  EXPECT_EQ(ring.weight(0, 1), 1.0 / 3);
  EXPECT_EQ(ring.weight(0, 2), 0.0);
  const Topology e = topology_make("exp", n);
  EXPECT_GT(e.spectral_gap, 0.0);
  EXPECT_LT(e.spectral_gap, 1.0);
  EXPECT_GT(topology_make("torus:250x400", n).spectral_gap, 0.0);
  for (const char* spec : {"complete", "random-perm"}) {
    try {
      topology_make(spec, topology_dense_max + 1);
      FAIL() << spec;
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find("every pair"), std::string::npos) << err.what();
    }
  }
  try {
    topology_make("hier:2x2049", 4098);
    FAIL() << "hier past the dense limit";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("no closed form"), std::string::npos) << err.what();
  }
  const Topology groups = topology_groups("hier:100x1000", n);
  EXPECT_EQ(groups.groups, 100);
  EXPECT_EQ(groups.group_of[999], 0);
  EXPECT_EQ(groups.group_of[1000], 1);
  EXPECT_TRUE(groups.neighbors.empty());
  EXPECT_EQ(topology_groups("complete", n).groups, 1);
  EXPECT_THROW(topology_groups("torus:3x3", 10), InputError);
  EXPECT_THROW(topology_groups("ring", n + 1), InputError);
}

TEST(Topology, SpectralGapOfDisconnectedGraphIsZero) {
  // Two separate pairs: 1 is a double eigenvalue.
  const std::vector<double> w = {0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5};
  EXPECT_NEAR(topology_spectral_gap(w, 4), 0.0, 1e-12);
  EXPECT_THROW(topology_spectral_gap(w, 3), Error);
}
