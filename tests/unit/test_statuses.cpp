// The closed sets stored as text (results/run_status.hpp, tune_session_status.hpp,
// trial_status.hpp, trial_stop.hpp): every value's text parses back to it, the texts are the
// ones the database has always held, and an unknown text is an error naming it.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "error_text.hpp"
#include "results/run_status.hpp"

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

}  // namespace
}  // namespace dsgd
