// Fuzz target: the CIFAR-10 binary loader (workloads/datasets/cifar10.cpp) through its spec
// `cifar10:DIR`. DIR holds the six files the loader wants; the first byte picks which one
// (low 3 bits: 0-4 data_batch_1..5.bin, 5 test_batch.bin, 6-7 none) holds the rest of the
// input, and bit 3 removes the test batch. Every other file holds one valid record, so the
// loader reaches the fuzzed file whatever it is.
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "workloads/datasets/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] & 7;
  const bool no_test = (data[0] & 8) != 0;
  const std::string dir = dsgd_fuzz::temp_path("cifar");
  ::mkdir(dir.c_str(), 0700);
  // One valid record: label 3, pixels 0..255 repeating.
  std::vector<uint8_t> record(1 + 3 * 32 * 32);
  record[0] = 3;
  for (size_t i = 1; i < record.size(); ++i) record[i] = static_cast<uint8_t>(i);
  for (int f = 0; f < 6; ++f) {
    const std::string path = dir + "/" + (f < 5 ? "data_batch_" + std::to_string(f + 1) + ".bin" : "test_batch.bin");
    if (f == 5 && no_test) {
      std::filesystem::remove(path);
      continue;
    }
    if (f == which)
      dsgd_fuzz::write_file(path, data + 1, size - 1);
    else
      dsgd_fuzz::write_file(path, record.data(), record.size());
  }
  dsgd_fuzz::refuse_ok([&] { (void)dsgd::dataset_load("cifar10:" + dir, 1); });
  return 0;
}
