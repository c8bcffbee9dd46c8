// The tuner's search space (with compression and memory), analytic filter, space-filling
// design, censored order, the explanation and the winner's command / TOML
// (tuner/search_space.hpp, explain.hpp, recommend.hpp, tune_output.hpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "algorithms/period_schedule.hpp"
#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "core/run_config.hpp"
#include "results/store.hpp"
#include "results/tune_store.hpp"
#include "tuner/explain.hpp"
#include "tuner/proposals.hpp"
#include "tuner/recommend.hpp"
#include "tuner/search_space.hpp"
#include "tuner/tune_output.hpp"

namespace dsgd {
namespace {

TEST(TunerSpace, ParsesRangesOfPowersOfTwoAndLists) {
  EXPECT_EQ(tune_parse_int_space("--period", "1..64"), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(tune_parse_int_space("--batch", "16..128"), (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(tune_parse_int_space("--batch", "20..40"), (std::vector<int64_t>{32}));
  EXPECT_EQ(tune_parse_int_space("--period", "4,16, 4"), (std::vector<int64_t>{4, 16}));
  EXPECT_THROW(tune_parse_int_space("--period", "5..7"), InputError);  // no power of 2: empty space
  EXPECT_THROW(tune_parse_int_space("--period", "8..2"), InputError);
  EXPECT_THROW(tune_parse_int_space("--period", "0..4"), InputError);
  EXPECT_THROW(tune_parse_int_space("--period", ""), InputError);
  EXPECT_THROW(tune_parse_list("--algos", " "), InputError);
  EXPECT_THROW(tune_parse_list("--algos", "ssgd,,dpsgd"), InputError);
}

TEST(TunerSpace, ParsesDurationsAndRefusesZero) {
  EXPECT_DOUBLE_EQ(tune_parse_duration("--budget", "5min"), 300);
  EXPECT_DOUBLE_EQ(tune_parse_duration("--budget", "90"), 90);
  EXPECT_DOUBLE_EQ(tune_parse_duration("--budget", "1h"), 3600);
  EXPECT_DOUBLE_EQ(tune_parse_duration("--budget", "250ms"), 0.25);
  EXPECT_THROW(tune_parse_duration("--budget", "0"), InputError);
  EXPECT_THROW(tune_parse_duration("--budget", "0min"), InputError);
  EXPECT_THROW(tune_parse_duration("--budget", "5 fortnights"), InputError);
  EXPECT_DOUBLE_EQ(tune_parse_bytes("--max-bytes-per-step", "1MB"), 1e6);
  EXPECT_DOUBLE_EQ(tune_parse_bytes("--max-bytes-per-step", "1KiB"), 1024);
}

TuneSpec small_spec() {
  TuneSpec s;
  s.base.workers = 4;
  s.base.backend = "sim";
  s.base.target = "acc=0.8";
  s.algos = {"ssgd", "localsgd", "dpsgd"};
  s.periods = {1, 4};
  s.batches = {16, 32};
  s.topologies = {"ring", "complete"};
  s.lr_scalings = {"linear"};
  return s;
}

TEST(TunerSpace, EnumeratesKnobsPerAlgorithm) {
  const SpaceEnumeration e = space_enumerate(small_spec(), 1000);
  // ssgd: 2 batches; localsgd: 2 periods x 2 batches; dpsgd: 2 topologies x 2 batches.
  ASSERT_EQ(e.feasible.size(), 2u + 4u + 4u);
  EXPECT_TRUE(e.refused.empty());
  std::set<std::string> keys;
  for (const Candidate& c : e.feasible) {
    keys.insert(candidate_key(c));
    EXPECT_EQ(c.period > 0, c.algo == "localsgd");
    EXPECT_EQ(!c.topology.empty(), c.algo == "dpsgd");
  }
  EXPECT_EQ(keys.size(), e.feasible.size()) << "keys must be unique";
  EXPECT_TRUE(keys.count("localsgd H=4 b=32 lr=linear"));
  EXPECT_TRUE(keys.count("dpsgd ring b=16 lr=linear"));
}

TEST(TunerSpace, FiltersByBytesPerStepWithTheAlgorithmsFormula) {
  TuneSpec s = small_spec();
  // ssgd on 4 workers sends the ring all-reduce's 2(n-1)/n x 4000 bytes = 6000 per step;
  // localsgd H=4 a quarter of that; the cap keeps localsgd H=4 only (and dpsgd? its neighbours).
  s.max_bytes_per_step = 2000;
  const SpaceEnumeration e = space_enumerate(s, 1000);
  for (size_t i = 0; i < e.feasible.size(); ++i) EXPECT_LE(e.bytes_per_step[i], 2000);
  bool ssgd_refused = false;
  for (const Refusal& r : e.refused) {
    if (r.candidate.algo == "ssgd") ssgd_refused = true;
    EXPECT_NE(r.reason.find("--max-bytes-per-step"), std::string::npos) << r.reason;
  }
  EXPECT_TRUE(ssgd_refused);
  s.max_bytes_per_step = 1;
  EXPECT_TRUE(space_enumerate(s, 1000).feasible.empty());
}

TEST(TunerSpace, UnknownAlgorithmListsTheValidOnes) {
  TuneSpec s = small_spec();
  s.algos = {"ssgd", "warpdrive"};
  try {
    space_enumerate(s, 1000);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("warpdrive"), std::string::npos);
    EXPECT_NE(e.hint().find("localsgd"), std::string::npos) << e.hint();
  }
}

TEST(TunerSpace, SpaceFillingSampleIsSeededAndSpread) {
  const SpaceEnumeration e = space_enumerate(small_spec(), 1000);
  const auto a = space_fill_sample(e.feasible, 4, 7);
  const auto b = space_fill_sample(e.feasible, 4, 7);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 4u);
  std::set<std::string> algos;
  for (size_t i : a) algos.insert(e.feasible[i].algo);
  EXPECT_EQ(algos.size(), 3u) << "4 points over 3 algorithms should cover all three";
  EXPECT_EQ(space_fill_sample(e.feasible, 100, 7).size(), e.feasible.size());
}

// --compress is a knob of the all-reduce variants only; the bytes per step are the
// compressor's, so --max-bytes-per-step keeps a compressed ssgd and refuses the plain one.
TEST(TunerSpace, CompressionIsAKnobOfTheAllReduceVariantsAndCountsInTheBytes) {
  TuneSpec s = small_spec();
  s.compressors = tune_parse_compressors("none, topk:0.01");
  EXPECT_EQ(s.compressors, (std::vector<std::string>{"", "topk:0.01"}));
  EXPECT_THROW(tune_parse_compressors("none,warp:3"), InputError);
  EXPECT_THROW(tune_parse_compressors("topk:2"), InputError);
  const size_t params = 100000;
  const SpaceEnumeration e = space_enumerate(s, params);
  double plain = 0, topk = 0;
  size_t dpsgd_compressed = 0;
  for (size_t i = 0; i < e.feasible.size(); ++i) {
    const Candidate& c = e.feasible[i];
    if (c.algo == "dpsgd" && !c.compress.empty()) ++dpsgd_compressed;
    if (c.algo == "ssgd" && c.batch == 16) (c.compress.empty() ? plain : topk) = e.bytes_per_step[i];
  }
  EXPECT_EQ(dpsgd_compressed, 0u) << "gossip takes no --compress";
  EXPECT_GT(plain, 0);
  EXPECT_GT(topk, 0);
  EXPECT_LT(topk, plain / 10) << "top-1% sends far less than the ring all-reduce";
  EXPECT_EQ(candidate_key(Candidate{"ssgd", 0, 16, "", "linear", "topk:0.01"}), "ssgd b=16 lr=linear c=topk:0.01");
  EXPECT_EQ(candidate_config(s, Candidate{"ssgd", 0, 16, "", "linear", "topk:0.01"}, 1).compress, "topk:0.01");

  s.algos = {"ssgd"};
  s.max_bytes_per_step = (topk + plain) / 2;
  const SpaceEnumeration f = space_enumerate(s, params);
  ASSERT_FALSE(f.feasible.empty());
  for (const Candidate& c : f.feasible) EXPECT_EQ(c.compress, "topk:0.01");
  for (const Refusal& r : f.refused) {
    EXPECT_EQ(r.candidate.compress, "");
    EXPECT_NE(r.reason.find("above --max-bytes-per-step"), std::string::npos) << r.reason;
  }
  // The stored spec round-trips the new knobs; an older spec (without them) reads as before.
  s.max_memory_bytes = 2e9;
  const TuneSpec back = tune_spec_from_json(tune_spec_to_json(s));
  EXPECT_EQ(back.compressors, s.compressors);
  EXPECT_EQ(back.max_memory_bytes, 2e9);
  nlohmann::json old = tune_spec_to_json(small_spec());
  old.erase("compressors");
  old.erase("max-memory");
  EXPECT_EQ(tune_spec_from_json(old).compressors, (std::vector<std::string>{""}));
}

// --max-memory: engine/memory_estimate for one worker per process; a larger batch needs more.
TEST(TunerSpace, MaxMemoryRefusesByTheEstimate) {
  TuneSpec s = small_spec();
  s.algos = {"ssgd"};
  s.batches = {16, 4096};
  DatasetPair data;
  data.train.rows = 8192;
  data.train.features = 1000;
  data.train.classes = 4;
  data.train.dense.assign(data.train.rows * data.train.features, 0.0f);
  data.train.labels.assign(data.train.rows, 0);
  data.test = data.train;
  s.max_memory_bytes = 1;  // nothing fits
  EXPECT_THROW(space_enumerate(s, 1000), Error) << "--max-memory needs the dataset";
  const SpaceEnumeration none = space_enumerate(s, 1000, &data);
  EXPECT_TRUE(none.feasible.empty());
  ASSERT_FALSE(none.refused.empty());
  EXPECT_NE(none.refused[0].reason.find("above --max-memory"), std::string::npos) << none.refused[0].reason;
  s.max_memory_bytes = 1e12;
  EXPECT_EQ(space_enumerate(s, 1000, &data).feasible.size(), 2u);
}

// The explanation: the winner's breakdown against the runner-up's, and its neighbours along each
// knob, evaluated where the session ran them, else predicted (here too few reached: none).
TEST(TunerExplain, BreakdownAndNeighbours) {
  TuneSpec s = small_spec();
  s.algos = {"localsgd"};
  s.periods = {2, 4, 8};
  s.batches = {16};
  s.base.seed = 1;
  const SpaceEnumeration e = space_enumerate(s, 1000);
  ASSERT_EQ(e.feasible.size(), 3u);
  auto trial = [&](const Candidate& c, bool reached, double time, int64_t steps, double step_s, double comm_s) {
    TrialRow t;
    t.config_key = candidate_key(c);
    t.seed = 1;
    t.budget_s = 1;
    t.status = TrialStatus::trial_completed;
    t.reached = reached;
    t.time_s = time;
    t.steps = steps;
    t.step_s = step_s;
    t.comm_s = comm_s;
    t.compute_s = step_s - comm_s;
    return t;
  };
  const Candidate h2 = e.feasible[0], h4 = e.feasible[1], h8 = e.feasible[2];
  ASSERT_EQ(h4.period, 4);
  const TrialRow w = trial(h4, true, 0.1, 100, 1e-3, 0.5e-3), r = trial(h2, true, 0.2, 80, 2.5e-3, 2e-3);
  const Explanation x = tune_explain(s, e.feasible, {{h4, w, 600}, {h2, r, 1200}}, {w, r});
  ASSERT_TRUE(x.available);
  EXPECT_EQ(x.winner.config, candidate_key(h4));
  EXPECT_EQ(x.runner_up.steps, 80);
  EXPECT_NE(x.why.find("wins on step time"), std::string::npos) << x.why;
  EXPECT_NE(x.why.find("comm"), std::string::npos) << x.why;
  ASSERT_EQ(x.sensitivity.size(), 2u);  // H=2 below, H=8 above
  EXPECT_EQ(x.sensitivity[0].value, "2");
  EXPECT_TRUE(x.sensitivity[0].evaluated);
  EXPECT_DOUBLE_EQ(x.sensitivity[0].time_s, 0.2);
  EXPECT_EQ(x.sensitivity[1].value, "8");
  EXPECT_FALSE(x.sensitivity[1].evaluated);
  EXPECT_TRUE(x.sensitivity[1].predicted) << "two reached trials: the GP predicts the untried neighbour";
  EXPECT_GT(x.sensitivity[1].predicted_s, 0);
  const nlohmann::json j = explain_json(x);
  EXPECT_EQ(j["sensitivity"][0]["source"], "evaluated");
  EXPECT_EQ(j["sensitivity"][1]["source"], "gp");
  EXPECT_FALSE(explain_lines(x).empty());
  // No winner that reached the target: no explanation.
  TrialRow c = w;
  c.reached = false;
  EXPECT_FALSE(tune_explain(s, e.feasible, {{h4, c, 600}}, {c}).available);
}

// Like with like: a neighbour evaluated on the base seed only is compared with the winner's
// base-seed trial, a raced neighbour's median with the winner's median (not a base-seed trial
// with a median, as before).
TEST(TunerExplain, NeighboursComparedLikeWithLike) {
  TuneSpec s = small_spec();
  s.algos = {"localsgd"};
  s.periods = {2, 4, 8};
  s.batches = {16};
  s.base.seed = 1;
  const SpaceEnumeration e = space_enumerate(s, 1000);
  ASSERT_EQ(e.feasible.size(), 3u);
  const Candidate h2 = e.feasible[0], h4 = e.feasible[1], h8 = e.feasible[2];
  auto trial = [&](const Candidate& c, uint64_t seed, double time) {
    TrialRow t;
    t.config_key = candidate_key(c);
    t.seed = seed;
    t.budget_s = 1;
    t.status = TrialStatus::trial_completed;
    t.reached = true;
    t.time_s = time;
    t.steps = 100;
    t.step_s = time / 100;
    return t;
  };
  // Winner H=4 raced: seeds 1, 2, 3 at 0.08, 0.10, 0.12 (median 0.10); H=8 raced: 0.15, 0.20,
  // 0.25 (median 0.20); H=2 ran on the base seed only: 0.12.
  const std::vector<TrialRow> trials = {trial(h4, 1, 0.08), trial(h4, 2, 0.10), trial(h4, 3, 0.12), trial(h8, 1, 0.15),
                                        trial(h8, 2, 0.20), trial(h8, 3, 0.25), trial(h2, 1, 0.12)};
  const Explanation x = tune_explain(
      s, e.feasible, {{h4, trials[1], 600, true}, {h8, trials[4], 300, true}, {h2, trials[6], 1200, false}}, trials);
  ASSERT_EQ(x.sensitivity.size(), 2u);
  const ExplainNeighbour& below = x.sensitivity[0];  // H=2: base seed against base seed
  ASSERT_EQ(below.value, "2");
  EXPECT_EQ(below.basis, "base seed");
  EXPECT_DOUBLE_EQ(below.winner_time_s, 0.08);
  const ExplainNeighbour& above = x.sensitivity[1];  // H=8: median against median
  ASSERT_EQ(above.value, "8");
  EXPECT_EQ(above.basis, "median");
  EXPECT_DOUBLE_EQ(above.time_s, 0.20);
  EXPECT_DOUBLE_EQ(above.winner_time_s, 0.10);
  const nlohmann::json j = explain_json(x);
  EXPECT_DOUBLE_EQ(j["sensitivity"][0]["relative_to_winner"].get<double>(), 0.12 / 0.08);
  EXPECT_DOUBLE_EQ(j["sensitivity"][1]["relative_to_winner"].get<double>(), 0.20 / 0.10);
}

// The compressor is one of the winner's knobs: its uncompressed neighbour is listed.
TEST(TunerExplain, CompressorIsAKnobOfTheWinner) {
  TuneSpec s = small_spec();
  s.algos = {"ssgd"};
  s.batches = {16};
  s.compressors = {"", "topk:0.1"};
  s.base.seed = 1;
  const SpaceEnumeration e = space_enumerate(s, 1000);
  ASSERT_EQ(e.feasible.size(), 2u);
  const Candidate plain = e.feasible[0], topk = e.feasible[1];
  ASSERT_EQ(topk.compress, "topk:0.1");
  TrialRow w, r;
  w.config_key = candidate_key(topk);
  r.config_key = candidate_key(plain);
  w.seed = r.seed = 1;
  w.status = r.status = TrialStatus::trial_completed;
  w.reached = true;
  w.time_s = 0.1;
  r.time_s = 0.3;  // censored
  const Explanation x = tune_explain(s, e.feasible, {{topk, w, 100}, {plain, r, 1000}}, {w, r});
  ASSERT_EQ(x.sensitivity.size(), 1u);
  EXPECT_EQ(x.sensitivity[0].knob, "compress");
  EXPECT_EQ(x.sensitivity[0].value, "none");
  EXPECT_TRUE(x.sensitivity[0].evaluated);
  EXPECT_FALSE(x.sensitivity[0].reached);
  EXPECT_NE(x.why.find("did not reach"), std::string::npos) << x.why;
}

TEST(TunerObjective, CensoredTrialsRankAfterReachedOnes) {
  const TrialScore fast{true, 10, 0.8}, slow{true, 100, 0.8};
  const TrialScore censored_short{false, 5, 0.7}, censored_close{false, 5, 0.79}, censored_long{false, 50, 0.79};
  EXPECT_TRUE(tune_objective_better(fast, slow));
  EXPECT_TRUE(tune_objective_better(slow, censored_long)) << "a reached trial beats any censored one";
  EXPECT_FALSE(tune_objective_better(censored_short, slow));
  EXPECT_TRUE(tune_objective_better(censored_close, censored_short)) << "closer to the target first";
  EXPECT_TRUE(tune_objective_better(censored_close, censored_long)) << "then as far in less time";
  EXPECT_FALSE(tune_objective_better(fast, fast));
}

TEST(TunerOutput, CommandAndTomlListTheNonDefaultFields) {
  RunConfig cfg;
  cfg.backend = "sim";
  cfg.workers = 32;
  cfg.algo = "localsgd";
  cfg.period = 16;
  cfg.lr_scaling = "sqrt";
  cfg.bandwidth = "100Mbps";
  cfg.straggler = "fixed:rank=1,delay=2ms";
  cfg.db = "elsewhere.db";
  cfg.seed = 3;
  const std::string cmd = tune_run_command(cfg);
  EXPECT_NE(cmd.find("--algo localsgd"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--period 16"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--backend sim"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--straggler fixed:rank=1,delay=2ms"), std::string::npos) << cmd;
  EXPECT_EQ(cmd.find("--db"), std::string::npos) << cmd;
  EXPECT_EQ(cmd.find("--batch"), std::string::npos) << "defaults are left out: " << cmd;

  const auto path = std::filesystem::temp_directory_path() / "dsgd_test_tuner_best.toml";
  {
    std::ofstream f(path);
    f << tune_config_toml(cfg);
  }
  RunConfig back;
  run_config_load_file(back, path.string());
  std::filesystem::remove(path);
  cfg.db = RunConfig{}.db;
  EXPECT_EQ(run_config_to_json(back), run_config_to_json(cfg));
}

}  // namespace
}  // namespace dsgd

namespace dsgd {
namespace {

TEST(TunerProposals, WeightedEiProposesUntriedConfigurationsNearTheBestAndIsSeeded) {
  TuneSpec s;
  s.base.workers = 4;
  s.base.backend = "sim";
  s.algos = {"ssgd", "localsgd"};
  s.periods = {1, 2, 4, 8, 16, 32, 64};
  s.batches = {16, 32, 64, 128};
  s.lr_scalings = {"linear"};
  const SpaceEnumeration e = space_enumerate(s, 1000);
  // Observed: localsgd gets faster with H (time 8/H s), ssgd is slow, and one censored trial.
  std::vector<std::pair<size_t, TrialScore>> observed;
  std::set<size_t> tried;
  for (size_t i = 0; i < e.feasible.size(); ++i) {
    const Candidate& c = e.feasible[i];
    if (c.batch != 32) continue;
    if (c.algo == "ssgd") observed.push_back({i, TrialScore{true, 20, 0.8}});
    if (c.algo == "localsgd" && (c.period == 1 || c.period == 4 || c.period == 16))
      observed.push_back({i, TrialScore{true, 8.0 / static_cast<double>(c.period), 0.8}});
    if (c.algo == "localsgd" && c.period == 64) observed.push_back({i, TrialScore{false, 1, 0.5}});
  }
  for (const auto& o : observed) tried.insert(o.first);
  const auto a = proposals_weighted_ei(e.feasible, observed, tried, 3, 5);
  const auto b = proposals_weighted_ei(e.feasible, observed, tried, 3, 5);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index) << "not deterministic for a seed";
    EXPECT_FALSE(tried.count(a[i].index)) << "proposed a configuration already tried";
    EXPECT_GT(a[i].p_reach, 0.0);
    EXPECT_LE(a[i].p_reach, 1.0);
  }
  const Candidate& first = e.feasible[a[0].index];
  EXPECT_EQ(first.algo, "localsgd") << candidate_key(first);
  EXPECT_GE(first.period, 8) << "expected a proposal near the fast large-H region: " << candidate_key(first);
  // Nothing to fit with fewer than two reached trials.
  EXPECT_TRUE(proposals_weighted_ei(e.feasible, {observed.back()}, tried, 3, 5).empty());
}

}  // namespace
}  // namespace dsgd

namespace dsgd {
namespace {

TEST(TunerStore, SessionsAndTrialsRoundTripAndATrialIsStoredOnce) {
  const auto path = std::filesystem::temp_directory_path() / "dsgd_test_tuner_store.db";
  std::filesystem::remove(path);
  {
    Store store = Store::open(path.string());
    EXPECT_TRUE(tune_sessions_list(store).empty());
    EXPECT_THROW(tune_session_get(store, 1), InputError);
    TuneSessionRow s;
    s.target = "acc=0.8";
    s.seed = 7;
    s.spec_json = R"({"x":1})";
    const int64_t id = tune_session_begin(store, s);
    TrialRow t;
    t.session_id = id;
    t.trial_key = "ssgd b=16 lr=linear|seed=7|budget=1";
    t.phase = "rung 0";
    t.config_key = "ssgd b=16 lr=linear";
    t.seed = 7;
    t.budget_s = 1;
    t.status = TrialStatus::trial_completed;
    t.stop_reason = "budget: budget of 1 s reached at 1.2 s (step 9)";
    t.time_s = 1.2;
    t.progress = 0.7;
    tune_trial_insert(store, t);
    EXPECT_THROW(tune_trial_insert(store, t), Error) << "the same trial twice in a session";
    tune_session_finish(store, id, TuneSessionStatus::session_completed, R"({"verdict":"v"})", "");
    const TuneSessionRow back = tune_session_get(store, id);
    EXPECT_EQ(back.status, TuneSessionStatus::session_completed);
    EXPECT_EQ(back.seed, 7u);
    EXPECT_EQ(back.target, "acc=0.8");
    const auto trials = tune_trials_get(store, id);
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0].trial_key, t.trial_key);
    EXPECT_EQ(trials[0].run_id, 0) << "no run: NULL, read as 0";
    EXPECT_FALSE(trials[0].reached);
    EXPECT_DOUBLE_EQ(trials[0].time_s, 1.2);
    EXPECT_EQ(trials[0].stop_reason, t.stop_reason);
    EXPECT_EQ(trials[0].stop_kind, StopKind::stop_budget) << "read back from the stored reason";
    EXPECT_EQ(tune_session_trial_count(store, id), 1);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
}

TEST(TunerSpace, SpecRoundTripsThroughJson) {
  TuneSpec s = small_spec();
  s.budget_s = 30;
  s.max_bytes_per_step = 1e6;
  s.base.bandwidth = "100Mbps";
  const TuneSpec back = tune_spec_from_json(tune_spec_to_json(s));
  EXPECT_EQ(tune_spec_to_json(back), tune_spec_to_json(s));
  EXPECT_EQ(back.base.bandwidth, "100Mbps");
}

}  // namespace
}  // namespace dsgd

