// A test communicator of `size` ranks (this process is rank 0) whose collectives do
// nothing: it implements only the operations every backend must (not the sharded,
// point-to-point or one-sided ones, which keep their throwing defaults), so tests can see
// the Communicator base class's own behaviour (recording, emulation holds, defaults). A test
// whose ranks must exchange something derives from it and overrides those operations.
#pragma once

#include <cstdlib>
#include <string>

#include "cluster/communicator.hpp"

namespace dsgd::testing {

class NullCommunicator : public Communicator {
 public:
  explicit NullCommunicator(int size = 1, std::string name = "null", int rank = 0)
      : rank_(rank), size_(size), name_(std::move(name)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return name_; }
  std::string library_version() const override { return "none"; }
  int ranks_on_this_host() const override { return size_; }
  void untimed_allreduce_sum(double*, size_t) override {}
  void untimed_allreduce_sum(float*, size_t) override {}
  void untimed_allreduce_max(double*, size_t) override {}
  void untimed_gather(const double*, size_t, double*, int) override {}
  void untimed_broadcast(double*, size_t, int) override {}
  void untimed_send(const double*, size_t, int) override {}
  void untimed_recv(double*, size_t, int) override {}
  void untimed_barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }

 protected:
  void do_allreduce_sum(BufferView) override {}
  void do_broadcast(BufferView, int) override {}
  void do_barrier() override {}
  int do_iallreduce_sum_start(BufferView) override { return 0; }
  bool do_test(int) override { return true; }
  void do_wait(int) override {}

 private:
  int rank_;
  int size_;
  std::string name_;
};

}  // namespace dsgd::testing
