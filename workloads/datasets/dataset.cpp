// Dataset specs: parses "prefix[:params]", dispatches to the loaders (idx.cpp, libsvm.cpp,
// synthetic.cpp), validates a spec without loading it, and lists the known datasets.
// Limits: a libsvm path may not contain a comma (the comma separates its parameters).
#include "workloads/datasets/dataset.hpp"

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.hpp"

namespace dsgd {

// Internal entry points of the loaders, defined in the files named beside them. They are
// declared here (not in dataset.hpp) because only the spec dispatcher uses them.
namespace detail {
// idx.cpp: Fashion-MNIST train/test from DIR (checks labels are in [0, 10)).
DatasetPair idx_load_fashion_mnist(const std::string& dir);
std::vector<std::string> idx_fashion_mnist_files(const std::string& dir);
// libsvm.cpp: a train file and an optional test file (empty: last 10 % of train), labels
// mapped over the union of both files; features_override 0 means "max index".
DatasetPair libsvm_load_pair(const std::string& train_path, const std::string& test_path, size_t features_override);
// synthetic.cpp: parses and checks the parameter list, throws InputError naming the parameter.
void synthetic_validate_params(const std::string& params);
// synthetic_images.cpp: `synthetic:shape=CxHxW,...` (the spec has a shape= parameter).
void synthetic_images_validate_params(const std::string& params);
// cifar10.cpp: throws InputError naming the first missing file.
void cifar10_check_files(const std::string& dir);
// text.cpp: byte-level text (fortunes, any file, a synthetic Markov language).
DatasetPair text_load_fortunes(const std::string& dir);
void text_validate_fortunes(const std::string& dir);
DatasetPair text_load_file(const std::string& path);
DatasetPair synthetic_text_make(const std::string& params, uint64_t seed);
void synthetic_text_validate_params(const std::string& params);
}  // namespace detail

namespace {

constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kFortunesDefaultDir = "/usr/share/games/fortunes";

struct SpecParts {
  std::string prefix;
  std::string rest;  // after the first ':' (empty when there is none)
};

SpecParts spec_split(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return {spec, {}};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// Synthetic images are asked for with a shape= parameter.
bool synthetic_is_images(const std::string& params) {
  return params.rfind("shape=", 0) == 0 || params.find(",shape=") != std::string::npos;
}

std::string cifar10_dir(const std::string& spec, const std::string& rest) {
  if (rest.empty()) {
    DSGD_THROW(InputError, "usage: cifar10:DIR (the folder with data_batch_1.bin .. test_batch.bin)",
               "dataset spec '{}': cifar10 needs a directory", spec);
  }
  return rest;
}

struct LibsvmSpec {
  std::string train_path;
  std::string test_path;
  size_t features = 0;  // 0: the largest index in the files
};

LibsvmSpec libsvm_parse_spec(const std::string& spec, const std::string& rest) {
  const std::string usage_hint = "usage: libsvm:TRAIN[,test=TEST][,features=D]";
  if (rest.empty()) {
    DSGD_THROW(InputError, usage_hint, "dataset spec '{}': libsvm needs a training file", spec);
  }
  LibsvmSpec out;
  size_t start = 0;
  bool first = true;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string::npos) comma = rest.size();
    const std::string item = rest.substr(start, comma - start);
    start = comma + 1;
    if (first) {
      out.train_path = item;
      first = false;
      if (item.empty()) {
        DSGD_THROW(InputError, usage_hint, "dataset spec '{}': empty training file path", spec);
      }
      continue;
    }
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    if (eq == std::string::npos || value.empty()) {
      DSGD_THROW(InputError, usage_hint, "dataset spec '{}': parameter '{}' needs a value (key=value)", spec, item);
    }
    if (key == "test") {
      out.test_path = value;
    } else if (key == "features") {
      size_t used = 0;
      unsigned long long d = 0;
      try {
        d = std::stoull(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || d == 0 || d > 0x7fffffffULL || value[0] == '-') {
        DSGD_THROW(InputError, "features must be a positive integer below 2^31",
                   "dataset spec '{}': bad value '{}' for parameter features", spec, value);
      }
      out.features = static_cast<size_t>(d);
    } else {
      DSGD_THROW(InputError,
                 "libsvm parameters are test= and features=", "dataset spec '{}': unknown libsvm parameter '{}'", spec,
                 key);
    }
  }
  return out;
}

void require_readable_file(const std::string& path, const std::string& spec) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    DSGD_THROW(InputError, "check the path in the dataset spec", "{}: no such file (dataset spec '{}')", path, spec);
  }
}

[[noreturn]] void throw_unknown_prefix(const std::string& spec, const std::string& prefix) {
  DSGD_THROW(InputError,
             "known datasets: fashion-mnist[:DIR], libsvm:TRAIN[,test=TEST][,features=D], "
             "synthetic[:n=N,d=D,...], synthetic:shape=CxHxW,classes=K, cifar10:DIR, "
             "fortunes[:DIR], text:PATH, synthetic-text[:n=N,...]",
             "dataset spec '{}': unknown dataset '{}'", spec, prefix);
}

}  // namespace

