// Fuzz target: the IDX reader (workloads/datasets/idx.cpp). The first byte (mod size) is
// where the images file ends and the labels file starts.
#include "fuzz_common.hpp"
#include "workloads/datasets/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t rest = size - 1;
  const size_t cut = rest == 0 ? 0 : data[0] % (rest + 1);
  const std::string images = dsgd_fuzz::write_temp("idx_images", data + 1, cut);
  const std::string labels = dsgd_fuzz::write_temp("idx_labels", data + 1 + cut, rest - cut);
  dsgd_fuzz::refuse_ok([&] { (void)dsgd::dataset_read_idx(images, labels); });
  return 0;
}
