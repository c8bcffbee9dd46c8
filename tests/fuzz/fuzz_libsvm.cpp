// Fuzz target: the LIBSVM/SVMlight loader (workloads/datasets/libsvm.cpp), on a file (plain
// or, when the bytes are gzip, compressed) and as a train/test pair split at the first
// 0xFF byte.
#include <algorithm>

#include "fuzz_common.hpp"
#include "workloads/datasets/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dsgd_fuzz::write_temp("libsvm", data, size);
  dsgd_fuzz::refuse_ok([&] { (void)dsgd::dataset_read_libsvm(path); });
  const uint8_t* split = std::find(data, data + size, uint8_t{0xFF});
  if (split != data + size) {
    const std::string train = dsgd_fuzz::write_temp("libsvm_train", data, static_cast<size_t>(split - data));
    const std::string test =
        dsgd_fuzz::write_temp("libsvm_test", split + 1, static_cast<size_t>(data + size - split - 1));
    dsgd_fuzz::refuse_ok([&] { (void)dsgd::dataset_load("libsvm:" + train + ",test=" + test, 1); });
  }
  return 0;
}
