// --compress parsing (see compressor.hpp for the kinds) and the phase driver shared by the
// blocking and non-blocking forms of every compressor.
#include "algorithms/compress/compressor.hpp"

#include <cmath>
#include <cstring>

#include "cluster/backends.hpp"
#include "core/errors.hpp"

namespace dsgd {

void GradientCompressor::allreduce_average(Communicator& comm, float* data, size_t count, int64_t step) {
  if (in_flight())
    DSGD_THROW(Error, "this is a bug: finish() the non-blocking aggregation first", "{}: aggregation in flight",
               name());
  for (int k = 0; k < phases(); ++k) {
    const PhaseCollective c = phase(k, data, count, step);
    if (c.peers) {
      comm.neighbor_exchange(c.buffer, c.count, c.peers, c.n_peers, c.recv);
    } else if (c.allgather) {
      comm.allgather(c.buffer, c.count);
    } else {
      comm.allreduce_average(c.buffer, c.count);
    }
  }
  decode(data, count);
}

void GradientCompressor::launch(Communicator& comm, const PhaseCollective& c) {
  if (c.peers) {
    comm.ineighbor_exchange(c.buffer, c.count, c.peers, c.n_peers, c.recv, request_);
  } else if (c.allgather) {
    comm.iallgather(c.buffer, c.count, request_);
  } else {
    comm.iallreduce_average(c.buffer, c.count, request_);
  }
}

void GradientCompressor::start(Communicator& comm, float* data, size_t count, int64_t step) {
  if (in_flight())
    DSGD_THROW(Error, "this is a bug: finish() the non-blocking aggregation first", "{}: aggregation in flight",
               name());
  data_ = data;
  count_ = count;
  step_ = step;
  phase_ = 0;
  launch(comm, phase(0, data, count, step));
}

bool GradientCompressor::advance(Communicator& comm) {
  if (!in_flight() || phase_ + 1 >= phases()) return false;
  comm.wait(request_);
  ++phase_;
  launch(comm, phase(phase_, data_, count_, step_));
  return true;
}

void GradientCompressor::finish(Communicator& comm, double compute_end) {
  if (!in_flight()) return;
  while (advance(comm)) {
  }
  comm.wait(request_, compute_end);
  decode(data_, count_);
  data_ = nullptr;
}

float compress_word_to_float(uint32_t w) {
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

uint32_t compress_float_to_word(float f) {
  uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  return w;
}

namespace {

constexpr const char* kUsage = "write --compress topk:0.01 | qsgd:bits=4 | powersgd:rank=2 | adatopk:budget=0.01";

// "topk:0.01", "topk:ratio=0.01" → the number after the optional "key=".
double parse_value(const std::string& spec, const std::string& rest, const char* key) {
  std::string text = rest;
  const std::string prefix = std::string(key) + "=";
  if (text.compare(0, prefix.size(), prefix) == 0) text = text.substr(prefix.size());
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v))
    DSGD_THROW(InputError, kUsage, "--compress {}: '{}' is not a number for {}", spec, rest, key);
  return v;
}

}  // namespace

std::unique_ptr<GradientCompressor> compressor_create(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "topk") {
    const double ratio = parse_value(spec, rest, "ratio");
    if (!(ratio > 0 && ratio <= 1))
      DSGD_THROW(InputError, "pass a ratio in (0, 1], e.g. topk:0.01", "--compress {}: ratio must be in (0, 1]", spec);
    return compressor_create_topk(ratio);
  }
  if (kind == "qsgd") {
    const double bits = parse_value(spec, rest, "bits");
    if (!(bits == 32 || (bits >= 2 && bits <= 16 && bits == std::floor(bits))))
      DSGD_THROW(InputError, "pass bits in 2..16, or 32 for no quantisation", "--compress {}: bad number of bits",
                 spec);
    return compressor_create_qsgd(static_cast<int>(bits), 512);
  }
  if (kind == "powersgd") {
    const double rank = parse_value(spec, rest, "rank");
    if (!(rank >= 1 && rank <= 1024 && rank == std::floor(rank)))
      DSGD_THROW(InputError, "pass a rank in 1..1024, e.g. powersgd:rank=2", "--compress {}: bad rank", spec);
    return compressor_create_powersgd(static_cast<int>(rank));
  }
  if (kind == "adatopk") {
    const double budget = parse_value(spec, rest, "budget");
    if (!(budget > 0 && budget <= 1))
      DSGD_THROW(InputError, "pass the fraction kept on the fastest link in (0, 1], e.g. adatopk:budget=0.01",
                 "--compress {}: budget must be in (0, 1]", spec);
    return compressor_create_adatopk(budget);
  }
  DSGD_THROW(InputError, kUsage, "--compress {}: unknown compressor '{}'", spec, kind);
}

uint32_t compressor_backend_needs(const std::string& spec) {
  const std::string kind = spec.substr(0, spec.find(':'));
  return kind == "topk" || kind == "qsgd" || kind == "adatopk" ? cap_sharded_collectives
                                                               : cap_none;  // their payloads are all-gathered
}

}  // namespace dsgd
