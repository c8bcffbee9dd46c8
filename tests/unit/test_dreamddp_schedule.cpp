// DreamDDP's schedule search (algorithms/dreamddp_schedule.hpp) against its defining
// properties: every layer in exactly one slot of the period (many random cases), extra
// syncs never duplicate a slot's own layers and never raise its predicted exposed time,
// the search's result equals the optimum found by brute force over all H^L assignments
// (L <= 7, H <= 3), the cost model on hand-computed cases, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "algorithms/dreamddp_schedule.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"

using namespace dsgd;

namespace {

struct Case {
  std::vector<double> bwd, comm;
};

// Random per-layer times: compute in [0, 1) ms, communication spanning cheaper and dearer
// than compute (scale), some layers free to send (as a tiny bias may be).
Case random_case(Rng& rng, size_t layers, double comm_scale) {
  Case c;
  for (size_t l = 0; l < layers; ++l) {
    c.bwd.push_back(1e-3 * rng.uniform());
    c.comm.push_back(rng.below(8) == 0 ? 0.0 : comm_scale * 1e-3 * rng.uniform());
  }
  return c;
}

double total_exposed(const Case& c, const std::vector<std::vector<size_t>>& slots) {
  double s = 0;
  for (const auto& slot : slots) s += dreamddp_slot_exposed(c.bwd, c.comm, slot);
  return s;
}

// Minimum over all H^L assignments of Σ_h exposed_h.
double brute_force(const Case& c, size_t period) {
  const size_t nl = c.bwd.size();
  size_t combos = 1;
  for (size_t l = 0; l < nl; ++l) combos *= period;
  double best = INFINITY;
  for (size_t code = 0; code < combos; ++code) {
    std::vector<std::vector<size_t>> slots(period);
    size_t x = code;
    for (size_t l = 0; l < nl; ++l) {
      slots[x % period].push_back(l);
      x /= period;
    }
    best = std::min(best, total_exposed(c, slots));
  }
  return best;
}

}  // namespace

TEST(DreamDdpSchedule, SlotCostModelByHand) {
  // Layers 0..2, backward runs 2 → 1 → 0: ready = {6, 5, 3} ms, backward ends at 6 ms.
  const std::vector<double> bwd = {1e-3, 2e-3, 3e-3};
  const std::vector<double> comm = {2e-3, 1e-3, 4e-3};
  // Layer 2 alone: starts at 3, ends at 7: 1 ms exposed.
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {2}), 1e-3, 1e-12);
  // Layer 1 alone: 5 → 6: hidden.
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {1}), 0.0, 1e-12);
  // Layers 2, 1: 3 → 7, then 7 → 8: 2 ms exposed.
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {1, 2}), 2e-3, 1e-12);
  // All: 3 → 7 → 8 → 10: 4 ms exposed (layer 0 is ready at 6 but the link is busy).
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {0, 1, 2}), 4e-3, 1e-12);
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {}), 0.0, 0.0);
}

TEST(DreamDdpSchedule, EveryLayerInExactlyOneSlotManyRandomCases) {
  Rng rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t layers = 1 + rng.below(30);
    const int64_t period = 1 + static_cast<int64_t>(rng.below(8));
    const double scale = trial % 3 == 0 ? 0.1 : (trial % 3 == 1 ? 1.0 : 10.0);
    const Case c = random_case(rng, layers, scale);
    const DreamDdpSchedule s = dreamddp_schedule_search(c.bwd, c.comm, period, 20000);
    ASSERT_EQ(s.slots.size(), static_cast<size_t>(period));
    ASSERT_EQ(s.extra.size(), static_cast<size_t>(period));
    std::vector<int> seen(layers, 0);
    for (int64_t h = 0; h < period; ++h) {
      for (size_t l : s.slots[h]) {
        ASSERT_LT(l, layers);
        seen[l] += 1;
      }
      // Extra syncs: distinct, not the slot's own layers, and free in the model.
      std::vector<size_t> extra = s.extra[h];
      std::sort(extra.begin(), extra.end());
      EXPECT_EQ(std::adjacent_find(extra.begin(), extra.end()), extra.end());
      for (size_t l : s.extra[h])
        EXPECT_EQ(std::count(s.slots[h].begin(), s.slots[h].end(), l), 0) << "layer " << l << " slot " << h;
      std::vector<size_t> all = s.slots[h];
      all.insert(all.end(), s.extra[h].begin(), s.extra[h].end());
      EXPECT_LE(dreamddp_slot_exposed(c.bwd, c.comm, all), dreamddp_slot_exposed(c.bwd, c.comm, s.slots[h]) + 1e-15);
      EXPECT_NEAR(s.exposed_s[h], dreamddp_slot_exposed(c.bwd, c.comm, all), 1e-15);
    }
    for (size_t l = 0; l < layers; ++l) ASSERT_EQ(seen[l], 1) << "layer " << l << " of " << layers << ", H " << period;
    EXPECT_NEAR(s.exposed_primary_s, total_exposed(c, s.slots), 1e-15);
  }
}

