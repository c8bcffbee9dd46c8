// What `dsgd-bench validate` tells its reader beside the errors (engine/validation.hpp,
// validation_notes): compute that moved between the profile and the measured run, the step
// predicted from the measured run's own compute, the runs' sampling noise, comm or wait whose
// large relative error is a small part of the step, the step outside every phase, and a fabric
// that moved since its calibration.
#include <gtest/gtest.h>

#include <functional>

#include "engine/validation.hpp"

namespace dsgd {
namespace {

// Rows of `ranks` ranks x `steps` steps, the first `warmup` untimed, timings set by `fill`.
std::vector<StepRow> step_rows(int ranks, int64_t steps, int64_t warmup, const std::function<void(StepRow&)>& fill) {
  std::vector<StepRow> rows;
  for (int rank = 0; rank < ranks; ++rank)
    for (int64_t step = 0; step < steps; ++step) {
      StepRow row;
      row.rank = rank;
      row.step = step;
      row.timed = step >= warmup;
      fill(row);
      rows.push_back(row);
    }
  return rows;
}

ValidationRecord record(double step_m, double step_p, double compute_m, double compute_p, double comm_m, double comm_p,
                        double wait_m, double wait_p) {
  ValidationRecord v;
  auto add = [&](const char* name, double m, double p) {
    v.metrics.push_back(ValidationMetric{name, m, p, validation_rel_error(m, p)});
  };
  add("step_time_s", step_m, step_p);
  add("compute_s", compute_m, compute_p);
  add("comm_s", comm_m, comm_p);
  add("wait_s", wait_m, wait_p);
  return v;
}

bool has(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(ValidationNotes, ComputeThatMovedBetweenTheRunsIsNamedWithBothFigures) {
  const auto notes = validation_notes(record(25.7e-3, 20.5e-3, 24.0e-3, 19.5e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes,
                  "compute is 19 % off: the measured ranks computed 24 ms per step, the prediction from their "
                  "profile run (the same compute side by side) 19.5 ms"))
      << notes.front();
  // Within 10 %: nothing to say.
  EXPECT_TRUE(validation_notes(record(25e-3, 24e-3, 24e-3, 22e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3)).empty());
}

TEST(ValidationNotes, AFabricThatMovedSinceItsCalibrationIsNamedWithBothTimes) {
  // The SVM's 31,400 B all-reduce on a host whose fabric switched state: 21.6 us right after the
  // measured run, 12.5 us in the calibration the prediction read.
  ValidationRecord v = record(25e-3, 24.5e-3, 24e-3, 24e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3);
  v.metrics.push_back(
      ValidationMetric{kValidationFabricAllreduce, 21.6e-6, 12.5e-6, validation_rel_error(21.6e-6, 12.5e-6)});
  const auto notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes,
                  "the host's fabric moved since the calibration the prediction read: an all-reduce of the model's "
                  "size took 21.6 us right after the measured run, 12.5 us in that calibration (42 % apart)"))
      << notes.front();
  // Within the comm target (20 %): nothing to say.
  v.metrics.back() =
      ValidationMetric{kValidationFabricAllreduce, 13.5e-6, 12.5e-6, validation_rel_error(13.5e-6, 12.5e-6)};
  EXPECT_TRUE(validation_notes(v).empty());
}

TEST(ValidationNotes, TheStepOutsideEveryPhaseIsNamedWhenItMovesTheStep) {
  // The SVM's dpsgd on one host's shared memory: 15.7 us of its 73.7 us step outside every
  // phase (the copy to send and the mix), 2.2 us predicted: 18 % of the step.
  ValidationRecord v = record(73.7e-6, 46.7e-6, 35.8e-6, 36.0e-6, 12.8e-6, 6.6e-6, 8.9e-6, 1.5e-6);
  v.metrics.push_back(
      ValidationMetric{kValidationOutsidePhases, 15.7e-6, 2.2e-6, validation_rel_error(15.7e-6, 2.2e-6)});
  EXPECT_TRUE(has(validation_notes(v),
                  "outside compute, communication and waiting (the variant's copies and mixes of the model, its "
                  "bookkeeping) the measured ranks spent 0.0157 ms per step, the prediction 0.0022 ms: 18 % of the "
                  "measured step"));
  // 1 us apart on a 73.7 us step (1.4 %): nothing to say about it.
  v.metrics.back() = ValidationMetric{kValidationOutsidePhases, 3.2e-6, 2.2e-6, validation_rel_error(3.2e-6, 2.2e-6)};
  EXPECT_FALSE(has(validation_notes(v), "outside compute"));
}

TEST(ValidationNotes, TheStepOutsideEveryPhaseIsTheRestOfTheStep) {
  Summary s;
  s.step_time_s = 10;
  s.compute_s = 5;
  s.data_s = 1;
  s.comm_s = 2;
  s.wait_s = 0.5;
  s.injected_s = 0.25;
  EXPECT_DOUBLE_EQ(validation_outside_phases_s(s), 1.25);
  s.comm_s = 4;  // the phases add up to more than the step (rounding): 0, not negative
  EXPECT_DOUBLE_EQ(validation_outside_phases_s(s), 0.0);
}

TEST(ValidationNotes, ASmallCommWithALargeErrorSaysHowLittleItMovesTheStep) {
  // comm 0.14 ms of a 25 ms step, predicted half: 50 % off, 0.28 % of the step.
  const auto notes = validation_notes(record(25e-3, 24.9e-3, 24e-3, 23.9e-3, 0.14e-3, 0.07e-3, 0.5e-3, 0.5e-3));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes, "comm is 0.56 % of the measured step: its 50 % error moves the step by 0.28 %"))
      << notes.front();
  // A small wait predicted 30x too long moves the step by more than 2 %: no reassurance.
  EXPECT_TRUE(validation_notes(record(16e-3, 22e-3, 15.5e-3, 15.5e-3, 0.5e-3, 0.5e-3, 0.06e-3, 2e-3)).empty());
  // A large comm share: its error is the step's, no note either.
  EXPECT_TRUE(validation_notes(record(10e-3, 9e-3, 5e-3, 5e-3, 5e-3, 3.5e-3, 0, 0)).empty());
}

