// Tests of the dataset loaders (IDX, LIBSVM, synthetic) and of spec dispatch/validation, on
// small files each test writes into its own temporary directory; plus one test of the real
// Fashion-MNIST files, skipped when the Debian package is not installed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "workloads/datasets/dataset.hpp"

namespace fs = std::filesystem;
using dsgd::Dataset;
using dsgd::DatasetPair;
using dsgd::InputError;

namespace {

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("dsgd_test_datasets_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

void put_be32(std::vector<unsigned char>& out, uint32_t v) {
  out.push_back(static_cast<unsigned char>(v >> 24));
  out.push_back(static_cast<unsigned char>(v >> 16));
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<unsigned char> idx_images(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                                      size_t pixel_bytes_written) {
  std::vector<unsigned char> out;
  put_be32(out, magic);
  put_be32(out, n);
  put_be32(out, rows);
  put_be32(out, cols);
  for (size_t k = 0; k < pixel_bytes_written; ++k) out.push_back(static_cast<unsigned char>((k * 37) % 256));
  return out;
}

std::vector<unsigned char> idx_labels(uint32_t magic, uint32_t n, const std::vector<unsigned char>& labels) {
  std::vector<unsigned char> out;
  put_be32(out, magic);
  put_be32(out, n);
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Runs fn, expects an InputError, returns its message.
template <typename Fn>
std::string input_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    EXPECT_FALSE(e.hint().empty()) << "InputError without a hint: " << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return {};
}

bool same_data(const Dataset& a, const Dataset& b) {
  return a.rows == b.rows && a.features == b.features && a.classes == b.classes && a.sparse == b.sparse &&
         a.dense == b.dense && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx && a.values == b.values &&
         a.labels == b.labels;
}

}  // namespace

// ---- IDX ------------------------------------------------------------------------------------

TEST(Idx, RoundTripOfAValidPair) {
  TempDir dir;
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x803, 5, 3, 4, size_t{5} * 12));
  write_gz(labels, idx_labels(0x801, 5, {2, 0, 1, 2, 0}));
  const Dataset ds = dsgd::dataset_read_idx(images, labels);
  EXPECT_EQ(ds.rows, 5u);
  EXPECT_EQ(ds.features, 12u);
  EXPECT_FALSE(ds.sparse);
  EXPECT_EQ(ds.classes, 3);
  ASSERT_EQ(ds.dense.size(), 60u);
  for (size_t k = 0; k < 60; ++k) EXPECT_EQ(ds.dense[k], static_cast<float>((k * 37) % 256) / 255.0f) << k;
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{2, 0, 1, 2, 0}));
  EXPECT_EQ(ds.feature_bytes(), 60 * sizeof(float));
}

TEST(Idx, WrongMagicNamesTheFile) {
  TempDir dir;
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x1234, 2, 2, 2, 8));
  write_gz(labels, idx_labels(0x801, 2, {0, 1}));
  const std::string msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad magic number 0x1234"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0x00000803"), std::string::npos) << msg;

  // Images and labels swapped: the labels magic is checked too.
  write_gz(images, idx_images(0x803, 2, 2, 2, 8));
  const std::string swapped = input_error_of([&] { dsgd::dataset_read_idx(images, images); });
  EXPECT_NE(swapped.find("0x00000801"), std::string::npos) << swapped;
}

TEST(Idx, TruncatedPixelsAndLabels) {
  TempDir dir;
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x803, 10, 28, 28, 1000));
  write_gz(labels, idx_labels(0x801, 10, std::vector<unsigned char>(10, 1)));
  std::string msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated: expected 7840 bytes of pixels, got 1000"), std::string::npos) << msg;

  write_gz(images, idx_images(0x803, 10, 2, 2, 40));
  write_gz(labels, idx_labels(0x801, 10, std::vector<unsigned char>(7, 1)));
  msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  // A header cut short.
  write_gz(images, {0, 0, 8});
  msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(Idx, TrailingDataIsRejected) {
  TempDir dir;
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x803, 2, 2, 2, 9));
  write_gz(labels, idx_labels(0x801, 2, {0, 1}));
  const std::string msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
}

