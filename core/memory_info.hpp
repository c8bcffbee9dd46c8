// The memory this machine can give a run: MemAvailable of /proc/meminfo. Shared by the
// dataset loaders (refusing absurd dimensions before allocating) and the run's memory
// estimate (engine/memory_estimate.hpp). Linux only; elsewhere "unknown" (0).
#pragma once

namespace dsgd {

// Bytes available for new allocations without swapping (0: unknown).
double memory_available_bytes();

}  // namespace dsgd
