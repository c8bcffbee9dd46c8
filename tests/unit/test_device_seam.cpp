// The device seam: buffer views, the host vector operations against the
// loops they replace (bit for bit, aliasing included), DeviceBuffer, the refusal of a view a
// backend or a workload cannot take, and every device-capable algorithm run with its model on
// the shadow device (tests/unit/shadow_device.hpp: memory the host cannot dereference) on two
// simulated workers, bit-identical to the same run on host memory; and the calibration sweep
// on device buffers through a device backend, equal to the host sweep.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/optimizer.hpp"
#include "cluster/sim_world.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/run_config.hpp"
#include "core/vector_ops.hpp"
#include "engine/calibration.hpp"
#include "error_text.hpp"
#include "grad_check.hpp"
#include "shadow_device.hpp"
#include "sim_ring_options.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

using namespace dsgd;
using dsgd::testing::error_of;
using dsgd::testing::kShadowDevice;
using dsgd::testing::normal_vector;
using dsgd::testing::ShadowCommunicator;
using dsgd::testing::ShadowDeviceScope;

TEST(BufferView, SlicesAndHostViews) {
  std::vector<float> x(10);
  const BufferView v = host_view(x.data(), x.size());
  EXPECT_EQ(v.bytes(), 40u);
  const BufferView s = v.slice(3, 4);
  EXPECT_EQ(s.f32(), x.data() + 3);
  EXPECT_EQ(s.count, 4u);
  EXPECT_TRUE(s.device.is_host());
  EXPECT_EQ(s.host_f32("test"), x.data() + 3);
  const BufferView d = device_view(x.data(), 10, Device{DeviceKind::device_cuda, 1});
  EXPECT_EQ(device_name(d.device), "cuda:1");
  const std::string msg = error_of([&] { d.host_f32("top-k selection"); });
  EXPECT_NE(msg.find("top-k selection: given float32 memory on cuda:1"), std::string::npos) << msg;
  std::vector<double> y(3);
  EXPECT_EQ(host_view(y.data(), 3).bytes(), 24u);
}

