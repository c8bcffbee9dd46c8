// In-memory datasets shared by the workloads: dense row-major features or CSR sparse
// features, integer class labels, and a train/test pair. Loaders live beside this file
// (idx.cpp, libsvm.cpp, synthetic.cpp); dataset_load() dispatches on the spec string.
// The arrays a batch reads at random (features, CSR arrays, tokens) live on 2 MiB pages
// where the machine allows (core/huge_pages.hpp): on 4 KiB pages the random rows miss the
// TLB and a step's time depends on where the process's memory happened to land.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"

namespace dsgd {

struct Dataset {
  std::string name;                 // e.g. "fashion-mnist/train"
  size_t rows = 0;                  // number of samples
  size_t features = 0;              // feature dimension d
  int classes = 0;                  // labels are in [0, classes)
  bool sparse = false;              // CSR when true, dense when false
  HugePageVector<float> dense;      // dense: rows × features, row-major
  HugePageVector<int64_t> row_ptr;  // sparse: rows + 1 offsets into col_idx / values
  HugePageVector<int32_t> col_idx;  // sparse: column of each non-zero, ascending within a row
  HugePageVector<float> values;     // sparse: value of each non-zero
  std::vector<int32_t> labels;      // rows labels
  // Image datasets: the shape of one sample, features == channels·height·width, each row
  // stored channel-planar (C, H, W). All 0 for datasets that are not images.
  size_t channels = 0;
  size_t height = 0;
  size_t width = 0;
  // Text (text.cpp): the token stream; sample i is tokens[i, i + window), so
  // rows = tokens.size() − window + 1 (dataset_set_window), classes = the vocabulary (256).
  HugePageVector<int32_t> tokens;
  size_t window = 0;
  // Text: an evaluation predicts the windows that start at multiples of this many tokens
  // (dataset_set_window: window - 1, so each token but the first is predicted once; an
  // evaluation subset of separate windows stored end to end: window).
  size_t eval_stride = 0;

  size_t nnz() const { return sparse ? values.size() : rows * features; }
  // Bytes of feature data (what one pass over the data streams).
  size_t feature_bytes() const {
    return sparse ? values.size() * (sizeof(float) + sizeof(int32_t)) + row_ptr.size() * sizeof(int64_t)
                  : dense.size() * sizeof(float);
  }
};

struct DatasetPair {
  Dataset train;
  Dataset test;
};

struct DatasetInfo {
  std::string name;         // spec prefix, e.g. "fashion-mnist", "synthetic", "libsvm"
  std::string usage;        // full spec syntax with parameters
  std::string description;  // one line
};

// Loads a dataset from its spec:
//   fashion-mnist[:DIR]        IDX gzip files (default DIR /usr/share/datasets/fashion-mnist)
//   libsvm:TRAIN[,test=TEST][,features=D]   LIBSVM/SVMlight text; without test= the last 10 % of TRAIN
//   synthetic:n=N,d=D,density=P,classes=C,noise=F,test=M   generated from `seed`
//   synthetic:shape=CxHxW,classes=K[,n=N,test=M,noise=F]   class-conditional images from `seed`
//   cifar10:DIR                CIFAR-10 binary (data_batch_1..5.bin, test_batch.bin)
//   fortunes[:DIR], text:PATH, synthetic-text[:n=N,test=M,symbols=K]   byte-level text (text.cpp)
// Throws InputError naming the file (and line) or the bad parameter.
DatasetPair dataset_load(const std::string& spec, uint64_t seed);

// Whether dataset_load(spec, seed) depends on the seed (the generated datasets: synthetic,
// synthetic-text); files read from disk do not, so one loaded copy serves every seed.
bool dataset_depends_on_seed(const std::string& spec);

// Checks a spec without loading the data (known prefix, parameters parse, files exist).
void dataset_validate_spec(const std::string& spec);

std::vector<DatasetInfo> dataset_list();

// How a dataset's large arrays are paged (core/huge_pages.hpp), for the run's record and
// its printed warning: a batch reads rows at random, and on 4 KiB pages that is several
// times slower than on 2 MiB pages.
struct DatasetPaging {
  std::string thp_mode;   // the machine's transparent-huge-page setting (huge_pages_mode)
  double bytes = 0;       // bytes of the arrays of 2 MiB or more (the ones placed on huge pages)
  double huge_bytes = 0;  // of those, bytes the kernel backs with huge pages; -1 when unknown
  // huge_bytes / bytes (1 when there is nothing large; -1 when unknown).
  double huge_fraction() const { return huge_bytes < 0 ? -1.0 : bytes > 0 ? huge_bytes / bytes : 1.0; }
};
DatasetPaging dataset_paging(const Dataset& ds);

// Loaders (exposed for tests).
Dataset dataset_read_idx(const std::string& images_path, const std::string& labels_path);
Dataset dataset_read_libsvm(const std::string& path, size_t min_features = 0);
DatasetPair dataset_make_synthetic(const std::string& params, uint64_t seed);
// A spec parameter's unsigned integer value in [lo, hi] (digits only); otherwise InputError
// naming the key and the range, with `hint` (synthetic.cpp; shared by the synthetic loaders).
size_t dataset_parse_count(const std::string& key, const std::string& value, size_t lo, size_t hi, const char* hint);
DatasetPair dataset_make_synthetic_images(const std::string& params, uint64_t seed);
DatasetPair dataset_read_cifar10(const std::string& dir);

// Text: makes each sample a window of `window` tokens (rows = tokens − window + 1); throws
// InputError when the text is shorter than one window.
void dataset_set_window(Dataset& ds, size_t window);
// The entropy rate of synthetic-text, in nats per token (the floor of its validation loss).
double synthetic_text_entropy_nats();

}  // namespace dsgd
