// palsgd's pull draw (algorithms/palsgd.cpp), exposed so tests can write the rule out.
#pragma once

#include <cstdint>

namespace dsgd {

// Whether worker `rank` pulls towards the last global model after step `step`: a uniform
// draw from (seed, rank, step) below p (never for p <= 0, always for p >= 1).
bool palsgd_pulls_at(uint64_t seed, int rank, int64_t step, double p);

}  // namespace dsgd