// Each host operation against the loop the algorithms had inline (the naive reference), on
// the same inputs, compared bit for bit; the output aliased to an input as the algorithms do.
TEST(VectorOps, HostOperationsMatchTheirLoopsBitForBit) {
  const size_t n = 1003;  // not a multiple of any vector width
  VectorOps& ops = vector_ops_host();
  const std::vector<float> a0 = normal_vector(n, 1), b0 = normal_vector(n, 2), c0 = normal_vector(n, 3);
  auto check = [&](const char* what, auto op, auto loop) {
    std::vector<float> a = a0, b = b0, c = c0, ra = a0, rb = b0, rc = c0;
    op(host_view(a.data(), n), host_view(b.data(), n), host_view(c.data(), n));
    loop(ra.data(), rb.data(), rc.data());
    EXPECT_EQ(a, ra) << what;
    EXPECT_EQ(b, rb) << what;
  };
  const float s = 0.37f, t = 0.63f;
  check(
      "fill", [&](BufferView x, BufferView, BufferView) { ops.fill(x, s); },
      [&](float* x, float*, float*) {
        for (size_t i = 0; i < n; ++i) x[i] = s;
      });
  check(
      "scale", [&](BufferView x, BufferView, BufferView) { ops.scale(x, s); },
      [&](float* x, float*, float*) {
        for (size_t i = 0; i < n; ++i) x[i] *= s;
      });
  check(
      "scale_copy", [&](BufferView y, BufferView x, BufferView) { ops.scale_copy(y, s, x); },
      [&](float* y, float* x, float*) {
        for (size_t i = 0; i < n; ++i) y[i] = s * x[i];
      });
  check(
      "axpy", [&](BufferView y, BufferView x, BufferView) { ops.axpy(y, s, x); },
      [&](float* y, float* x, float*) {
        for (size_t i = 0; i < n; ++i) y[i] += s * x[i];
      });
  check(
      "scale_add", [&](BufferView y, BufferView x, BufferView) { ops.scale_add(y, s, x); },
      [&](float* y, float* x, float*) {
        for (size_t i = 0; i < n; ++i) y[i] = s * y[i] + x[i];
      });
  check(
      "blend", [&](BufferView y, BufferView x, BufferView) { ops.blend(y, t, s, x); },
      [&](float* y, float* x, float*) {
        for (size_t i = 0; i < n; ++i) y[i] = t * y[i] + s * x[i];
      });
  check(
      "add", [&](BufferView o, BufferView a, BufferView b) { ops.add(o, a, b); },
      [&](float* o, float* a, float* b) {
        for (size_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
      });
  check(
      "add aliased", [&](BufferView o, BufferView, BufferView b) { ops.add(o, o, b); },
      [&](float* o, float*, float* b) {
        for (size_t i = 0; i < n; ++i) o[i] += b[i];
      });
  check(
      "sub aliased", [&](BufferView o, BufferView a, BufferView) { ops.sub(o, a, o); },
      [&](float* o, float* a, float*) {
        for (size_t i = 0; i < n; ++i) o[i] = a[i] - o[i];
      });
  check(
      "copy", [&](BufferView o, BufferView a, BufferView) { ops.copy(o, a); },
      [&](float* o, float* a, float*) { std::copy(a, a + n, o); });
  check(
      "rebase", [&](BufferView x, BufferView a, BufferView b) { ops.rebase(x, a, b, false); },
      [&](float* x, float* a, float* b) {
        for (size_t i = 0; i < n; ++i) x[i] = a[i] + (x[i] - b[i]);
      });
  {  // only_changed keeps x exactly where the average equals the base
    std::vector<float> x = a0, avg = b0, base = c0;
    for (size_t i = 0; i < n; i += 3) avg[i] = base[i];
    std::vector<float> ref = x;
    for (size_t i = 0; i < n; ++i)
      if (avg[i] != base[i]) ref[i] = avg[i] + (ref[i] - base[i]);
    ops.rebase(host_view(x.data(), n), host_view(avg.data(), n), host_view(base.data(), n), true);
    EXPECT_EQ(x, ref);
    EXPECT_EQ(x[0], a0[0]);
  }
}

// The optimizer updates behind the seam equal the formulas of algorithms/optimizer.hpp,
// written out here as the reference (bit for bit).
TEST(VectorOps, OptimizerUpdatesMatchTheirFormulas) {
  const size_t n = 515;
  const std::vector<float> g = normal_vector(n, 4), x0 = normal_vector(n, 5);
  for (bool nesterov : {false, true}) {
    SgdOptimizer opt(SgdOptions{0.1, 0.9, 1e-3, nesterov}, n);
    std::vector<float> x = x0, rx = x0, v(n, 0.0f);
    for (int step = 0; step < 3; ++step) {
      opt.step(x.data(), g.data(), 0.05);
      const float lr = 0.05f, mu = 0.9f, wd = 1e-3f;
      for (size_t i = 0; i < n; ++i) {
        if (nesterov) {
          const float d = g[i] + wd * rx[i];
          v[i] = mu * v[i] + d;
          rx[i] -= lr * (d + mu * v[i]);
        } else {
          v[i] = mu * v[i] + g[i] + wd * rx[i];
          rx[i] -= lr * v[i];
        }
      }
    }
    EXPECT_EQ(x, rx) << "nesterov " << nesterov;
  }
  AdamWOptimizer adam(AdamWOptions{1e-3, 0.9, 0.999, 1e-8, 0.01}, n);
  std::vector<float> x = x0, rx = x0, m(n, 0.0f), v(n, 0.0f);
  for (int t = 1; t <= 3; ++t) {
    adam.step(x.data(), g.data(), 1e-3);
    const double c1 = 1.0 - std::pow(0.9, t), c2 = 1.0 - std::pow(0.999, t);
    const float step_size = static_cast<float>(1e-3 / c1), inv = static_cast<float>(1.0 / std::sqrt(c2));
    const float decay = static_cast<float>(1.0 - 1e-3 * 0.01);
    for (size_t i = 0; i < n; ++i) {
      m[i] = 0.9f * m[i] + (1.0f - 0.9f) * g[i];
      v[i] = 0.999f * v[i] + (1.0f - 0.999f) * g[i] * g[i];
      const float denom = std::sqrt(v[i]) * inv + 1e-8f;
      rx[i] = rx[i] * decay - step_size * m[i] / denom;
    }
  }
  EXPECT_EQ(x, rx);
}

TEST(VectorOps, RegistryAndDeviceBuffer) {
  EXPECT_EQ(&vector_ops_for(kHostDevice), &vector_ops_host());
  const std::string msg = error_of([] { vector_ops_for(Device{DeviceKind::device_cuda, 0}); });
  EXPECT_NE(msg.find("no vector operations for memory on cuda:0"), std::string::npos) << msg;
  DeviceBuffer b(kHostDevice, 100);
  ASSERT_EQ(b.size(), 100u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(b.data()[i], 0.0f);  // zero-filled
  std::vector<float> src = normal_vector(100, 9);
  DeviceBuffer c;
  c.assign_copy(host_view(src.data(), src.size()));
  EXPECT_EQ(std::vector<float>(c.data(), c.data() + 100), src);
  DeviceBuffer d = std::move(c);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(d.size(), 100u);
  {
    ShadowDeviceScope scope;
    DeviceBuffer s(kShadowDevice, 8);
    EXPECT_NE(s.data(), nullptr);
    std::vector<float> back(8, 1.0f);
    vector_ops_for(kShadowDevice).copy_to_host(back.data(), s.view());
    EXPECT_EQ(back, std::vector<float>(8, 0.0f));
  }
  EXPECT_THROW(vector_ops_for(kShadowDevice), Error);  // unregistered with the scope
}

// A backend refuses memory it cannot take, with the backend and the device named; the host
// backends take host memory only.
TEST(Communicator, RefusesViewsOnADeviceItDoesNotSupport) {
  ShadowDeviceScope scope;
  auto self = communicator_create_self();
  DeviceBuffer x(kShadowDevice, 16);
  const std::string msg = error_of([&] { self->allreduce_average(x.view()); });
  EXPECT_NE(msg.find("allreduce: backend self does not take buffers on test:0"), std::string::npos) << msg;
  std::vector<double> d(4);
  EXPECT_NE(error_of([&] {
              self->allreduce_sum(BufferView{d.data(), 4, DType::dtype_f64, kHostDevice});
            }).find("float64 buffers are not supported"),
            std::string::npos);
  EXPECT_FALSE(self->supports_device(Device{DeviceKind::device_cuda, 0}));
  EXPECT_TRUE(self->supports_device(kHostDevice));
}

TEST(Workload, RefusesParametersOnAnotherDevice) {
  ShadowDeviceScope scope;
  RunConfig cfg;
  const DatasetPair data = dataset_load("synthetic:n=40,d=5,classes=2,test=8", 1);
  auto w = workload_create(cfg, data.train);
  DeviceBuffer x(kShadowDevice, w->param_count());
  const std::string msg = error_of([&] { w->init_params(x.view(), 1); });
  EXPECT_NE(msg.find("parameters on test:0, but the workload computes on host"), std::string::npos) << msg;
  std::vector<float> short_params(w->param_count() - 1);
  EXPECT_NE(error_of([&] { w->forward(host_view(short_params.data(), short_params.size())); }).find("floats given"),
            std::string::npos);
}

namespace {

// Final parameters of every rank after `steps` steps of cfg's algorithm on two simulated
// workers, with the model and the algorithm's state on `device` (host or the shadow device).
// The gradient is a fixed function of the parameters (computed on a host copy), so the runs
// differ only in where the memory is.
std::vector<std::vector<float>> run_on(const RunConfig& cfg, Device device, int64_t steps, const DatasetPair& data) {
  const int n = 2;
  SimWorld world(sim_ring_options(n, 1e-5, 1e9));
  std::vector<std::vector<float>> out(n);
  world.run([&](int r) {
    Communicator& sim = world.comm(r);
    ShadowCommunicator shadow(sim);
    Communicator& comm = device.is_host() ? sim : shadow;
    auto workload = workload_create(cfg, data.train);
    const size_t count = workload->param_count();
    VectorOps& vec = vector_ops_for(device);
    DeviceBuffer params(device, count), grads(device, count);
    std::vector<float> hp(count), hg(count);
    workload->init_params(hp.data(), cfg.seed);
    vec.copy_from_host(params.view(), hp.data());
    auto opt = optimizer_create(cfg, count, n, device);
    auto algo = algorithm_create(cfg.algo, cfg);
    TrainState s{comm, *workload, *opt, params.data(), grads.data(), count, 0, steps};
    s.device = device;
    algo->setup(s);
    const size_t layers = workload->layers().size();
    for (int64_t t = 0; t < steps; ++t) {
      s.step = t;
      s.lr = cfg.lr;
      vec.copy_to_host(hp.data(), params.view());
      for (size_t i = 0; i < count; ++i) hg[i] = std::sin(3.0f * hp[i] + 0.01f * float(i) + float(r));
      vec.copy_from_host(grads.view(), hg.data());
      for (size_t l = layers; l-- > 0;) algo->on_layer_grad_ready(s, l);
      algo->reduce_gradients(s);
      if (algo->owns_optimizer())
        algo->optimizer_step(s);
      else
        opt->step(s.params, s.grads, s.lr);
      algo->after_update(s);
    }
    out[static_cast<size_t>(r)].resize(count);
    vec.copy_to_host(out[static_cast<size_t>(r)].data(), params.view());
  });
  return out;
}

}  // namespace

// What makes the next test able to fail: host code that reads the shadow device's memory
// directly (as a variant's plain loop over state.params would) crashes.
TEST(DeviceSeamDeathTest, HostAccessToShadowMemoryCrashes) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The crash is the point; under a sanitizer it is also a report, which fails scripts/sanitize.sh.
  GTEST_SKIP() << "the expected crash would be a sanitizer report";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ShadowDeviceScope scope;
        DeviceBuffer b(kShadowDevice, 4);
        volatile float v = b.data()[1];
        (void)v;
      },
      "");
}