TEST(Idx, LabelCountMismatch) {
  TempDir dir;
  const std::string images = dir.file("images.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x803, 4, 2, 2, 16));
  write_gz(labels, idx_labels(0x801, 3, {0, 1, 1}));
  const std::string msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(labels), std::string::npos) << msg;
  EXPECT_NE(msg.find("label count 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("image count 4"), std::string::npos) << msg;
}

TEST(Idx, MissingFileNamesThePath) {
  TempDir dir;
  const std::string missing = dir.file("no-such-images.gz");
  const std::string msg = input_error_of([&] { dsgd::dataset_read_idx(missing, missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
}

TEST(Idx, FashionMnistSpecOnADirectory) {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images(0x803, 6, 2, 3, 36));
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels(0x801, 6, {0, 1, 2, 3, 9, 5}));
  write_gz(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(0x803, 2, 2, 3, 12));
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels(0x801, 2, {7, 1}));
  EXPECT_NO_THROW(dsgd::dataset_validate_spec("fashion-mnist:" + dir.path()));
  const DatasetPair pair = dsgd::dataset_load("fashion-mnist:" + dir.path(), 1);
  EXPECT_EQ(pair.train.name, "fashion-mnist/train");
  EXPECT_EQ(pair.test.name, "fashion-mnist/test");
  EXPECT_EQ(pair.train.rows, 6u);
  EXPECT_EQ(pair.test.rows, 2u);
  EXPECT_EQ(pair.train.classes, 10);  // fixed for Fashion-MNIST, whatever labels occur
  EXPECT_EQ(pair.test.classes, 10);
  EXPECT_EQ(pair.train.features, 6u);

  // A label outside [0, 10).
  write_gz(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels(0x801, 2, {7, 10}));
  const std::string msg = input_error_of([&] { dsgd::dataset_load("fashion-mnist:" + dir.path(), 1); });
  EXPECT_NE(msg.find("t10k-labels-idx1-ubyte.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;

  // validate_spec checks that the files exist.
  fs::remove(dir.file("t10k-images-idx3-ubyte.gz"));
  const std::string missing = input_error_of([&] { dsgd::dataset_validate_spec("fashion-mnist:" + dir.path()); });
  EXPECT_NE(missing.find("t10k-images-idx3-ubyte.gz"), std::string::npos) << missing;
}

TEST(Idx, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const DatasetPair pair = dsgd::dataset_load("fashion-mnist", 0);
  EXPECT_EQ(pair.train.rows, 60000u);
  EXPECT_EQ(pair.test.rows, 10000u);
  EXPECT_EQ(pair.train.features, 784u);
  EXPECT_EQ(pair.test.features, 784u);
  EXPECT_EQ(pair.train.classes, 10);
  std::vector<size_t> counts(10, 0);
  for (int32_t label : pair.train.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[static_cast<size_t>(label)];
  }
  for (size_t c = 0; c < 10; ++c) EXPECT_EQ(counts[c], 6000u) << c;  // Fashion-MNIST is balanced
  float lo = 1, hi = 0;
  for (float v : pair.train.dense) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
}

// ---- LIBSVM ---------------------------------------------------------------------------------

TEST(Libsvm, GoodFileGivesCsrAndLabelMap) {
  TempDir dir;
  const std::string path = dir.file("a.svm");
  write_text(path,
             "# a comment line\n"
             "+1 1:0.5 3:2 # trailing comment\n"
             "\n"
             "-1 2:-1.25e1 7:+3\n"
             "1 qid:4 4:1\r\n"
             "-1\n"
             "+1 1:1 2:2 3:3");  // no final newline
  const Dataset ds = dsgd::dataset_read_libsvm(path);
  EXPECT_TRUE(ds.sparse);
  EXPECT_EQ(ds.rows, 5u);
  EXPECT_EQ(ds.features, 7u);
  EXPECT_EQ(ds.classes, 2);
  EXPECT_EQ(ds.row_ptr, (dsgd::HugePageVector<int64_t>{0, 2, 4, 5, 5, 8}));
  EXPECT_EQ(ds.col_idx, (dsgd::HugePageVector<int32_t>{0, 2, 1, 6, 3, 0, 1, 2}));
  EXPECT_EQ(ds.values, (dsgd::HugePageVector<float>{0.5f, 2.0f, -12.5f, 3.0f, 1.0f, 1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{1, 0, 1, 0, 1}));  // -1 -> 0, +1 -> 1
  EXPECT_EQ(ds.nnz(), 8u);

  // min_features raises the feature count.
  EXPECT_EQ(dsgd::dataset_read_libsvm(path, 100).features, 100u);
}

TEST(Libsvm, ArbitraryIntegerLabelsMapInOrder) {
  TempDir dir;
  const std::string path = dir.file("m.svm");
  write_text(path, "7 1:1\n3 1:1\n12 2:1\n3.0 1:2\n-4 1:1\n");
  const Dataset ds = dsgd::dataset_read_libsvm(path);
  EXPECT_EQ(ds.classes, 4);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{2, 1, 3, 1, 0}));  // -4, 3, 7, 12
}

TEST(Libsvm, BadTokenNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.file("bad.svm");
  write_text(path, "1 1:1\n-1 2:1\n1 abc 3:1\n");
  const std::string msg = input_error_of([&] { dsgd::dataset_read_libsvm(path); });
  EXPECT_NE(msg.find(path + ":3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad token 'abc' (expected index:value)"), std::string::npos) << msg;
}

TEST(Libsvm, OtherMalformedLines) {
  TempDir dir;
  const std::string path = dir.file("bad.svm");
  const struct {
    const char* text;
    const char* expect;
  } cases[] = {
      {"1 1:1\n1 0:1\n", ":2: feature index 0"},
      {"1 3:1 2:1\n", ":1: feature index 2 after 3"},
      {"1 2:1 2:1\n", ":1: feature index 2 after 2"},
      {"x 1:1\n", ":1: bad label 'x'"},
      {"1.5 1:1\n", ":1: bad label '1.5'"},
      {"1,2 1:1\n", ":1: bad label '1,2'"},
      {"1 1:\n", ":1: bad token '1:'"},
      {"1 1:nan\n", ":1: bad token '1:nan'"},
      {"1 :3\n", ":1: bad token ':3'"},
  };
  for (const auto& c : cases) {
    write_text(path, c.text);
    const std::string msg = input_error_of([&] { dsgd::dataset_read_libsvm(path); });
    EXPECT_NE(msg.find(path + c.expect), std::string::npos) << "input: " << c.text << "\nmessage: " << msg;
  }
}

TEST(Libsvm, MissingAndEmptyFiles) {
  TempDir dir;
  const std::string missing = dir.file("nope.svm");
  std::string msg = input_error_of([&] { dsgd::dataset_read_libsvm(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_load("libsvm:" + missing, 0); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_validate_spec("libsvm:" + missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;

  const std::string empty = dir.file("empty.svm");
  write_text(empty, "# nothing\n\n");
  msg = input_error_of([&] { dsgd::dataset_read_libsvm(empty); });
  EXPECT_NE(msg.find(empty), std::string::npos) << msg;
}

TEST(Libsvm, GzipFilesAreReadToo) {
  TempDir dir;
  const std::string path = dir.file("a.svm.gz");
  const std::string text = "1 1:1 5:2\n2 2:3\n";
  write_gz(path, std::vector<unsigned char>(text.begin(), text.end()));
  const Dataset ds = dsgd::dataset_read_libsvm(path);
  EXPECT_EQ(ds.rows, 2u);
  EXPECT_EQ(ds.features, 5u);
  EXPECT_EQ(ds.col_idx, (dsgd::HugePageVector<int32_t>{0, 4, 1}));
}

TEST(Libsvm, TrainTestPairUsesTheUnionOfLabels) {
  TempDir dir;
  const std::string train = dir.file("train.svm");
  const std::string test = dir.file("test.svm");
  write_text(train, "1 1:1\n2 3:1\n1 2:1\n");
  write_text(test, "3 9:1\n2 1:1\n");
  EXPECT_NO_THROW(dsgd::dataset_validate_spec("libsvm:" + train + ",test=" + test));
  const DatasetPair pair = dsgd::dataset_load("libsvm:" + train + ",test=" + test, 0);
  EXPECT_EQ(pair.train.classes, 3);
  EXPECT_EQ(pair.test.classes, 3);
  EXPECT_EQ(pair.train.features, 9u);  // max over both files
  EXPECT_EQ(pair.test.features, 9u);
  EXPECT_EQ(pair.train.labels, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(pair.test.labels, (std::vector<int32_t>{2, 1}));

  const DatasetPair wide = dsgd::dataset_load("libsvm:" + train + ",test=" + test + ",features=20", 0);
  EXPECT_EQ(wide.train.features, 20u);
  EXPECT_EQ(wide.test.features, 20u);
  std::string msg = input_error_of([&] { dsgd::dataset_load("libsvm:" + train + ",test=" + test + ",features=5", 0); });
  EXPECT_NE(msg.find("features=5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("largest feature index 9"), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_validate_spec("libsvm:" + train + ",bogus=1"); });
  EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_validate_spec("libsvm:" + train + ",features=abc"); });
  EXPECT_NE(msg.find("features"), std::string::npos) << msg;
}

TEST(Libsvm, WithoutTestTheLastTenPercentIsTheTestSet) {
  TempDir dir;
  const std::string path = dir.file("split.svm");
  std::string text;
  for (int i = 0; i < 20; ++i) text += std::to_string(i % 2 == 0 ? -1 : 1) + " " + std::to_string(i + 1) + ":1\n";
  write_text(path, text);
  const DatasetPair pair = dsgd::dataset_load("libsvm:" + path, 0);
  ASSERT_EQ(pair.train.rows, 18u);
  ASSERT_EQ(pair.test.rows, 2u);
  EXPECT_EQ(pair.train.features, 20u);
  EXPECT_EQ(pair.test.features, 20u);
  EXPECT_EQ(pair.test.row_ptr, (dsgd::HugePageVector<int64_t>{0, 1, 2}));
  EXPECT_EQ(pair.test.col_idx, (dsgd::HugePageVector<int32_t>{18, 19}));  // rows 19 and 20 of the file
  EXPECT_EQ(pair.test.labels, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(pair.train.col_idx.front(), 0);
  EXPECT_EQ(pair.train.row_ptr.back(), 18);
}

// ---- synthetic ------------------------------------------------------------------------------

TEST(Synthetic, DefaultsShapesAndDeterminism) {
  const DatasetPair a = dsgd::dataset_make_synthetic("n=500,d=40", 7);
  const DatasetPair b = dsgd::dataset_make_synthetic("n=500,d=40", 7);
  const DatasetPair c = dsgd::dataset_make_synthetic("n=500,d=40", 8);
  EXPECT_EQ(a.train.rows, 500u);
  EXPECT_EQ(a.test.rows, 100u);  // n/5
  EXPECT_EQ(a.train.features, 40u);
  EXPECT_EQ(a.train.classes, 2);
  EXPECT_FALSE(a.train.sparse);
  EXPECT_EQ(a.train.dense.size(), 500u * 40u);
  EXPECT_TRUE(same_data(a.train, b.train));
  EXPECT_TRUE(same_data(a.test, b.test));
  EXPECT_FALSE(same_data(a.train, c.train));
  size_t ones = 0;
  for (int32_t l : a.train.labels) {
    ASSERT_TRUE(l == 0 || l == 1);
    ones += static_cast<size_t>(l);
  }
  EXPECT_GT(ones, 150u);  // balanced-ish
  EXPECT_LT(ones, 350u);
  // Through the spec too.
  EXPECT_TRUE(same_data(dsgd::dataset_load("synthetic:n=500,d=40", 7).train, a.train));
}

TEST(Synthetic, NoiseFreeDataIsLinearlyLabelled) {
  // Multi-class, noise=0: every label is the argmax of a linear score; check the classes occur.
  const DatasetPair p = dsgd::dataset_make_synthetic("n=2000,d=10,classes=4,noise=0,test=0", 3);
  EXPECT_EQ(p.test.rows, 0u);
  std::vector<size_t> counts(4, 0);
  for (int32_t l : p.train.labels) ++counts.at(static_cast<size_t>(l));
  for (size_t c = 0; c < 4; ++c) EXPECT_GT(counts[c], 200u) << c;
  // Flipping labels with noise=1 moves every label.
  const DatasetPair flipped = dsgd::dataset_make_synthetic("n=2000,d=10,classes=4,noise=1,test=0", 3);
  for (size_t i = 0; i < 2000; ++i) ASSERT_NE(flipped.train.labels[i], p.train.labels[i]);
}

TEST(Synthetic, SparseRowsMatchTheDensity) {
  const DatasetPair p = dsgd::dataset_make_synthetic("n=2000,d=5000,density=0.01,test=500", 11);
  const Dataset& ds = p.train;
  ASSERT_TRUE(ds.sparse);
  EXPECT_EQ(ds.rows, 2000u);
  EXPECT_EQ(p.test.rows, 500u);
  ASSERT_EQ(ds.row_ptr.size(), 2001u);
  const double density = static_cast<double>(ds.nnz()) / (2000.0 * 5000.0);
  EXPECT_NEAR(density, 0.01, 0.001);
  for (size_t i = 0; i < ds.rows; ++i) {
    double norm2 = 0;
    for (int64_t k = ds.row_ptr[i]; k < ds.row_ptr[i + 1]; ++k) {
      if (k > ds.row_ptr[i]) {
        ASSERT_LT(ds.col_idx[k - 1], ds.col_idx[k]);  // distinct, ascending
      }
      ASSERT_GE(ds.col_idx[k], 0);
      ASSERT_LT(ds.col_idx[k], 5000);
      ASSERT_GT(ds.values[k], 0.0f);
      norm2 += ds.values[k] * ds.values[k];
    }
    ASSERT_NEAR(norm2, 1.0, 1e-5);
  }
  const DatasetPair again = dsgd::dataset_make_synthetic("n=2000,d=5000,density=0.01,test=500", 11);
  EXPECT_TRUE(same_data(ds, again.train));
  EXPECT_TRUE(same_data(p.test, again.test));
  EXPECT_FALSE(same_data(ds, dsgd::dataset_make_synthetic("n=2000,d=5000,density=0.01,test=500", 12).train));

  // sparse=false keeps a dense matrix with about `density` non-zeros.
  const DatasetPair dense = dsgd::dataset_make_synthetic("n=200,d=500,density=0.2,sparse=false", 1);
  ASSERT_FALSE(dense.train.sparse);
  size_t nz = 0;
  for (float v : dense.train.dense) nz += v != 0.0f;
  EXPECT_NEAR(static_cast<double>(nz) / (200.0 * 500.0), 0.2, 0.01);
  // sparse=true at full density: every column of every row.
  const DatasetPair full = dsgd::dataset_make_synthetic("n=20,d=30,density=1,sparse=true", 1);
  ASSERT_TRUE(full.train.sparse);
  EXPECT_EQ(full.train.nnz(), 20u * 30u);
}

// The generation time is recorded, not asserted (no timed unit tests: a sanitizer build takes
// ~2x longer than a loaded Release one); an O(n d) path (2e10 cells) runs past ctest's timeout.
TEST(Synthetic, Rcv1LikeScaleIsProportionalToNnz) {
  const auto t0 = std::chrono::steady_clock::now();
  const DatasetPair p = dsgd::dataset_make_synthetic("n=20000,d=1000000,density=0.001", 5);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("generate_seconds", std::to_string(seconds));
  EXPECT_EQ(p.train.rows, 20000u);
  EXPECT_EQ(p.test.rows, 4000u);
  EXPECT_EQ(p.train.classes, 2);
  EXPECT_NEAR(static_cast<double>(p.train.nnz()) / 20000.0, 1000.0, 20.0);
  EXPECT_TRUE(p.train.dense.empty());
  EXPECT_EQ(p.train.values.capacity(), p.train.nnz());
}

TEST(Synthetic, BadParametersNameTheParameter) {
  const struct {
    const char* params;
    const char* expect;
  } cases[] = {
      {"n=10,colour=red", "unknown parameter 'colour'"},
      {"n=abc", "parameter n"},
      {"n=0", "parameter n"},
      {"d=-3", "parameter d"},
      {"density=0", "parameter density"},
      {"density=1.5", "parameter density"},
      {"classes=1", "parameter classes"},
      {"noise=2", "parameter noise"},
      {"test=x", "parameter test"},
      {"sparse=maybe", "parameter sparse"},
      {"n", "'n' needs a value"},
      {"n=5,n=6", "n is given twice"},
      {"n=2000000000,d=1000000", "GiB"},
  };
  for (const auto& c : cases) {
    const std::string msg = input_error_of([&] { dsgd::dataset_make_synthetic(c.params, 1); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "params: " << c.params << "\nmessage: " << msg;
    const std::string vmsg = input_error_of([&] { dsgd::dataset_validate_spec(std::string("synthetic:") + c.params); });
    EXPECT_EQ(vmsg, msg);
  }
}

// ---- specs ----------------------------------------------------------------------------------

TEST(Spec, UnknownPrefixAndList) {
  std::string msg = input_error_of([&] { dsgd::dataset_validate_spec("cifar100:/tmp"); });
  EXPECT_NE(msg.find("unknown dataset 'cifar100'"), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_load("mnist", 0); });
  EXPECT_NE(msg.find("unknown dataset 'mnist'"), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_validate_spec("libsvm"); });
  EXPECT_NE(msg.find("training file"), std::string::npos) << msg;
  EXPECT_NO_THROW(dsgd::dataset_validate_spec("synthetic"));
  EXPECT_NO_THROW(dsgd::dataset_validate_spec("synthetic:n=100,d=10,density=0.5,classes=3,noise=0,test=5,sparse=auto"));

  const std::vector<dsgd::DatasetInfo> list = dsgd::dataset_list();
  ASSERT_GE(list.size(), 3u);  // text and image loaders are appended after these
  EXPECT_EQ(list[0].name, "fashion-mnist");
  EXPECT_EQ(list[1].name, "libsvm");
  EXPECT_EQ(list[2].name, "synthetic");
  EXPECT_EQ(list[3].name, "synthetic");  // synthetic:shape=... images
  EXPECT_EQ(list[4].name, "cifar10");
  for (const auto& info : list) {
    EXPECT_EQ(info.usage.rfind(info.name, 0), 0u) << info.usage;
    EXPECT_FALSE(info.description.empty());
  }
}

// ---- absurd dimensions ---------------------------------------------------------------------------

// One stray index makes a model of 2^31-1 features x 10 classes (86 GB per copy): the loader
// refuses it with the figures before anything of that size is allocated (it used to allocate
// for minutes and die with std::bad_alloc).
TEST(Libsvm, AbsurdDimensionIsRefusedBeforeAllocating) {
  const double per_copy = 2147483647.0 * 10 * sizeof(float);
  if (dsgd::memory_available_bytes() > 6 * per_copy) GTEST_SKIP() << "this machine has the memory for it";
  TempDir dir;
  const std::string path = dir.file("stray.svm");
  std::string text;
  for (int c = 0; c < 10; ++c) text += fmt::format("{} 1:0.5 3:1\n", c);
  text += "3 2:1 2147483647:1\n";
  write_text(path, text);
  std::string msg = input_error_of([&] { dsgd::dataset_read_libsvm(path); });
  EXPECT_NE(msg.find(path + ":11: feature index 2147483647 makes a model of 2147483647 features x 10 output(s)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("GB of memory available"), std::string::npos) << msg;
  msg = input_error_of([&] { dsgd::dataset_load("libsvm:" + path, 0); });
  EXPECT_NE(msg.find("feature index 2147483647"), std::string::npos) << msg;
  // features= asking for the absurd dimension is named as such.
  const std::string small = dir.file("small.svm");
  write_text(small, text.substr(0, text.rfind("3 2:1")));
  msg = input_error_of([&] { dsgd::dataset_load("libsvm:" + small + ",features=2147483647", 0); });
  EXPECT_NE(msg.find("features=2147483647 makes a model"), std::string::npos) << msg;
}

// The synthetic generator's true model is d x classes doubles, and a linear model over the
// data 6 copies of d x classes floats: d=5e6 with 60000 classes is 9.6 TB, refused with the
// figures before the generator allocates anything (d=5e6, classes=500 drew a 20 GB true
// model for 9 minutes before the run's own check refused its 60 GB of model copies).
TEST(Synthetic, TrueModelLargerThanMemoryIsRefused) {
  const std::string spec = "synthetic:n=100,d=5000000,density=0.0001,classes=60000,test=10";
  const std::string msg = input_error_of([&] { dsgd::dataset_load(spec, 1); });
  EXPECT_NE(msg.find("synthetic: d=5000000 classes=60000 n=100 test=10 needs about 9.6e+03 GB"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("2.4e+03 GB of true model, 7.2e+03 GB for the 6 copies"), std::string::npos) << msg;
}

// Found by fuzz_idx: a header promising 2^32-1 images of 4096 x 4096 was allocated as
// given (a 290 PB request: std::bad_alloc, or allocation-size-too-big under ASan). It is
// refused with the figures; a header promising more than the file holds but within memory
// fails as truncated after allocating only what was read.
TEST(Idx, HeaderPromisingMoreThanMemoryIsRefusedBeforeAllocating) {
  TempDir dir;
  const std::string images = dir.file("huge.gz");
  const std::string labels = dir.file("labels.gz");
  write_gz(images, idx_images(0x803, 0xFFFFFFFFu, 4096, 4096, 64));
  write_gz(labels, idx_labels(0x801, 1, {1}));
  std::string msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find(images + ": the header promises 4294967295 images of 4096 x 4096"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GB of memory available"), std::string::npos) << msg;
  write_gz(images, idx_images(0x803, 1000000, 28, 28, 100));
  msg = input_error_of([&] { dsgd::dataset_read_idx(images, labels); });
  EXPECT_NE(msg.find("truncated: expected 784000000 bytes of pixels, got 100"), std::string::npos) << msg;
}