TEST(DreamDdpSchedule, SearchFindsTheBruteForceOptimum) {
  Rng rng(11);
  int nontrivial = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t layers = 1 + rng.below(7);
    const size_t period = 1 + rng.below(3);
    const double scale = trial % 2 == 0 ? 1.0 : 3.0;
    const Case c = random_case(rng, layers, scale);
    const DreamDdpSchedule s = dreamddp_schedule_search(c.bwd, c.comm, static_cast<int64_t>(period));
    ASSERT_TRUE(s.optimal);
    const double best = brute_force(c, period);
    EXPECT_NEAR(s.exposed_primary_s, best, 1e-12 + 1e-9 * best)
        << "layers " << layers << " H " << period << " trial " << trial;
    if (best > 0) ++nontrivial;
  }
  EXPECT_GT(nontrivial, 100);  // the cases exercise the search, not just zero-cost schedules
}

TEST(DreamDdpSchedule, PeriodOneAveragesEveryLayerEveryStep) {
  const std::vector<double> bwd = {1e-3, 2e-3, 3e-3, 1e-3};
  const std::vector<double> comm = {2e-3, 1e-3, 4e-3, 0.0};
  const DreamDdpSchedule s = dreamddp_schedule_search(bwd, comm, 1);
  ASSERT_EQ(s.slots.size(), 1u);
  EXPECT_EQ(s.slots[0], (std::vector<size_t>{3, 2, 1, 0}));  // backward order
  EXPECT_TRUE(s.extra[0].empty());
}

TEST(DreamDdpSchedule, SpreadsLayersWhenOneSlotCannotHideThem) {
  // ready = {6, 5, 4} ms, backward ends at 6 ms. Layers 2 (4 → 6) and 1 (5 → 6) are each
  // hidden alone but not together (4 → 6 → 7); layer 0 is ready at the end (0.5 ms exposed
  // wherever it goes). Optimum: 2 and 1 in different slots, 0.5 ms in all.
  const std::vector<double> bwd = {1e-3, 1e-3, 4e-3};
  const std::vector<double> comm = {0.5e-3, 1e-3, 2e-3};
  const DreamDdpSchedule s = dreamddp_schedule_search(bwd, comm, 2);
  EXPECT_NEAR(s.exposed_primary_s, 0.5e-3, 1e-12);
  auto slot_of = [&](size_t l) { return std::count(s.slots[0].begin(), s.slots[0].end(), l) ? 0 : 1; };
  EXPECT_NE(slot_of(2), slot_of(1));
  EXPECT_NEAR(dreamddp_slot_exposed(bwd, comm, {0, 1, 2}), 1.5e-3, 1e-12);  // what H = 1 would cost
}

TEST(DreamDdpSchedule, RealTiesGiveTheSameScheduleWhateverTheRounding) {
  // The SVM on a slow link: weights (layer 0) and bias (layer 1) with microseconds of
  // backward and milliseconds of all-reduce. Together in one slot or apart costs the same in
  // real numbers (c_b + c_w − bwd_w); float rounding of the measured times used to pick
  // either. Now every perturbation gives the greedy schedule: apart, bias first.
  Rng rng(7);
  for (int i = 0; i < 300; ++i) {
    const double bwd_w = 1e-4 * (1 + rng.uniform()), bwd_b = 1e-7 * (1 + rng.uniform());
    const double c_w = 2.6e-2 * (1 + rng.uniform()), c_b = 1e-3 * (1 + rng.uniform());
    const DreamDdpSchedule s = dreamddp_schedule_search({bwd_w, bwd_b}, {c_w, c_b}, 2);
    ASSERT_EQ(s.slots[0], (std::vector<size_t>{1})) << "case " << i;
    ASSERT_EQ(s.slots[1], (std::vector<size_t>{0})) << "case " << i;
  }
}