// Every variant whose math goes through the seam (all but adpsgd, ps and zero --zero-bits 4,
// which are host-only and refused on a device backend) gives the same floats with its model
// on the shadow device as on the host: no host code dereferenced device memory (it would
// crash), and the operations are the same.
TEST(DeviceSeam, EveryDeviceCapableAlgorithmMatchesItsHostRunBitForBit) {
  ShadowDeviceScope scope;
  const DatasetPair data = dataset_load("synthetic:n=40,d=30,classes=3,test=8", 1);
  struct Case {
    const char* name;
    void (*set)(RunConfig&);
  };
  const Case cases[] = {
      {"ssgd", [](RunConfig& c) { c.algo = "ssgd"; }},
      {"ssgd --overlap", [](RunConfig& c) { c.algo = "ssgd", c.overlap = true, c.bucket_mb = 0; }},
      {"localsgd post-local", [](RunConfig& c) { c.algo = "localsgd", c.period = 2, c.post_local = 2; }},
      {"diloco (adamw inner)", [](RunConfig& c) { c.algo = "diloco", c.period = 2; }},
      {"cocod", [](RunConfig& c) { c.algo = "cocod", c.period = 2; }},
      {"dasgd", [](RunConfig& c) { c.algo = "dasgd", c.period = 3, c.delay = 1; }},
      {"overlap-local",
       [](RunConfig& c) { c.algo = "overlap-local", c.period = 2, c.pull_alpha = 0.5, c.slow_momentum = 0.5; }},
      {"dpsgd", [](RunConfig& c) { c.algo = "dpsgd", c.topology = "ring"; }},
      {"dpsgd --dpsgd-delay 1", [](RunConfig& c) { c.algo = "dpsgd", c.topology = "ring", c.dpsgd_delay = 1; }},
      {"dreamddp", [](RunConfig& c) { c.algo = "dreamddp", c.period = 2; }},
      {"zero", [](RunConfig& c) { c.algo = "zero"; }},
  };
  for (const Case& k : cases) {
    RunConfig cfg;
    cfg.lr = 0.05;
    cfg.momentum = 0.9;
    cfg.weight_decay = 1e-3;
    k.set(cfg);
    if (optimizer_resolve_name(cfg) == "adamw") cfg.momentum = 0;
    const int calls_before = scope.ops.calls;
    const auto host = run_on(cfg, kHostDevice, 7, data);
    const auto device = run_on(cfg, kShadowDevice, 7, data);
    EXPECT_GT(scope.ops.calls, calls_before) << k.name;  // its math ran on the device
    ASSERT_EQ(host.size(), device.size());
    for (size_t r = 0; r < host.size(); ++r) EXPECT_EQ(device[r], host[r]) << k.name << ", rank " << r;
    EXPECT_NE(host[0], std::vector<float>(host[0].size(), 0.0f)) << k.name;
  }
}