namespace dsgd {
namespace {

// localsgd's period schedules as a knob (--period-schedules): enumerated for localsgd only,
// qsr refused under a constant rate (it is the constant schedule there), a qsr candidate's
// alpha = lr * sqrt(H) at its scaled rate, and its command and TOML give the same run back.
TEST(TunerSpace, PeriodSchedulesAreAKnobOfLocalSgd) {
  TuneSpec s = small_spec();
  s.period_schedules = tune_parse_period_schedules("constant,qsr,adacomm");
  EXPECT_EQ(s.period_schedules, (std::vector<std::string>{"constant", "qsr", "adacomm"}));
  EXPECT_THROW(tune_parse_period_schedules("constant,sometimes"), InputError);
  EXPECT_TRUE(tune_algo_has_period_schedule("localsgd"));
  EXPECT_FALSE(tune_algo_has_period_schedule("diloco"));
  // Constant rate: qsr is refused, saying why; adacomm is searched.
  SpaceEnumeration e = space_enumerate(s, 1000);
  EXPECT_EQ(e.feasible.size(), 2u + 4u * 2 + 4u);  // ssgd 2, localsgd 4 constant + 4 adacomm, dpsgd 4
  size_t qsr_refused = 0;
  for (const Refusal& r : e.refused)
    if (r.candidate.period_schedule == "qsr") {
      ++qsr_refused;
      EXPECT_NE(r.reason.find("--lr-schedule constant is the constant schedule"), std::string::npos) << r.reason;
    }
  EXPECT_EQ(qsr_refused, 4u);
  // A decaying rate: all three.
  s.base.lr_schedule = "cosine";
  e = space_enumerate(s, 1000);
  EXPECT_EQ(e.feasible.size(), 2u + 4u * 3 + 4u);
  EXPECT_TRUE(e.refused.empty());
  std::set<std::string> keys;
  for (const Candidate& c : e.feasible) {
    keys.insert(candidate_key(c));
    if (c.algo != "localsgd") {
      EXPECT_TRUE(c.period_schedule.empty());
    }
  }
  EXPECT_EQ(keys.size(), e.feasible.size());
  EXPECT_TRUE(keys.count("localsgd H=4 qsr b=32 lr=linear"));
  EXPECT_TRUE(keys.count("localsgd H=4 adacomm b=16 lr=linear"));
  EXPECT_TRUE(keys.count("localsgd H=4 b=16 lr=linear"));
  // The qsr candidate's run: alpha = lr * sqrt(H) at its scaled rate (0.05 * 32 * 4 / 256).
  const Candidate q{"localsgd", 4, 32, "", "linear", "", "qsr"};
  RunConfig cfg = candidate_config(s, q, 5);
  EXPECT_EQ(cfg.period_schedule, "qsr");
  EXPECT_DOUBLE_EQ(cfg.qsr_alpha, 0.05 * 32 * 4 / 256.0 * 2.0);
  EXPECT_EQ(qsr_period(cfg.qsr_alpha, 0.05 * 32 * 4 / 256.0, cfg.period), 4);  // H at the peak rate
  EXPECT_EQ(candidate_config(s, Candidate{"localsgd", 4, 32, "", "linear", "", ""}, 5).period_schedule, "constant");
  EXPECT_EQ(candidate_config(s, Candidate{"localsgd", 4, 32, "", "linear", "", ""}, 5).qsr_alpha, 0.0);
  cfg.db = RunConfig{}.db;
  const std::string cmd = tune_run_command(cfg);
  EXPECT_NE(cmd.find("--period-schedule qsr"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find(fmt::format("--qsr-alpha {}", cfg.qsr_alpha)), std::string::npos) << cmd;
  const auto path = std::filesystem::temp_directory_path() / "dsgd_test_tuner_qsr.toml";
  {
    std::ofstream f(path);
    f << tune_config_toml(cfg);
  }
  RunConfig back;
  run_config_load_file(back, path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(back.qsr_alpha, cfg.qsr_alpha);  // bit for bit: the same periods
  EXPECT_EQ(run_config_to_json(back), run_config_to_json(cfg));
  // Stored with the session; a session stored before the knob searched the constant schedule.
  nlohmann::json j = tune_spec_to_json(s);
  EXPECT_EQ(tune_spec_from_json(j).period_schedules, s.period_schedules);
  j.erase("period-schedules");
  EXPECT_EQ(tune_spec_from_json(j).period_schedules, std::vector<std::string>{"constant"});
  // The GP's inputs get the schedule's one-hot columns only when the space holds more than one.
  const SpaceEnumeration plain = space_enumerate(small_spec(), 1000);
  EXPECT_EQ(proposal_encode(e.feasible).cols(), proposal_encode(plain.feasible).cols() + 3);
}

// A text workload small enough to plan in a test, whose whole-set evaluation (312 windows of
// 64 tokens of the small GPT, ~1.8e10 FLOP) is above the tuner's threshold.
TuneSpec gpt_spec() {
  TuneSpec s;
  s.base.workload = "transformer";
  s.base.model = "gpt";
  s.base.dataset = "synthetic-text:n=200000";
  s.base.layers = 2;
  s.base.d_model = 128;
  s.base.heads = 4;
  s.base.seq = 64;
  s.base.workers = 4;
  s.base.backend = "sim";
  s.base.target = "loss=2.0";
  s.algos = {"ssgd", "localsgd"};
  s.periods = {4};
  s.batches = {16, 32};
  s.lr_scalings = {"none"};
  s.trials = 4;
  return s;
}

bool any_note(const TunePlan& plan, const std::string& part) {
  for (const std::string& n : plan.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(TunerPlan, ADeepWorkloadEvaluatesOnADefaultSubsetUnlessTheUserChose) {
  const TunePlan deep = tune_plan(gpt_spec(), 1000);
  EXPECT_EQ(deep.spec.base.eval_subset, 256);
  EXPECT_TRUE(any_note(deep, "evaluations on 256 of the 312 test windows (evenly spaced)")) << deep.notes.front();
  TuneSpec chose = gpt_spec();
  chose.base.eval_subset = 0;
  chose.base.given_keys.push_back("eval-subset");  // --eval-subset 0: the whole set
  const TunePlan whole = tune_plan(chose, 1000);
  EXPECT_EQ(whole.spec.base.eval_subset, 312) << "the whole set, stored as every window";
  EXPECT_FALSE(any_note(whole, "evaluations on"));
  // A stored session (no key marked given) keeps what it decided.
  TuneSpec stored = tune_spec_from_json(tune_spec_to_json(whole.spec));
  EXPECT_EQ(tune_plan(stored, 1000).spec.base.eval_subset, 312);
  stored = tune_spec_from_json(tune_spec_to_json(deep.spec));
  EXPECT_EQ(tune_plan(stored, 1000).spec.base.eval_subset, 256);
  chose.base.eval_subset = 100;
  EXPECT_TRUE(any_note(tune_plan(chose, 1000), "evaluations on 100 of the 312 test windows (--eval-subset)"));
  TuneSpec svm = small_spec();  // a cheap evaluation: the whole set
  svm.trials = 4;
  const TunePlan cheap = tune_plan(svm, 1000);
  EXPECT_EQ(cheap.spec.base.eval_subset, 0);
  EXPECT_FALSE(any_note(cheap, "evaluations on"));
  // Each trial's memory: a batch of 32's step buffers above a batch of 16's.
  ASSERT_EQ(deep.trial_memory_each.size(), deep.space.feasible.size());
  std::map<int64_t, double> by_batch;
  for (size_t i = 0; i < deep.space.feasible.size(); ++i)
    by_batch[deep.space.feasible[i].batch] =
        std::max(by_batch[deep.space.feasible[i].batch], deep.trial_memory_each[i]);
  EXPECT_GT(by_batch.at(32), by_batch.at(16));
  EXPECT_GT(deep.dataset_memory_bytes, 0);
}

TEST(TunerPlan, ALiveSessionRefusesConfigurationsThatDoNotFitInMemory) {
  if (!(memory_available_bytes() > 0)) GTEST_SKIP() << "MemAvailable is unknown here";
  TuneSpec huge = gpt_spec();
  huge.base.workers = 4096;  // ~3 M parameters: ~70 MB of model copies each, about 0.3 TB
  huge.base.d_model = 256;
  huge.base.layers = 4;
  try {
    tune_plan(huge, 1000);
    ADD_FAILURE() << "a space that does not fit in memory was planned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its 4096 simulated workers need about"), std::string::npos) << e.what();
  }
  // A replay of a stored grid runs nothing here: nothing is refused for memory.
  EXPECT_EQ(tune_plan(huge, 1000, false).space.feasible.size(), 4u);
}

TEST(TunerPlan, TrialsAtATimeFitInMemory) {
  const double available = memory_available_bytes();
  if (!(available > 0)) GTEST_SKIP() << "MemAvailable is unknown here";
  TunePlan plan = tune_plan(gpt_spec(), 1000);
  plan.notes.clear();
  plan.dataset_memory_bytes = 0;
  plan.trial_memory_each = {0.1 * available, 0.4 * available};  // 2 fit in 90 %, 3 do not
  EXPECT_EQ(tune_jobs_for_memory(plan, 4, false), 2);
  EXPECT_TRUE(any_note(plan, "2 trials at a time instead of 4 (one per core)"));
  plan.notes.clear();
  EXPECT_EQ(tune_jobs_for_memory(plan, 4, true), 4) << "a given --jobs is kept";
  EXPECT_TRUE(any_note(plan, "warning: --jobs 4 may not fit in memory"));
  EXPECT_TRUE(any_note(plan, "--jobs 2 fits"));
  plan.notes.clear();
  plan.trial_memory_each = {2 * available};  // not even one: one, said
  EXPECT_EQ(tune_jobs_for_memory(plan, 2, false), 1);
  EXPECT_TRUE(any_note(plan, "even one may not fit"));
  plan.notes.clear();
  plan.trial_memory_each = {1e6};
  EXPECT_EQ(tune_jobs_for_memory(plan, 2, false), 2);
  EXPECT_TRUE(plan.notes.empty());
}

}  // namespace
}  // namespace dsgd
