// Stress test of the one-sided window's mutual exclusion (Communicator::window_lock), run under
// `mpiexec -n 2` (tests/unit_tests.cmake): every rank increments a counter held in a target
// window many times, each increment a read-modify-write epoch (lock, get, put version + 1 and
// a payload of that value, unlock). Targets: rank 1 only (rank 1 locks its own window, rank 0
// a remote one), then every rank in turn (each rank locks its own and the others' windows).
// Exact if and only if the lock excludes every other rank's epoch, the own rank's included:
// the final versions must add up to the number of increments (a lost update leaves fewer), and
// no read may see a payload that disagrees with the version read in the same epoch (torn).
// Also checks window_poll and that a window can be freed and created again. Ranks on one host
// take the shared-memory windows; DSGD_MPI_WINDOW=rma runs the same through MPI's one-sided
// operations (tests/unit_tests.cmake registers both).
// Exit 0: pass; 1: a check failed (printed by rank 0).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"

namespace {

int failures = 0;

void check(dsgd::Communicator& comm, bool ok, const std::string& what) {
  double bad = ok ? 0.0 : 1.0;
  comm.untimed_allreduce_max(&bad, 1);
  if (bad != 0.0) {
    ++failures;
    if (comm.rank() == 0) std::printf("FAIL: %s\n", what.c_str());
  } else if (comm.rank() == 0) {
    std::printf("ok: %s\n", what.c_str());
  }
  std::fflush(stdout);
}

// Every rank does `iters` increments on target(i); returns {increments, torn reads} summed.
template <class Target>
void hammer(dsgd::Communicator& comm, size_t count, int iters, Target target, const char* name) {
  const int n = comm.size(), me = comm.rank();
  comm.window_create(count);
  comm.untimed_barrier();
  std::vector<float> buf(count);
  double torn = 0;
  for (int i = 0; i < iters; ++i) {
    const int t = target(i);
    uint64_t v = 0;
    comm.window_lock(t);
    comm.window_get(buf.data(), count, t, &v);
    for (size_t j = 0; j < count; ++j)
      if (buf[j] != static_cast<float>(v)) {
        torn += 1;
        break;
      }
    for (auto& x : buf) x = static_cast<float>(v + 1);  // exact below 2^24
    comm.window_put(buf.data(), count, t, v + 1);
    comm.window_unlock(t);
  }
  comm.untimed_barrier();
  uint64_t v = 0;
  comm.window_lock(me);
  comm.window_get(buf.data(), count, me, &v);
  comm.window_unlock(me);
  double totals[2] = {double(v), torn};
  comm.untimed_allreduce_sum(totals, 2);
  const double want = double(n) * iters;
  check(comm, totals[0] == want,
        std::string(name) + ": " + std::to_string(int64_t(totals[0])) + " increments applied of " +
            std::to_string(int64_t(want)) + " (" + std::to_string(count) + " floats)");
  check(comm, totals[1] == 0, std::string(name) + ": " + std::to_string(int64_t(totals[1])) + " torn reads");
  comm.window_free();
}

bool at_least(const float*, uint64_t version, const void* ctx) {
  return version >= *static_cast<const uint64_t*>(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  auto comm = dsgd::communicator_create_world(&argc, &argv);
  const int n = comm->size(), me = comm->rank();
  if (n < 2) {
    std::printf("FAIL: run under mpiexec -n 2 (got %d rank)\n", n);
    return 1;
  }
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  for (size_t count : {size_t(4), size_t(3000)}) {
    hammer(
        *comm, count, iters, [](int) { return 1; }, "all ranks on rank 1's window");
    hammer(
        *comm, count, iters, [&](int i) { return (i + me) % n; }, "every rank on every window");
  }
  // window_poll: rank 0 waits until rank 1 has written version 50 in rank 0's window.
  comm->window_create(8);
  comm->untimed_barrier();
  std::vector<float> buf(8);
  bool poll_ok = true;
  if (me == 1) {
    for (uint64_t k = 1; k <= 50; ++k) {
      uint64_t v = 0;
      comm->window_lock(0);
      comm->window_get(buf.data(), 8, 0, &v);
      for (auto& x : buf) x = static_cast<float>(k);
      comm->window_put(buf.data(), 8, 0, k);
      comm->window_unlock(0);
    }
  } else if (me == 0) {
    const uint64_t want = 50;
    const uint64_t got = comm->window_poll(buf.data(), 8, 0, at_least, &want);
    poll_ok = got == 50 && buf[0] == 50.0f && buf[7] == 50.0f;
  }
  check(*comm, poll_ok, "window_poll waits for the wanted version and reads its data");
  comm->untimed_barrier();
  comm->window_free();
  if (me == 0) std::printf("%s\n", failures == 0 ? "PASS" : "FAILED");
  return failures == 0 ? 0 : 1;
}