// The host-only parts are refused with a clear error (no crash) when handed device memory.
TEST(DeviceSeam, HostOnlyAlgorithmsRefuseDeviceMemory) {
  ShadowDeviceScope scope;
  const DatasetPair data = dataset_load("synthetic:n=40,d=30,classes=3,test=8", 1);
  RunConfig cfg;
  cfg.algo = "zero";
  cfg.zero_bits = 4;
  std::string msg = error_of([&] { run_on(cfg, kShadowDevice, 2, data); });
  EXPECT_NE(msg.find("zero --zero-bits 4: given float32 memory on test:0"), std::string::npos) << msg;
  cfg = RunConfig{};
  cfg.algo = "ssgd";
  cfg.compress = "topk:0.5";
  msg = error_of([&] { run_on(cfg, kShadowDevice, 2, data); });
  EXPECT_NE(msg.find("ssgd --compress: given float32 memory on test:0"), std::string::npos) << msg;
}

namespace {

struct QuietObserver final : CalibrationObserver {};

std::vector<CollectiveRow> sweep_on(Device device) {
  CalibrationSweepPlan plan;
  plan.sizes = {4096, 65536};
  plan.reps = 2;
  plan.ops = {"allreduce", "allreduce_mpi", "reduce_scatter", "allgather", "broadcast", "sendrecv"};
  plan.device = device;
  SimWorld world(sim_ring_options(2, 1e-5, 1e9));
  std::vector<std::vector<CollectiveRow>> rows(2);
  world.run([&](int r) {
    ShadowCommunicator shadow(world.comm(r));
    Communicator& comm = device.is_host() ? static_cast<Communicator&>(world.comm(r)) : shadow;
    QuietObserver quiet;
    rows[static_cast<size_t>(r)] = calibration_sweep(plan, comm, quiet);
  });
  return rows[0];
}

}  // namespace