TEST(ValidationNotes, ThePredictionFromTheMeasuredRunsOwnComputeIsGivenAfterTheComputeNote) {
  ValidationRecord v = record(25.7e-3, 20.5e-3, 24.0e-3, 19.5e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3);
  v.metrics.push_back(
      ValidationMetric{kValidationOwnComputeStep, 25.7e-3, 25.1e-3, validation_rel_error(25.7e-3, 25.1e-3)});
  const auto notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_TRUE(has({notes[0]}, "compute is 19 % off")) << notes[0];
  EXPECT_EQ(notes[1],
            "from the measured run's own compute (each worker its rank's, step by step: the host's speed between the "
            "runs and its ranks' different speeds taken out), the predicted step is 25.1 ms: 2.3 % off");
  // Given whenever it is stored, also when compute held.
  ValidationRecord steady = record(25e-3, 24e-3, 24e-3, 23e-3, 1e-3, 1e-3, 0.5e-3, 0.5e-3);
  steady.metrics.push_back(ValidationMetric{kValidationOwnComputeStep, 25e-3, 25e-3, 0.0});
  ASSERT_EQ(validation_notes(steady).size(), 1u);
  EXPECT_TRUE(has(validation_notes(steady), "is 25 ms: 0.0 % off"));
}

TEST(ValidationNotes, OneRankComputingSlowerForTheWholeRunIsNamed) {
  const std::vector<StepRow> steps = step_rows(3, 6, 2, [](StepRow& row) {  // 2 warm-up steps: they do not count
    row.fwd_s = row.step < 2 ? 1.0 : 0.004;
    row.bwd_s = row.rank == 2 ? 0.0092 : 0.008;
  });
  // Means: ranks 0, 1: 12 ms; rank 2: 13.2 ms.
  EXPECT_NEAR(validation_compute_rank_spread(steps), 13.2 / 12.0, 1e-12);
  // One rank, or ranks without compute rows (servers), give no spread.
  EXPECT_EQ(validation_compute_rank_spread({steps.begin(), steps.begin() + 6}), 0.0);

  ValidationRecord v = record(20e-3, 18e-3, 15e-3, 15e-3, 1e-3, 1e-3, 4e-3, 2e-3);
  v.metrics.push_back(ValidationMetric{kValidationRankSpread, 1.28, 1.02, validation_rel_error(1.28, 1.02)});
  const auto notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes,
                  "the measured ranks computed at different speeds: the slowest rank's compute per step was 28 % "
                  "above the fastest's for the run"))
      << notes.front();
  // Within the compute noise: nothing said.
  v.metrics.back() = ValidationMetric{kValidationRankSpread, 1.08, 1.0, validation_rel_error(1.08, 1.0)};
  EXPECT_TRUE(validation_notes(v).empty());
}

