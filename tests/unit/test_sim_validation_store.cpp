// Stored validations (results/validation_store.hpp, schema v5): round trip of a record and
// its metrics, the relative-error definition, and the run links kept NULL when absent.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>

#include "results/store.hpp"
#include "results/validation_store.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

struct TempDb {
  fs::path dir;
  TempDb() {
    std::string pattern = (fs::temp_directory_path() / "dsgd_validation_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
    dir = pattern;
  }
  ~TempDb() { fs::remove_all(dir); }
  std::string path() const { return (dir / "v.db").string(); }
};

TEST(ValidationStore, RelativeError) {
  EXPECT_NEAR(*validation_rel_error(2.0, 2.2), 0.1, 1e-15);
  EXPECT_NEAR(*validation_rel_error(2.0, 1.5), 0.25, 1e-15);
  EXPECT_NEAR(*validation_rel_error(-4.0, -5.0), 0.25, 1e-15);
  EXPECT_FALSE(validation_rel_error(0.0, 1.0).has_value());
  EXPECT_FALSE(validation_rel_error(1.0, std::nan("")).has_value());
}

TEST(ValidationStore, RoundTripNewestFirst) {
  TempDb tmp;
  Store store = Store::open(tmp.path());
  ASSERT_GE(store.user_version(), 5);
  EXPECT_TRUE(validations_list(store).empty());
  RunRecord run;
  run.status = RunStatus::run_completed;
  const int64_t a = store.run_begin(run);
  const int64_t b = store.run_begin(run);
  ValidationRecord v;
  v.host = "h";
  v.config_json = R"({"algo":"ssgd"})";
  v.profile_run_id = a;
  v.measured_run_id = b;  // simulated_run_id left 0: stored as NULL
  v.metrics = {{"step_time_s", 0.010, 0.011, validation_rel_error(0.010, 0.011)}, {"comm_s", 0.0, 0.001, std::nullopt}};
  const int64_t first = validation_store(store, v);
  v.metrics.pop_back();
  const int64_t second = validation_store(store, v);
  EXPECT_GT(second, first);
  const auto all = validations_list(store);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, second);
  EXPECT_EQ(all[1].id, first);
  const ValidationRecord& r = all[1];
  EXPECT_EQ(r.host, "h");
  EXPECT_EQ(r.config_json, v.config_json);
  EXPECT_EQ(r.profile_run_id, a);
  EXPECT_EQ(r.measured_run_id, b);
  EXPECT_EQ(r.simulated_run_id, 0);
  EXPECT_FALSE(r.created_at.empty());
  ASSERT_EQ(r.metrics.size(), 2u);  // ordered by metric name
  EXPECT_EQ(r.metrics[0].metric, "comm_s");
  EXPECT_FALSE(r.metrics[0].rel_error.has_value());
  EXPECT_EQ(r.metrics[1].metric, "step_time_s");
  EXPECT_DOUBLE_EQ(r.metrics[1].measured, 0.010);
  EXPECT_DOUBLE_EQ(r.metrics[1].predicted, 0.011);
  EXPECT_NEAR(*r.metrics[1].rel_error, 0.1, 1e-12);
  EXPECT_EQ(all[0].metrics.size(), 1u);
}

}  // namespace
}  // namespace dsgd
