// The calibration's operation table and protocol (engine/calibration_ops.hpp,
// engine/calibration.hpp): bus-bandwidth factors as nccl-tests defines them, the elements a
// buffer uses, the bytes each operation's recorded events carry, and a whole sweep run through
// the simulated cluster's Communicator, whose virtual clock makes every measured time the
// network model's exactly, so the fit recovers the modelled link.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "cluster/network_model.hpp"
#include "cluster/sim_world.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/calibration.hpp"
#include "engine/calibration_ops.hpp"
#include "engine/calibration_plan.hpp"
#include "engine/sim_run.hpp"
#include "results/optimizer_profile_store.hpp"
#include "sim_ring_options.hpp"

namespace dsgd {
namespace {

TEST(CalibrationOps, BusBandwidthFactorsAreNcclTests) {
  struct Case {
    const char* op;
    int n;
    double factor;
  };
  const Case cases[] = {
      {"allreduce", 2, 1.0},    {"allreduce", 4, 1.5},    {"allreduce_mpi", 8, 1.75}, {"reduce_scatter", 4, 0.75},
      {"allgather", 2, 0.5},    {"allgather", 8, 0.875},  {"broadcast", 4, 1.0},      {"sendrecv", 2, 1.0},
      {"onesided_put", 2, 1.0}, {"onesided_get", 4, 1.0}, {"allreduce", 1, 0.0},      {"reduce_scatter", 1, 0.0},
  };
  for (const Case& c : cases) EXPECT_DOUBLE_EQ(calibration_op_find(c.op).busbw_factor(c.n), c.factor) << c.op;
  EXPECT_THROW(calibration_op_find("alltoall"), Error);
}

TEST(CalibrationOps, NamesAreUniqueAndTheBarePairFollowsTheHarness) {
  const auto& ops = calibration_ops();
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t j = i + 1; j < ops.size(); ++j) EXPECT_STRNE(ops[i].name, ops[j].name);
  ASSERT_GE(ops.size(), 2u);
  EXPECT_FALSE(ops[0].interleaved);  // an interleaved op needs a row before it
  EXPECT_STREQ(ops[1].name, "allreduce_mpi");
  EXPECT_TRUE(ops[1].interleaved);
}

TEST(CalibrationOps, CountRoundsBlockCollectivesToTheRanks) {
  EXPECT_EQ(calibration_op_count(calibration_op_find("allreduce"), 4, 3), 1u);
  EXPECT_EQ(calibration_op_count(calibration_op_find("allreduce"), 1000, 3), 250u);
  EXPECT_EQ(calibration_op_count(calibration_op_find("reduce_scatter"), 1000, 3), 249u);
  EXPECT_EQ(calibration_op_count(calibration_op_find("allgather"), 8, 4), 0u);  // fewer elements than ranks
  EXPECT_EQ(calibration_op_count(calibration_op_find("allgather"), 1024, 4), 256u);
  EXPECT_FALSE(calibration_op_runs_on(calibration_op_find("sendrecv"), 1));
  EXPECT_TRUE(calibration_op_runs_on(calibration_op_find("sendrecv"), 2));
}

// One iteration of every recorded op on 4 simulated workers: the bytes rank 0's events carry are
// the op's formula, and the collectives compute what they say.
TEST(CalibrationOps, RecordedBytesMatchTheTable) {
  const int n = 4;
  const size_t count = 1024;
  SimWorld world(sim_ring_options(n, 1e-5, 1e9));
  for (const CalibrationOp& op : calibration_ops()) {
    if (!op.recorded) continue;
    std::vector<double> sent(n, 0.0);
    std::vector<CalibrationBuffers> bufs(n);
    world.run([&](int r) {
      SimCommunicator& c = world.comm(r);
      CalibrationBuffers& b = bufs[r];
      b.a.assign(kHostDevice, count);
      b.b.assign(kHostDevice, count);
      vector_ops_host().fill(b.a.view(), 1.0f);
      vector_ops_host().fill(b.b.view(), 1.0f);
      b.log.reserve(8);
      if (op.needs_window) c.window_create(count);
      c.attach_log(&b.log);
      op.run(c, b, calibration_op_count(op, 4 * count, n));
      c.attach_log(nullptr);
      if (op.needs_window) c.window_free();
      for (size_t e = 0; e < b.log.size(); ++e) sent[r] += b.log.data()[e].bytes_sent;
    });
    EXPECT_DOUBLE_EQ(sent[0], op.bytes_sent(4.0 * count, n)) << op.name;
    if (std::string(op.name) == "allreduce") {
      EXPECT_EQ(bufs[2].a.data()[17], float(n));
    }
    if (std::string(op.name) == "reduce_scatter") {
      EXPECT_EQ(bufs[1].b.data()[0], float(n));  // rank 1's block of the sum
    }
  }
}

struct Recorder final : CalibrationObserver {
  std::vector<std::string> skipped;
  int64_t last_done = 0, total = 0;
  void op_skipped(const CalibrationOp& op, const std::string&) override { skipped.push_back(op.name); }
  void group_row(const std::vector<const CalibrationOp*>&, size_t, const std::vector<CollectiveRow>&, int64_t done,
                 int64_t t) override {
    last_done = done;
    total = t;
  }
};

// The sweep on 2 simulated workers: each point's time is the network model's (the virtual clock
// measures exactly), so the all-reduce fit returns the modelled link; the bare all-reduce, which
// takes no virtual time, is left out.
TEST(CalibrationSweep, OnTheSimulatorRecoversTheModel) {
  const int n = 2;
  const double alpha = 20e-6, bw = 1.25e9;
  const SimWorldOptions options = sim_ring_options(n, alpha, bw);
  SimWorld world(options);
  CalibrationSweepPlan plan;
  for (int64_t s = 4; s <= (int64_t(1) << 16); s *= 4) plan.sizes.push_back(s);
  plan.reps = 2;
  plan.min_rep_time_s = 1e-3;
  plan.estimate_time_s = 2e-4;
  std::vector<std::vector<CollectiveRow>> rows(n);
  std::vector<Recorder> seen(n);
  world.run([&](int r) { rows[r] = calibration_sweep(plan, world.comm(r), seen[r]); });
  EXPECT_EQ(seen[0].skipped, std::vector<std::string>{"allreduce_mpi"});
  EXPECT_EQ(seen[0].last_done, seen[0].total);
  const LinkModel link{alpha, bw};
  size_t checked = 0;
  for (const CollectiveRow& row : rows[0]) {
    const double S = static_cast<double>(row.bytes);
    double model = 0;
    const NetworkModel& net = *options.network;
    if (row.op == "allreduce" || row.op == "allreduce_after_compute")
      model = network_collective_time(net, CollKind::coll_allreduce, options.algo, S, n);
    if (row.op == "reduce_scatter")
      model = network_collective_time(net, CollKind::coll_reduce_scatter, options.algo, S, n);
    if (row.op == "allgather") model = network_collective_time(net, CollKind::coll_allgather, options.algo, S, n);
    if (row.op == "broadcast") model = network_collective_time(net, CollKind::coll_broadcast, options.algo, S, n);
    if (row.op == "sendrecv" || row.op == "onesided_put" || row.op == "onesided_get" ||
        row.op == "sendrecv_after_compute" || row.op == "onesided_put_after_compute")
      model = network_p2p_time(link, S);
    ASSERT_GT(model, 0) << row.op;
    EXPECT_NEAR(row.time_s, model, 1e-9 * model) << row.op << " " << row.bytes;
    EXPECT_NEAR(row.busbw_gbps, S / row.time_s / 1e9 * calibration_op_find(row.op).busbw_factor(n), 1e-12);
    ++checked;
  }
  // 10 ops (7, and 3 timed after compute); reduce_scatter / allgather need >= 2 floats at 4 B.
  EXPECT_EQ(checked, 10 * plan.sizes.size() - 2);
  for (const CalibrationFit& f : calibration_fits(rows[0], n)) {
    if (f.row.op != "allreduce") continue;
    // Ring on 2 workers: 2(n-1)(alpha + S/(nB)) = 2 alpha + S/B, busbw factor 1.
    EXPECT_NEAR(f.row.alpha_s, 2 * alpha, 1e-6 * alpha);
    EXPECT_NEAR(f.row.bandwidth_bytes_per_s, bw, 1e-6 * bw);
  }
}

// One rank: no sweep, only the profile, stored as a calibration with its profile and optimizer rows.
TEST(CalibrationRun, OneRankStoresTheProfileOnly) {
  const std::string db = (std::filesystem::temp_directory_path() / "dsgd_test_calibration_run.db").string();
  std::filesystem::remove(db);
  {
    Store store = Store::open(db);
    std::unique_ptr<Communicator> self = communicator_create_self();
    CalibrationRequest request;
    request.sweep.sizes = {4, 16};
    request.model.workload = "svm";
    request.model.dataset = "synthetic:n=200,d=20,classes=2,test=20";
    request.batches = {8, 16};
    request.profile_iters = 2;
    request.config = {{"by", "test"}};
    ComputeProfileSetup setup = compute_profile_setup(request.model, request.batches);
    Recorder seen;
    const CalibrationResult result = calibration_run(request, setup, *self, &store, seen);
    EXPECT_GT(result.id, 0);
    EXPECT_TRUE(result.collectives.empty());
    EXPECT_TRUE(result.fits.empty());
    const std::vector<ProfileRow> stored = store.profiles_get(result.id);
    ASSERT_EQ(stored.size(), result.profiles.size());
    EXPECT_EQ(stored.size(), 2u * setup.workload->layers().size());
    EXPECT_EQ(stored.front().batch, 8);
    EXPECT_EQ(stored.back().batch, 16);
    // Each batch's spread is stored with its rows (the same on every layer row of a batch).
    for (size_t i = 0; i < stored.size(); ++i) {
      EXPECT_FALSE(std::isnan(stored[i].spread)) << i;
      EXPECT_GE(stored[i].spread, 0.0) << i;
      EXPECT_EQ(stored[i].spread, result.profiles[i].spread) << i;
    }
    // One step of each optimizer, stored, and charged by the simulator as the opt phase of a run
    // of the same workload and dataset whose optimizer it is (diloco: AdamW).
    // And one model pass, which the simulator charges per pass of a gossip variant.
    const std::vector<OptimizerProfileRow> opts = optimizer_profiles_get(store, result.id);
    ASSERT_EQ(opts.size(), 4u);
    double adamw = 0, pass = 0;
    for (const OptimizerProfileRow& r : opts) {
      EXPECT_GT(r.opt_s, 0) << r.optimizer;
      EXPECT_EQ(r.params, static_cast<int64_t>(setup.workload->param_count()));
      if (r.optimizer == "adamw") adamw = r.opt_s;
      if (r.optimizer == kModelPassProfileKey) pass = r.opt_s;
    }
    EXPECT_GT(pass, 0);
    RunConfig cfg;
    cfg.workload = request.model.workload;
    cfg.dataset = request.model.dataset;
    cfg.batch = 16;
    cfg.algo = "diloco";
    EXPECT_EQ(compute_profile_optimizer_key(cfg), "adamw");
    const SimProfile p = sim_profile_resolve(cfg, &store, system_info_read().host, setup.workload->layers());
    EXPECT_EQ(p.cost.opt_s, adamw);
    EXPECT_EQ(p.cost.model_pass_s, pass);
    cfg.algo = "ssgd";
    cfg.momentum = 0.9;
    EXPECT_EQ(compute_profile_optimizer_key(cfg), "sgd+momentum");
  }
  std::filesystem::remove(db);
}

// A profile is keyed by the model's shape, not the workload's name alone: the default shapes
// keep the bare name (profiles stored before the key existed still apply), other shapes carry
// theirs, and a profile of one shape is never found for another.
// Two sweeps' all-reduce at the sizes both measured: the relative move over the faster of the
// two, its median and widest; other ops, sizes of one sweep only and unmeasured rows ignored.
TEST(CalibrationFabricMove, ComparesTheAllReduceAtTheSizesBothSweepsMeasured) {
  auto row = [](const char* op, int64_t bytes, double t) { return CollectiveRow{op, bytes, 1, t, t, t, 0, 0}; };
  const std::vector<CollectiveRow> before = {row("allreduce", 1024, 10e-6), row("allreduce", 2048, 20e-6),
                                             row("allreduce", 4096, 40e-6), row("allreduce", 8192, 80e-6),
                                             row("sendrecv", 1024, 1e-6)};
  const std::vector<CollectiveRow> now = {row("allreduce", 1024, 11e-6), row("allreduce", 2048, 10e-6),
                                          row("allreduce", 4096, 44e-6), row("allreduce", 8192, 0),
                                          row("allreduce", 16384, 1e-3), row("sendrecv", 1024, 9e-6)};
  const FabricMove m = calibration_fabric_move(now, before);
  EXPECT_EQ(m.sizes, 3u);             // 1, 2 and 4 KiB: 8 KiB unmeasured now, 16 KiB not before
  EXPECT_NEAR(m.median, 0.1, 1e-12);  // moves 10 %, 100 %, 10 %
  EXPECT_NEAR(m.widest, 1.0, 1e-12);  // 2 KiB: 20 us then, 10 us now, over the faster
  EXPECT_EQ(m.widest_bytes, 2048);
  EXPECT_DOUBLE_EQ(m.widest_now_s, 10e-6);
  EXPECT_DOUBLE_EQ(m.widest_before_s, 20e-6);
  EXPECT_EQ(calibration_fabric_move(now, {row("sendrecv", 1024, 1e-6)}).sizes, 0u);
}

TEST(ComputeProfile, KeyedByTheModelShape) {
  RunConfig cfg;
  EXPECT_EQ(workload_profile_key(cfg), "svm");
  cfg.workload = "resnet";
  EXPECT_EQ(workload_profile_key(cfg), "resnet");
  cfg.model = "resnet20";
  EXPECT_EQ(workload_profile_key(cfg), "resnet");
  cfg.model = "resnet8";
  EXPECT_EQ(workload_profile_key(cfg), "resnet:resnet8");
  cfg = RunConfig{};
  cfg.workload = "transformer";
  EXPECT_EQ(workload_profile_key(cfg), "transformer");
  cfg.d_model = 128;
  EXPECT_EQ(workload_profile_key(cfg), "transformer:gpt,layers=4,d-model=128,heads=4,seq=128,vocab=256");
  cfg.workload = "nonesuch";
  EXPECT_THROW(workload_profile_key(cfg), InputError);

  const std::string db = (std::filesystem::temp_directory_path() / "dsgd_test_profile_key.db").string();
  std::filesystem::remove(db);
  {
    Store store = Store::open(db);
    RunConfig small;
    small.workload = "resnet";
    small.model = "resnet8";
    small.dataset = "synthetic:shape=3x8x8,classes=4,n=64,test=16";
    RunConfig base = small;
    base.model = "";
    const std::string host = system_info_read().host;
    EXPECT_EQ(compute_profile_missing(store, host, small, {4}), std::vector<int64_t>{4});
    compute_profile_store_new(store, small, {4}, 1, "test");
    EXPECT_TRUE(compute_profile_missing(store, host, small, {4}).empty());
    EXPECT_EQ(compute_profile_missing(store, host, base, {4}), std::vector<int64_t>{4}) << "ResNet-20 is not ResNet-8";
    // The simulator reads it for ResNet-8 (its 10 layers) and refuses it for ResNet-20.
    DatasetPair data = dataset_load(small.dataset, 1);
    small.batch = base.batch = 4;
    const std::unique_ptr<Workload> w8 = workload_create(small, data.train), w20 = workload_create(base, data.train);
    const SimProfile p = sim_profile_resolve(small, &store, host, w8->layers());
    EXPECT_EQ(p.cost.bwd_layer_s.size(), w8->layers().size());
    EXPECT_GT(p.cost.fwd_s, 0);
    EXPECT_THROW(sim_profile_resolve(base, &store, host, w20->layers()), InputError);
  }
  std::filesystem::remove(db);
}

// What makes a profile unfit to predict from: a wide or unknown spread, and a larger batch
// measured faster than a smaller one beyond their spreads.
TEST(ComputeProfile, WarningsNameNoisyAndInconsistentBatches) {
  auto rows = [](int64_t batch, double fwd, double bwd, double spread) {
    std::vector<ProfileRow> r(2);
    for (int64_t l = 0; l < 2; ++l) {
      r[static_cast<size_t>(l)] = ProfileRow{"svm", "d", batch, l, l == 0 ? "weights" : "bias", fwd / 2, bwd / 2};
      r[static_cast<size_t>(l)].spread = spread;
    }
    return r;
  };
  auto join = [](std::vector<std::vector<ProfileRow>> parts) {
    std::vector<ProfileRow> all;
    for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  // Consistent: larger batches slower, spreads narrow.
  EXPECT_TRUE(compute_profile_warnings(join({rows(16, 1e-5, 1e-5, 0.05), rows(32, 2e-5, 2e-5, 0.05)})).empty());
  // Within noise: batch 32 slightly faster than 16, by less than 10 %.
  EXPECT_TRUE(compute_profile_warnings(join({rows(16, 1e-5, 1e-5, 0.02), rows(32, 0.95e-5, 0.95e-5, 0.02)})).empty());
  // Batch 16 measured 2x slower than batch 32 (the shape of the bias that hurt small batches).
  const auto inverted = compute_profile_warnings(join({rows(16, 4e-5, 4e-5, 0.05), rows(32, 2e-5, 2e-5, 0.05)}));
  ASSERT_EQ(inverted.size(), 1u);
  EXPECT_NE(inverted[0].find("batch 32 measured faster than batch 16"), std::string::npos) << inverted[0];
  // A wide spread, and an unknown one (a profile stored before spreads were).
  const auto noisy = compute_profile_warnings(rows(64, 1e-4, 1e-4, 0.8));
  ASSERT_EQ(noisy.size(), 1u);
  EXPECT_NE(noisy[0].find("batch 64: iterations spread 80 %"), std::string::npos) << noisy[0];
  const auto unknown = compute_profile_warnings(rows(64, 1e-4, 1e-4, std::nan("")));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find("spread is unknown"), std::string::npos) << unknown[0];
}

// The tuner's check: for each batch the newest calibration that has it (as the simulator
// picks), batch scaling checked across calibrations, the calibrations named.
TEST(ComputeProfile, StoredWarningsTakeEachBatchFromItsNewestCalibration) {
  const std::string db = (std::filesystem::temp_directory_path() / "dsgd_test_profile_warnings.db").string();
  std::filesystem::remove(db);
  {
    Store store = Store::open(db);
    RunConfig model;
    model.workload = "svm";
    model.dataset = "d";
    const std::string host = system_info_read().host;
    auto calibration = [&](std::vector<std::tuple<int64_t, double, double>> batches) {
      CalibrationRecord rec;
      rec.host = host;
      rec.workers = 1;
      rec.config_json = "{}";
      const int64_t id = store.calibration_begin(rec);
      std::vector<ProfileRow> rows;
      for (const auto& [batch, seconds, spread] : batches)
        for (int64_t l = 0; l < 2; ++l) {
          rows.push_back(ProfileRow{"svm", "d", batch, l, l == 0 ? "weights" : "bias", seconds / 4, seconds / 4});
          rows.back().spread = spread;
        }
      store.profiles_append(id, rows);
      return id;
    };
    EXPECT_TRUE(compute_profile_warnings_stored(store, host, model, {16, 32}).empty()) << "no profile: nothing to say";
    // An old, noisy calibration of both batches, then a clean one of batch 16 that is 2x slower
    // than the old batch 32: batch 16 is taken from the new one, batch 32 from the old one.
    const int64_t old_id = calibration({{16, 1e-5, 0.9}, {32, 2e-5, 0.05}});
    const int64_t new_id = calibration({{16, 4e-5, 0.05}});
    const auto w = compute_profile_warnings_stored(store, host, model, {16, 32});
    ASSERT_EQ(w.size(), 1u) << (w.empty() ? "" : w[0]);
    EXPECT_NE(w[0].find("batch 32 measured faster than batch 16"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find(fmt::format("calibrations {}, {}", new_id, old_id)), std::string::npos) << w[0];
    // Batches outside the search are not checked: batch 16 alone is clean.
    EXPECT_TRUE(compute_profile_warnings_stored(store, host, model, {16}).empty());
    // Another host's profiles are not this one's.
    EXPECT_TRUE(compute_profile_warnings_stored(store, host + "-other", model, {16, 32}).empty());
  }
  std::filesystem::remove(db);
}

TEST(CalibrationPlan, TheModelsSizeJoinsTheOctavesInOrderOnceWithinTheRange) {
  CalibrationOptions o;
  o.min_size = "4";
  o.max_size = "64KiB";
  CalibrationPlan plan = calibration_plan_make(o);
  const size_t octaves = plan.sweep.sizes.size();
  calibration_plan_add_model_size(plan, 31400);
  ASSERT_EQ(plan.sweep.sizes.size(), octaves + 1);
  EXPECT_TRUE(std::is_sorted(plan.sweep.sizes.begin(), plan.sweep.sizes.end()));
  EXPECT_NE(std::find(plan.sweep.sizes.begin(), plan.sweep.sizes.end(), 31400), plan.sweep.sizes.end());
  EXPECT_EQ(plan.model_bytes, 31400);
  // An octave already swept: recorded, not swept twice.
  CalibrationPlan octave = calibration_plan_make(o);
  calibration_plan_add_model_size(octave, 32768);
  EXPECT_EQ(octave.sweep.sizes.size(), octaves);
  EXPECT_EQ(octave.model_bytes, 32768);
  // A size beyond the range, one that is not whole floats: neither.
  for (const int64_t bytes : {int64_t(1) << 20, int64_t(31402)}) {
    CalibrationPlan p = calibration_plan_make(o);
    calibration_plan_add_model_size(p, bytes);
    EXPECT_EQ(p.sweep.sizes.size(), octaves) << bytes;
    EXPECT_EQ(p.model_bytes, 0) << bytes;
  }
}

}  // namespace
}  // namespace dsgd