TEST(ValidationNotes, TheStepErrorIsReadAgainstBothRunsSamplingNoise) {
  ValidationRecord v = record(20e-3, 19e-3, 15e-3, 15e-3, 1e-3, 1e-3, 0.2e-3, 0.2e-3);                 // 5 % off
  v.metrics.push_back(ValidationMetric{kValidationStepStandardError, 0.4e-3, 0.38e-3, std::nullopt});  // ±2 % each
  auto notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "the step's 5.0 % error is within the two runs' own sampling noise: their mean steps are ±2.0 % (measured) "
            "and ±2.0 % (predicted), standard errors over their timed steps (batch means); runs with more steps "
            "would tell them apart");
  // Beyond the noise: said only for an error above the step target (10 %).
  v.metrics.back() = ValidationMetric{kValidationStepStandardError, 0.1e-3, 0.095e-3, std::nullopt};  // ±0.5 % each
  EXPECT_TRUE(validation_notes(v).empty());
  ValidationRecord far = record(20e-3, 17e-3, 15e-3, 15e-3, 1e-3, 1e-3, 0.2e-3, 0.2e-3);  // 15 % off
  far.metrics.push_back(ValidationMetric{kValidationStepStandardError, 0.1e-3, 0.085e-3, std::nullopt});
  notes = validation_notes(far);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes,
                  "mean steps are ±0.5 % (measured) and ±0.5 % (predicted), standard errors over their timed "
                  "steps (batch means): the step's 15.0 % error is beyond that noise"))
      << notes[0];
  // No standard error (too few steps): nothing said.
  v.metrics.back() = ValidationMetric{kValidationStepStandardError, 0.0, 0.0, std::nullopt};
  EXPECT_TRUE(validation_notes(v).empty());
}

// A race's prediction (adpsgd, ps): how far it moved over three seeds, and whether the measured
// step lies in that band.
TEST(ValidationNotes, ARacesPredictionIsReadAgainstItsSeedSpread) {
  ValidationRecord v = record(20e-3, 19e-3, 15e-3, 15e-3, 1e-3, 1e-3, 0.2e-3, 0.2e-3);
  v.metrics.push_back(ValidationMetric{kValidationSeedSpread, 18e-3, 21e-3, std::nullopt});
  auto notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "the prediction moves by 16.7 % between three seeds of the simulated run (18 to 21 ms): a race for the "
            "one-sided windows' locks whose outcome turns on microseconds of compute; the measured step is within "
            "that band");
  v.metrics.back() = ValidationMetric{kValidationSeedSpread, 18.5e-3, 19e-3, std::nullopt};
  notes = validation_notes(v);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes, "read the step's error against that band (the measured step is outside it)")) << notes[0];
}

}  // namespace
}  // namespace dsgd
