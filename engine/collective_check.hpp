// Agreement on failure across ranks: every rank runs a fallible phase (setup), then all
// agree whether any failed, so no rank is left waiting in a collective for a peer that
// threw. The failing rank rethrows its own error (and prints it); the others throw
// PeerFailed, which main reports quietly.
#pragma once

#include <exception>

#include "cluster/communicator.hpp"
#include "core/errors.hpp"

namespace dsgd {

class PeerFailed : public Error {
 public:
  PeerFailed() : Error("another rank failed (see its message)") {}
};

// Collective. Rethrows `local` if set (on rank 0 only when all ranks failed); otherwise
// throws PeerFailed if any rank failed.
void collective_check(Communicator& comm, const std::exception_ptr& local);

}  // namespace dsgd
