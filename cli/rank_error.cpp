// How a subcommand running on MPI ranks reports an error (shared by run and calibrate).
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace dsgd {

int cli_report_rank_error(const std::exception& e, Communicator& comm, bool abort_job, const std::string& extra) {
  const bool input = dynamic_cast<const InputError*>(&e) != nullptr;
  fmt::print(stderr, "dsgd-bench: error{}: {}\n", comm.size() > 1 ? fmt::format(" on rank {}", comm.rank()) : "",
             e.what());
  if (const auto* err = dynamic_cast<const Error*>(&e); err && !err->hint().empty())
    fmt::print(stderr, "  hint: {}\n", err->hint());
  if (!extra.empty()) fmt::print(stderr, "  {}\n", extra);
  std::fflush(stderr);
  // Peers may be inside a collective: stop the whole job. Give mpiexec's output forwarding
  // a moment first, or the message above can be lost in the abort.
  if (abort_job && comm.size() > 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    comm.abort(1);
  }
  return input ? 2 : 1;
}

}  // namespace dsgd