DatasetPair dataset_load(const std::string& spec, uint64_t seed) {
  const SpecParts parts = spec_split(spec);
  if (parts.prefix == "fashion-mnist") {
    return detail::idx_load_fashion_mnist(parts.rest.empty() ? kFashionMnistDefaultDir : parts.rest);
  }
  if (parts.prefix == "libsvm") {
    const LibsvmSpec ls = libsvm_parse_spec(spec, parts.rest);
    return detail::libsvm_load_pair(ls.train_path, ls.test_path, ls.features);
  }
  if (parts.prefix == "synthetic" && synthetic_is_images(parts.rest))
    return dataset_make_synthetic_images(parts.rest, seed);
  if (parts.prefix == "synthetic") return dataset_make_synthetic(parts.rest, seed);
  if (parts.prefix == "cifar10") return dataset_read_cifar10(cifar10_dir(spec, parts.rest));
  if (parts.prefix == "fortunes")
    return detail::text_load_fortunes(parts.rest.empty() ? kFortunesDefaultDir : parts.rest);
  if (parts.prefix == "text") return detail::text_load_file(parts.rest);
  if (parts.prefix == "synthetic-text") return detail::synthetic_text_make(parts.rest, seed);
  throw_unknown_prefix(spec, parts.prefix);
}

bool dataset_depends_on_seed(const std::string& spec) {
  const SpecParts parts = spec_split(spec);
  return parts.prefix == "synthetic" || parts.prefix == "synthetic-text";
}

void dataset_validate_spec(const std::string& spec) {
  const SpecParts parts = spec_split(spec);
  if (parts.prefix == "fashion-mnist") {
    const std::string dir = parts.rest.empty() ? kFashionMnistDefaultDir : parts.rest;
    for (const std::string& path : detail::idx_fashion_mnist_files(dir)) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec)) {
        DSGD_THROW(InputError,
                   "install the Debian package dataset-fashion-mnist, or pass fashion-mnist:DIR "
                   "with the four *-ubyte.gz files",
                   "{}: no such file (dataset spec '{}')", path, spec);
      }
    }
    return;
  }
  if (parts.prefix == "libsvm") {
    const LibsvmSpec ls = libsvm_parse_spec(spec, parts.rest);
    require_readable_file(ls.train_path, spec);
    if (!ls.test_path.empty()) require_readable_file(ls.test_path, spec);
    return;
  }
  if (parts.prefix == "synthetic" && synthetic_is_images(parts.rest)) {
    detail::synthetic_images_validate_params(parts.rest);
    return;
  }
  if (parts.prefix == "synthetic") {
    detail::synthetic_validate_params(parts.rest);
    return;
  }
  if (parts.prefix == "cifar10") {
    detail::cifar10_check_files(cifar10_dir(spec, parts.rest));
    return;
  }
  if (parts.prefix == "fortunes") {
    detail::text_validate_fortunes(parts.rest.empty() ? kFortunesDefaultDir : parts.rest);
    return;
  }
  if (parts.prefix == "text") {
    if (parts.rest.empty()) DSGD_THROW(InputError, "usage: text:PATH", "dataset spec '{}': text needs a file", spec);
    require_readable_file(parts.rest, spec);
    return;
  }
  if (parts.prefix == "synthetic-text") {
    detail::synthetic_text_validate_params(parts.rest);
    return;
  }
  throw_unknown_prefix(spec, parts.prefix);
}

std::vector<DatasetInfo> dataset_list() {
  return {
      {"fashion-mnist", "fashion-mnist[:DIR]",
       "Fashion-MNIST 28x28 grey images, 10 classes, 60000 train / 10000 test, dense 784 features "
       "(IDX gzip files; default DIR /usr/share/datasets/fashion-mnist)"},
      {"libsvm", "libsvm:TRAIN[,test=TEST][,features=D]",
       "LIBSVM/SVMlight text (label idx:val ...), sparse CSR; without test= the last 10 % of TRAIN "
       "is the test set"},
      {"synthetic", "synthetic:n=N,d=D,density=P,classes=C,noise=F,test=M,sparse=auto|true|false",
       "linearly learnable data from the seed: dense gaussian, or sparse rcv1-like rows when "
       "density < 0.5 (defaults n=20000,d=1000,density=1,classes=2,noise=0.05,test=n/5)"},
      {"synthetic", "synthetic:shape=CxHxW,classes=K,n=N,test=M,noise=F",
       "class-conditional images from the seed: per-class smooth templates + gaussian noise, shifted up to 2 "
       "pixels (defaults classes=10,n=2000,test=n/5,noise=1)"},
      {"cifar10", "cifar10:DIR",
       "CIFAR-10 binary version: DIR/data_batch_1..5.bin (50000 train) and DIR/test_batch.bin (10000), "
       "3x32x32 colour images, 10 classes"},
      {"fortunes", "fortunes[:DIR]",
       "byte-level English text of the Debian package fortunes (every 10th fortune is validation; "
       "default DIR /usr/share/games/fortunes), for --workload transformer"},
      {"text", "text:PATH", "any file as byte-level text, the last 10 % of its bytes validation"},
      {"synthetic-text", "synthetic-text:n=N,test=M,symbols=K",
       "a seeded order-2 Markov language over K letters, entropy 1.0627 nats/token "
       "(defaults n=200000,test=n/10,symbols=8)"},
  };
}

DatasetPaging dataset_paging(const Dataset& ds) {
  DatasetPaging p;
  p.thp_mode = huge_pages_mode();
  auto add = [&](const void* data, size_t bytes) {
    if (bytes < kHugePageBytes || p.huge_bytes < 0) return;
    p.bytes += static_cast<double>(bytes);
    const long long huge = huge_pages_backed_bytes(data, bytes);
    p.huge_bytes = huge < 0 ? -1.0 : p.huge_bytes + static_cast<double>(huge);
  };
  add(ds.dense.data(), ds.dense.size() * sizeof(float));
  add(ds.values.data(), ds.values.size() * sizeof(float));
  add(ds.col_idx.data(), ds.col_idx.size() * sizeof(int32_t));
  add(ds.row_ptr.data(), ds.row_ptr.size() * sizeof(int64_t));
  add(ds.tokens.data(), ds.tokens.size() * sizeof(int32_t));
  return p;
}

}  // namespace dsgd
