// The CUDA vector operations (core/cuda/vector_ops_cuda.*) against the host ones
// (core/vector_ops.cpp) on the same inputs, every operation: the same float expression per
// element, so they agree within 4 ε relative (nvcc contracts a·b + c into one FMA, the host
// build does not: ≤ 1 rounding per operation, ≤ 3 operations per element) plus 1e-7 absolute
// for results that cancel to ~0. Skips with one line without a usable GPU.
#include <gtest/gtest.h>

#include <vector>

#include "core/cuda/vector_ops_cuda.hpp"
#include "core/vector_ops.hpp"
#include "float_compare.hpp"
#include "gpu_test.hpp"
#include "grad_check.hpp"

namespace dsgd {
namespace {

constexpr double kRtol = 4 * testing::kFloatEps, kAtol = 1e-7;

struct Pair {
  std::vector<float> host;
  DeviceBuffer dev;
};

TEST(CudaVectorOps, EveryOperationMatchesTheHost) {
  DSGD_REQUIRE_GPU();
  CudaVectorOps& d = vector_ops_cuda();
  VectorOps& h = vector_ops_host();
  const Device cuda = d.device();
  EXPECT_EQ(&vector_ops_for(cuda), &d);  // registered for its device
  const size_t n = 1001;
  auto make = [&](uint64_t seed) {
    Pair p;
    p.host = testing::normal_vector(n, seed);
    p.dev.assign(cuda, n);
    d.copy_from_host(p.dev.view(), p.host.data());
    return p;
  };
  auto hv = [](std::vector<float>& v) { return host_view(v.data(), v.size()); };
  auto expect_same = [&](Pair& p, const char* what) {
    std::vector<float> got(n);
    d.copy_to_host(got.data(), p.dev.view());
    EXPECT_TRUE(testing::all_near_rel(got, p.host, kRtol, kAtol)) << what;
  };
  Pair x = make(1), y = make(2), z = make(3), out = make(4);
  h.fill(hv(out.host), 0.25f), d.fill(out.dev.view(), 0.25f), expect_same(out, "fill");
  h.scale(hv(x.host), 0.7f), d.scale(x.dev.view(), 0.7f), expect_same(x, "scale");
  h.scale_copy(hv(out.host), -1.5f, hv(y.host)), d.scale_copy(out.dev.view(), -1.5f, y.dev.view());
  expect_same(out, "scale_copy");
  h.axpy(hv(x.host), 0.3f, hv(y.host)), d.axpy(x.dev.view(), 0.3f, y.dev.view()), expect_same(x, "axpy");
  h.scale_add(hv(x.host), 0.9f, hv(z.host)), d.scale_add(x.dev.view(), 0.9f, z.dev.view());
  expect_same(x, "scale_add");
  h.blend(hv(y.host), 0.6f, 0.4f, hv(z.host)), d.blend(y.dev.view(), 0.6f, 0.4f, z.dev.view());
  expect_same(y, "blend");
  h.add(hv(out.host), hv(x.host), hv(y.host)), d.add(out.dev.view(), x.dev.view(), y.dev.view());
  expect_same(out, "add");
  h.sub(hv(out.host), hv(x.host), hv(y.host)), d.sub(out.dev.view(), x.dev.view(), y.dev.view());
  expect_same(out, "sub");
  for (bool only_changed : {false, true}) {
    // base equals avg on every third element: only_changed keeps x there exactly.
    std::vector<float> base = y.host;
    for (size_t i = 0; i < n; i += 3) base[i] = z.host[i];
    DeviceBuffer db(cuda, n);
    d.copy_from_host(db.view(), base.data());
    h.rebase(hv(x.host), hv(z.host), hv(base), only_changed);
    d.rebase(x.dev.view(), z.dev.view(), db.view(), only_changed);
    expect_same(x, only_changed ? "rebase only_changed" : "rebase");
  }
  for (const SgdUpdate u :
       {SgdUpdate{0.1f, 0.0f, 1e-3f, false}, SgdUpdate{0.1f, 0.9f, 1e-3f, false}, SgdUpdate{0.1f, 0.9f, 1e-3f, true}}) {
    Pair v = make(9);
    for (int step = 0; step < 3; ++step) {
      h.sgd_update(hv(x.host), hv(v.host), hv(y.host), u);
      d.sgd_update(x.dev.view(), v.dev.view(), y.dev.view(), u);
    }
    expect_same(x, "sgd_update x");
    if (u.momentum != 0) expect_same(v, "sgd_update velocity");
  }
  Pair m = make(11), v = make(12);
  for (auto& e : v.host) e = e * e;  // a second moment is non-negative
  d.copy_from_host(v.dev.view(), v.host.data());
  const AdamWUpdate u{0.9f, 0.999f, 1e-8f, 1.0f - 1e-4f, 1e-3f / 0.1f, 1.0f / 0.0447f};
  h.adamw_update(hv(x.host), hv(m.host), hv(v.host), hv(y.host), u);
  d.adamw_update(x.dev.view(), m.dev.view(), v.dev.view(), y.dev.view(), u);
  expect_same(x, "adamw x");
  expect_same(m, "adamw m");
  expect_same(v, "adamw v");
  // copy between device buffers
  d.copy(out.dev.view(), x.dev.view());
  out.host = x.host;
  expect_same(out, "copy");
}

}  // namespace
}  // namespace dsgd
