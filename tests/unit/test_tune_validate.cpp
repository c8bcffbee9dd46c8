// The tuner's validation on MPI (tuner/tune_validate.hpp) without running MPI: the rule that says
// whether the measured order of the top two agrees with the ranking, and the refusals of the plan
// (K out of range, a session without a ranking).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "results/tune_store.hpp"
#include "tuner/tune_validate.hpp"

namespace dsgd {
namespace {

std::vector<TopValidationRow> rows(std::optional<double> p1, std::optional<double> m1, std::optional<double> p2,
                                   std::optional<double> m2) {
  std::vector<TopValidationRow> r(2);
  r[0].rank = 1;
  r[0].predicted_time_s = p1;
  r[0].measured_time_s = m1;
  r[1].rank = 2;
  r[1].predicted_time_s = p2;
  r[1].measured_time_s = m2;
  return r;
}

TEST(TuneValidate, RankingAgreementOfTheTopTwo) {
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, 1.5, 2.0, 2.5)), true);          // both reached, same order
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, 1.5, 2.0, 1.5)), true);          // a measured tie keeps the order
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, 3.0, 2.0, 2.5)), false);         // the runner-up was faster
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, 3.0, 2.0, {})), true);           // only the first reached
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, {}, 2.0, 2.5)), false);          // only the runner-up reached
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, {}, 2.0, {})), std::nullopt);    // neither
  EXPECT_EQ(tune_validate_ranking_agrees(rows(1.0, 1.2, 1.0, 1.1)), std::nullopt);  // a predicted tie
  EXPECT_TRUE(tune_validate_predicted_tie(rows(1.0, 1.2, 1.0, 1.1)));
  EXPECT_FALSE(tune_validate_predicted_tie(rows(1.0, 1.2, {}, 1.1)));
  EXPECT_EQ(tune_validate_ranking_agrees({rows(1.0, 1.5, 2.0, 2.5)[0]}), std::nullopt);  // one row
}

TEST(TuneValidate, PlanRefusesBadKAndUnfinishedSessions) {
  const std::string db = (std::filesystem::temp_directory_path() / "dsgd_test_tune_validate.db").string();
  std::filesystem::remove(db);
  {
    Store store = Store::open(db);
    TuneSessionRow row;
    row.target = "acc=0.8";
    row.spec_json = "{}";
    const int64_t running = tune_session_begin(store, row);
    EXPECT_THROW(tune_validate_plan(store, running, 1, "--top"), InputError);
    const int64_t done = tune_session_begin(store, row);
    const nlohmann::json result = {{"ranking", {{{"rank", 1}, {"config", "ssgd b=16"}, {"run_id", 0}}}}};
    tune_session_finish(store, done, TuneSessionStatus::session_completed, result.dump(), "");
    try {
      tune_validate_plan(store, done, 2, "--top");
      ADD_FAILURE() << "--top 2 of 1 ranked was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--top 2 is not in 1..1"), std::string::npos) << e.what();
    }
    EXPECT_THROW(tune_validate_plan(store, done, 0, "--validate"), InputError);
    // K fits, but the configuration has no stored sim trial to compare with.
    EXPECT_THROW(tune_validate_plan(store, done, 1, "--top"), InputError);
    EXPECT_TRUE(tune_validations_get(store, done).empty());
  }
  std::filesystem::remove(db);
}

TEST(TuneValidate, WorkersBeyondTheMachineAreRefused) {
  EXPECT_EQ(tune_validate_check_workers(1, "", "--validate"), "");
  EXPECT_EQ(tune_validate_check_workers(100000, "hosts", "--validate"), "");  // a hostfile: not this machine
  EXPECT_THROW(tune_validate_check_workers(100000, "", "--validate"), InputError);
}

}  // namespace
}  // namespace dsgd
