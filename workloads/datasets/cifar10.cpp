// CIFAR-10 binary format loader (`cifar10:DIR`): DIR holds data_batch_1.bin .. data_batch_5.bin
// (train, 50000 images) and test_batch.bin (10000), as in cifar-10-binary.tar.gz's
// cifar-10-batches-bin/. Each record is 1 label byte (0..9) and 3072 pixel bytes, channel
// planar (1024 red, 1024 green, 1024 blue, rows top to bottom), which becomes one dense row of
// pixel/255 floats with image shape 3×32×32.
// Limits: the whole set is held in memory as float (600 MB for the full train set).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace {

constexpr size_t kCifarSide = 32;
constexpr size_t kCifarPixels = 3 * kCifarSide * kCifarSide;
constexpr size_t kCifarRecord = 1 + kCifarPixels;
constexpr int kCifarClasses = 10;
constexpr const char* kCifarHint =
    "cifar10:DIR needs data_batch_1.bin .. data_batch_5.bin and test_batch.bin (the cifar-10-batches-bin "
    "folder of the CIFAR-10 binary version)";

Dataset cifar_shell(const std::string& name) {
  Dataset ds;
  ds.name = name;
  ds.features = kCifarPixels;
  ds.classes = kCifarClasses;
  ds.channels = 3;
  ds.height = kCifarSide;
  ds.width = kCifarSide;
  return ds;
}

// Appends the records of one file to ds.
void cifar_read_file(const std::string& path, Dataset& ds) {
  struct Closer {
    void operator()(FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<FILE, Closer> f(std::fopen(path.c_str(), "rb"));
  if (!f) DSGD_THROW(InputError, kCifarHint, "{}: cannot open ({})", path, std::strerror(errno));
  std::error_code ec;
  const auto bytes = static_cast<size_t>(std::filesystem::file_size(path, ec));
  if (ec || bytes == 0 || bytes % kCifarRecord != 0) {
    DSGD_THROW(InputError, "the file is damaged or not the binary version of CIFAR-10",
               "{}: {} bytes is not a whole number of {}-byte records", path, bytes, kCifarRecord);
  }
  const size_t count = bytes / kCifarRecord;
  std::vector<unsigned char> raw(bytes);
  if (std::fread(raw.data(), 1, bytes, f.get()) != bytes) {
    DSGD_THROW(InputError, "the file is damaged; re-download it", "{}: short read", path);
  }
  const size_t base = ds.rows;
  ds.rows += count;
  ds.dense.resize(ds.rows * kCifarPixels);
  ds.labels.resize(ds.rows);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* rec = raw.data() + i * kCifarRecord;
    if (rec[0] >= kCifarClasses) {
      DSGD_THROW(InputError, "the file is damaged or not CIFAR-10 (CIFAR-100 has two label bytes)",
                 "{}: record {} has label {} (expected 0..9)", path, i, int(rec[0]));
    }
    ds.labels[base + i] = rec[0];
    float* dst = ds.dense.data() + (base + i) * kCifarPixels;
    for (size_t k = 0; k < kCifarPixels; ++k) dst[k] = static_cast<float>(rec[1 + k]) / 255.0f;
  }
}

}  // namespace

namespace detail {
std::vector<std::string> cifar10_files(const std::string& dir) {
  std::vector<std::string> files;
  for (int b = 1; b <= 5; ++b)
    files.push_back((std::filesystem::path(dir) / fmt::format("data_batch_{}.bin", b)).string());
  files.push_back((std::filesystem::path(dir) / "test_batch.bin").string());
  return files;
}

void cifar10_check_files(const std::string& dir) {
  for (const std::string& path : cifar10_files(dir)) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      DSGD_THROW(InputError, kCifarHint, "{}: no such file (dataset cifar10:{})", path, dir);
    }
  }
}
}  // namespace detail

DatasetPair dataset_read_cifar10(const std::string& dir) {
  detail::cifar10_check_files(dir);
  const std::vector<std::string> files = detail::cifar10_files(dir);
  DatasetPair pair;
  pair.train = cifar_shell("cifar10/train");
  pair.test = cifar_shell("cifar10/test");
  for (size_t i = 0; i + 1 < files.size(); ++i) cifar_read_file(files[i], pair.train);
  cifar_read_file(files.back(), pair.test);
  return pair;
}

}  // namespace dsgd
