// Fuzz target: the byte-level text dataset (workloads/datasets/text.cpp) and its windowing.
#include "fuzz_common.hpp"
#include "workloads/datasets/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dsgd_fuzz::write_temp("text", data, size);
  dsgd_fuzz::refuse_ok([&] {
    dsgd::DatasetPair pair = dsgd::dataset_load("text:" + path, 1);
    dsgd::dataset_set_window(pair.train, 1 + (size % 64));
  });
  return 0;
}