TEST(DreamDdpSchedule, WithoutFillingTheSlotsAreTheSameAndNothingExtra) {
  // Layer 1 is ready at 5 ms (0.5 ms all-reduce, hidden), layer 0 at 6 ms (2 ms, exposed):
  // whichever slot does not hold layer 1 has idle link time before 6 ms, where the filling
  // adds layer 1 again; the pure schedule (fill = false) averages each layer once per period.
  const std::vector<double> bwd = {1e-3, 5e-3}, comm = {2e-3, 0.5e-3};
  const DreamDdpSchedule filled = dreamddp_schedule_search(bwd, comm, 2);
  const DreamDdpSchedule pure = dreamddp_schedule_search(bwd, comm, 2, 2000000, false);
  size_t extras = 0;
  for (const auto& e : filled.extra) extras += e.size();
  EXPECT_EQ(extras, 1u);
  EXPECT_EQ(pure.slots, filled.slots);
  EXPECT_EQ(pure.exposed_primary_s, filled.exposed_primary_s);
  double comm_pure = 0, comm_filled = 0;
  for (size_t h = 0; h < 2; ++h) {
    EXPECT_TRUE(pure.extra[h].empty());
    EXPECT_NEAR(pure.exposed_s[h], dreamddp_slot_exposed(bwd, comm, pure.slots[h]), 1e-15);
    comm_pure += pure.comm_s[h];
    comm_filled += filled.comm_s[h];
  }
  EXPECT_NEAR(comm_pure, 2.5e-3, 1e-15);  // each layer's all-reduce once per period
  EXPECT_NEAR(comm_filled, 3.0e-3, 1e-15);
}

TEST(DreamDdpSchedule, FreeNetworkStillSpreadsLayersOverThePeriod) {
  const std::vector<double> bwd(8, 1e-3), comm(8, 0.0);
  const DreamDdpSchedule s = dreamddp_schedule_search(bwd, comm, 4);
  for (const auto& slot : s.slots) EXPECT_EQ(slot.size(), 2u);
  for (const auto& extra : s.extra) EXPECT_TRUE(extra.empty());
}

TEST(DreamDdpSchedule, OneLayerLeavesTheOtherSlotsLocal) {
  const DreamDdpSchedule s = dreamddp_schedule_search({1e-3}, {5e-3}, 4);
  size_t used = 0;
  for (const auto& slot : s.slots) used += slot.empty() ? 0 : 1;
  EXPECT_EQ(used, 1u);
  for (const auto& extra : s.extra) EXPECT_TRUE(extra.empty());  // never free: ready only at the end
}

TEST(DreamDdpSchedule, NodeBudgetReturnsAValidSchedule) {
  Rng rng(3);
  const Case c = random_case(rng, 40, 2.0);
  const DreamDdpSchedule s = dreamddp_schedule_search(c.bwd, c.comm, 6, 50);
  EXPECT_FALSE(s.optimal);
  size_t n = 0;
  for (const auto& slot : s.slots) n += slot.size();
  EXPECT_EQ(n, 40u);
}

TEST(DreamDdpSchedule, BadInput) {
  EXPECT_THROW(dreamddp_schedule_search({1.0}, {1.0}, 0), InputError);
  EXPECT_THROW(dreamddp_schedule_search({}, {}, 2), InputError);
  EXPECT_THROW(dreamddp_schedule_search({1.0, 2.0}, {1.0}, 2), InputError);
  EXPECT_THROW(dreamddp_schedule_search({-1.0}, {1.0}, 2), InputError);
  EXPECT_THROW(dreamddp_schedule_search({1.0}, {NAN}, 2), InputError);
}
