// IDX loader (the MNIST / Fashion-MNIST format), gzip-compressed or plain, read with zlib.
// Images (magic 0x00000803, n x rows x cols unsigned bytes) become dense float features
// pixel/255; labels (magic 0x00000801, n unsigned bytes) become class indices.
// Limits: only unsigned-byte IDX files; the whole set is held in memory as float (refused
// when the header promises more than the memory available).
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace {

constexpr uint32_t kIdxMagicImages = 0x00000803;
constexpr uint32_t kIdxMagicLabels = 0x00000801;
constexpr int kFashionMnistClasses = 10;

// A gzFile that closes itself; reads report short reads and zlib errors with the path.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      DSGD_THROW(InputError, "check the path; Fashion-MNIST comes with the Debian package dataset-fashion-mnist",
                 "{}: no such file", path);
    }
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      DSGD_THROW(InputError, "check the file permissions", "{}: cannot open ({})", path, std::strerror(errno));
    }
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() {
    if (file_) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; returns how many were read (less than n only at end of data).
  size_t read(void* out, size_t n) {
    size_t got = 0;
    auto* dst = static_cast<unsigned char*>(out);
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = gzread(file_, dst + got, chunk);
      if (r < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        DSGD_THROW(InputError, "the file is damaged; re-download or reinstall it", "{}: corrupt gzip data ({})", path_,
                   msg ? msg : "unknown zlib error");
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }

  // Reads exactly n bytes of `what`; a short read is a truncated file.
  void read_exact(void* out, size_t n, const char* what) {
    const size_t got = read(out, n);
    if (got != n) {
      DSGD_THROW(InputError, "the file is incomplete; re-download or reinstall it",
                 "{}: truncated: expected {} bytes of {}, got {}", path_, n, what, got);
    }
  }

  void expect_end() {
    unsigned char extra = 0;
    if (read(&extra, 1) != 0) {
      DSGD_THROW(InputError, "the file does not match its header; re-download it",
                 "{}: unexpected data after the last item (header promises fewer items)", path_);
    }
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

uint32_t read_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void check_magic(const GzReader& in, uint32_t magic, uint32_t expected, const char* kind) {
  if (magic != expected) {
    DSGD_THROW(InputError, "pass the matching IDX file (train-images / train-labels, etc.)",
               "{}: bad magic number {:#x} (expected {:#010x} for IDX {})", in.path(), magic, expected, kind);
  }
}

}  // namespace

Dataset dataset_read_idx(const std::string& images_path, const std::string& labels_path) {
  Dataset ds;
  ds.name = images_path;
  ds.sparse = false;

  // ---- images
  GzReader images(images_path);
  unsigned char header[16];
  images.read_exact(header, sizeof header, "header");
  check_magic(images, read_be32(header), kIdxMagicImages, "images");
  const uint32_t count = read_be32(header + 4);
  const uint32_t rows = read_be32(header + 8);
  const uint32_t cols = read_be32(header + 12);
  if (count == 0 || rows == 0 || cols == 0 || rows > 65536 || cols > 65536 || uint64_t{rows} * cols > (1u << 24)) {
    DSGD_THROW(InputError, "the header is damaged; re-download the file", "{}: implausible dimensions {} x {} x {}",
               images_path, count, rows, cols);
  }
  const size_t features = size_t{rows} * cols;
  const size_t pixel_bytes = size_t{count} * features;
  ds.rows = count;
  ds.features = features;
  ds.channels = 1;  // grey images, (1, rows, cols)
  ds.height = rows;
  ds.width = cols;
  // A header is not trusted with an allocation: a damaged one (or a fuzzer's) can promise
  // 2^32 images of 4096 x 4096. Refuse what cannot fit, then grow with the data actually read.
  const double float_bytes = static_cast<double>(pixel_bytes) * sizeof(float);
  const double available = memory_available_bytes();
  if (available > 0 && float_bytes > available) {
    DSGD_THROW(InputError, "the header is damaged, or the set is too large for this machine",
               "{}: the header promises {} images of {} x {}: {:.3g} GB as floats, more than the {:.3g} GB of memory "
               "available",
               images_path, count, rows, cols, float_bytes / 1e9, available / 1e9);
  }
  ds.dense.reserve(std::min(pixel_bytes, size_t{1} << 24));

  // Convert in chunks so the byte copy never exists in full beside the float copy.
  std::vector<unsigned char> chunk(size_t{1} << 20);
  size_t done = 0;
  while (done < pixel_bytes) {
    const size_t want = std::min(chunk.size(), pixel_bytes - done);
    const size_t got = images.read(chunk.data(), want);
    ds.dense.resize(done + got);  // geometric growth: a short file never allocates what it only promised
    for (size_t k = 0; k < got; ++k) ds.dense[done + k] = static_cast<float>(chunk[k]) / 255.0f;
    done += got;
    if (got < want) {
      DSGD_THROW(InputError, "the file is incomplete; re-download or reinstall it",
                 "{}: truncated: expected {} bytes of pixels, got {}", images_path, pixel_bytes, done);
    }
  }
  images.expect_end();

  // ---- labels
  GzReader labels(labels_path);
  unsigned char lheader[8];
  labels.read_exact(lheader, sizeof lheader, "header");
  check_magic(labels, read_be32(lheader), kIdxMagicLabels, "labels");
  const uint32_t label_count = read_be32(lheader + 4);
  if (label_count != count) {
    DSGD_THROW(InputError, "pass the labels file that belongs to the images file",
               "{}: label count {} does not match the image count {} of {}", labels_path, label_count, count,
               images_path);
  }
  std::vector<unsigned char> raw(count);
  labels.read_exact(raw.data(), raw.size(), "labels");
  labels.expect_end();
  ds.labels.resize(count);
  int max_label = 0;
  for (size_t i = 0; i < count; ++i) {
    ds.labels[i] = raw[i];
    max_label = std::max<int>(max_label, raw[i]);
  }
  ds.classes = max_label + 1;
  return ds;
}

namespace detail {

std::vector<std::string> idx_fashion_mnist_files(const std::string& dir) {
  return {dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz", dir + "/t10k-images-idx3-ubyte.gz",
          dir + "/t10k-labels-idx1-ubyte.gz"};
}

DatasetPair idx_load_fashion_mnist(const std::string& dir) {
  const std::vector<std::string> files = idx_fashion_mnist_files(dir);
  DatasetPair pair;
  pair.train = dataset_read_idx(files[0], files[1]);
  pair.test = dataset_read_idx(files[2], files[3]);
  const struct {
    Dataset* ds;
    const std::string* labels_path;
    const char* name;
  } parts[] = {{&pair.train, &files[1], "fashion-mnist/train"}, {&pair.test, &files[3], "fashion-mnist/test"}};
  for (const auto& part : parts) {
    for (size_t i = 0; i < part.ds->rows; ++i) {
      if (part.ds->labels[i] >= kFashionMnistClasses) {
        DSGD_THROW(InputError, "this is not a Fashion-MNIST labels file",
                   "{}: label {} of item {} is out of range [0, {})", *part.labels_path, part.ds->labels[i], i,
                   kFashionMnistClasses);
      }
    }
    part.ds->classes = kFashionMnistClasses;
    part.ds->name = part.name;
  }
  if (pair.train.features != pair.test.features) {
    DSGD_THROW(InputError, "use train and t10k files of the same dataset", "{}: {} features per image, but {} has {}",
               files[2], pair.test.features, files[0], pair.train.features);
  }
  return pair;
}

}  // namespace detail

}  // namespace dsgd
