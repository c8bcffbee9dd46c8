// The closed sets stored as text (results/run_status.hpp, tune_session_status.hpp,
// trial_status.hpp): every value's text parses back to it, the texts are the ones the database
// has always held, and an unknown text is an error naming it. A stored trial stop reason gives
// back the kind it was written with (results/trial_stop.hpp).
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "error_text.hpp"
#include "results/run_status.hpp"
#include "results/trial_backend.hpp"
#include "results/trial_status.hpp"
#include "results/trial_stop.hpp"
#include "results/tune_session_status.hpp"

namespace dsgd {
namespace {

using testing::error_of;

TEST(RunStatusTest, TextParsesBackToEveryStatus) {
  const std::pair<RunStatus, std::string> all[] = {
      {RunStatus::run_running, "running"},         {RunStatus::run_completed, "completed"},
      {RunStatus::run_diverged, "diverged"},       {RunStatus::run_failed, "failed"},
      {RunStatus::run_interrupted, "interrupted"}, {RunStatus::run_killed, "killed"},
      {RunStatus::run_stopped, "stopped"},         {RunStatus::run_stale, "stale?"},
  };
  for (const auto& [status, text] : all) {
    EXPECT_EQ(run_status_text(status), text);
    EXPECT_EQ(run_status_parse(text), status) << text;
  }
}

TEST(RunStatusTest, OnlyRunningAndStaleAreUnfinished) {
  EXPECT_FALSE(run_status_finished(RunStatus::run_running));
  EXPECT_FALSE(run_status_finished(RunStatus::run_stale));
  EXPECT_TRUE(run_status_finished(RunStatus::run_completed));
  EXPECT_TRUE(run_status_finished(RunStatus::run_stopped));
}

TEST(RunStatusTest, UnknownTextIsAnErrorNamingIt) {
  EXPECT_THROW(run_status_parse("finished"), Error);
  EXPECT_THROW(run_status_parse(""), Error);
  EXPECT_THROW(run_status_parse("Completed"), Error);
  EXPECT_NE(error_of([] { run_status_parse("finished"); }).find("unknown run status 'finished'"), std::string::npos);
}

TEST(TuneSessionStatusTest, TextParsesBackToEveryStatus) {
  const std::pair<TuneSessionStatus, std::string> all[] = {
      {TuneSessionStatus::session_running, "running"},
      {TuneSessionStatus::session_completed, "completed"},
      {TuneSessionStatus::session_failed, "failed"},
      {TuneSessionStatus::session_interrupted, "interrupted"},
  };
  for (const auto& [status, text] : all) {
    EXPECT_EQ(tune_session_status_text(status), text);
    EXPECT_EQ(tune_session_status_parse(text), status) << text;
  }
}

TEST(TuneSessionStatusTest, UnknownTextIsAnErrorNamingIt) {
  EXPECT_THROW(tune_session_status_parse("stopped"), Error);
  EXPECT_NE(error_of([] { tune_session_status_parse("stopped"); }).find("unknown tuning session status 'stopped'"),
            std::string::npos);
}

TEST(TrialStatusTest, TextParsesBackToEveryStatus) {
  EXPECT_EQ(trial_status_text(TrialStatus::trial_completed), std::string("completed"));
  EXPECT_EQ(trial_status_text(TrialStatus::trial_failed), std::string("failed"));
  EXPECT_EQ(trial_status_parse("completed"), TrialStatus::trial_completed);
  EXPECT_EQ(trial_status_parse("failed"), TrialStatus::trial_failed);
}

TEST(TrialStatusTest, UnknownTextIsAnErrorNamingIt) {
  EXPECT_THROW(trial_status_parse("running"), Error);
  EXPECT_NE(error_of([] { trial_status_parse("running"); }).find("unknown trial status 'running'"), std::string::npos);
}

// The reasons tuner/trial.cpp, trial_mpi.cpp, trial_runner.hpp and replay.cpp write.
TEST(StopKindTest, StoredReasonsGiveBackTheirKind) {
  EXPECT_EQ(trial_stop_kind_of_reason("target: target acc=0.8 reached at 1.5 s (step 40)"), StopKind::stop_target);
  EXPECT_EQ(trial_stop_kind_of_reason("target: replayed, reached at 1.5 s (step 40)"), StopKind::stop_target);
  EXPECT_EQ(trial_stop_kind_of_reason("budget: budget of 1 s reached at 1.2 s (step 9)"), StopKind::stop_budget);
  EXPECT_EQ(trial_stop_kind_of_reason("diverged: non-finite loss at step 30"), StopKind::stop_diverged);
  EXPECT_EQ(trial_stop_kind_of_reason("diverged: the run ended as 'diverged'"), StopKind::stop_diverged);
  EXPECT_EQ(trial_stop_kind_of_reason("end-of-steps: the last of 100 steps, before the target and the budget"),
            StopKind::stop_end_of_steps);
  EXPECT_EQ(trial_stop_kind_of_reason("error: --lr must be > 0"), StopKind::stop_error);
}

TEST(StopKindTest, ARunThatEndedOtherwiseIsRunEnded) {
  EXPECT_EQ(trial_stop_kind_of_reason("killed: the run ended as 'killed'"), StopKind::stop_run_ended);
  EXPECT_EQ(trial_stop_kind_of_reason("failed: the run ended as 'failed'"), StopKind::stop_run_ended);
  EXPECT_EQ(trial_stop_kind_of_reason(""), StopKind::stop_run_ended);
}

TEST(TrialBackendTest, TextParsesBackToEveryBackend) {
  for (TrialBackend b : {TrialBackend::trial_sim, TrialBackend::trial_mpi}) {
    EXPECT_EQ(trial_backend_parse(trial_backend_text(b)), b);
    EXPECT_EQ(trial_backend_find(trial_backend_text(b)), b);
  }
  EXPECT_EQ(trial_backend_text(TrialBackend::trial_sim), std::string("sim"));
  EXPECT_EQ(trial_backend_text(TrialBackend::trial_mpi), std::string("mpi"));
}

TEST(TrialBackendTest, AnotherBackendIsAnInputErrorNamingIt) {
  EXPECT_EQ(trial_backend_find("nccl"), std::nullopt);
  EXPECT_THROW(trial_backend_parse("nccl"), InputError);
  EXPECT_NE(error_of([] { trial_backend_parse("nccl"); }).find("got --backend nccl"), std::string::npos);
}

}  // namespace
}  // namespace dsgd