// The calibration's sweep allocates its buffers on the plan's device (the backend row's) and
// runs every collective through the Communicator: on the shadow device, through a backend that
// takes it, it measures what the host sweep measures (the simulator's virtual times).
TEST(DeviceSeam, CalibrationSweepRunsOnDeviceBuffers) {
  ShadowDeviceScope scope;
  const auto host = sweep_on(kHostDevice);
  const auto device = sweep_on(kShadowDevice);
  ASSERT_EQ(host.size(), device.size());
  ASSERT_FALSE(host.empty());
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(device[i].op, host[i].op);
    EXPECT_EQ(device[i].bytes, host[i].bytes);
    EXPECT_DOUBLE_EQ(device[i].time_s, host[i].time_s) << host[i].op << " " << host[i].bytes;
  }
  // The bare row takes no virtual time on sim (untimed), so it is left out on both.
  for (const CollectiveRow& r : host) EXPECT_NE(r.op, "allreduce_mpi");
  // A backend that takes host memory only refuses the device sweep, naming the device.
  CalibrationSweepPlan plan;
  plan.sizes = {4096};
  plan.ops = {"allreduce"};
  plan.device = kShadowDevice;
  SimWorld world(sim_ring_options(2, 1e-5, 1e9));
  std::string msg;
  try {
    world.run([&](int r) {
      QuietObserver quiet;
      calibration_sweep(plan, world.comm(r), quiet);
    });
  } catch (const std::exception& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("backend sim does not take buffers on test:0"), std::string::npos) << msg;
}
