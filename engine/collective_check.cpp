// See collective_check.hpp.
#include "engine/collective_check.hpp"

namespace dsgd {

void collective_check(Communicator& comm, const std::exception_ptr& local) {
  double failed = local ? 1.0 : 0.0;
  comm.untimed_allreduce_sum(&failed, 1);
  // When every rank failed (the usual case: the same bad input everywhere) only rank 0
  // reports, so the user sees one message.
  const bool everyone = failed >= static_cast<double>(comm.size());
  if (local && (!everyone || comm.rank() == 0)) std::rethrow_exception(local);
  if (failed > 0) throw PeerFailed();
}

}  // namespace dsgd
