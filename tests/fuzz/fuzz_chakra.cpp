// Fuzz target: the Chakra trace reader (workloads/chakra_trace.cpp, a build with protobuf):
// the input is the trace file (plain; gzip when it starts with gzip's magic bytes).
#include "fuzz_common.hpp"
#include "workloads/chakra_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dsgd_fuzz::write_temp("chakra", data, size);
  dsgd_fuzz::refuse_ok([&] { (void)dsgd::chakra_trace_read(path); });
  return 0;
}
