// LIBSVM / SVMlight text loader: lines "label idx:val idx:val ... [# comment]" with 1-based,
// strictly ascending indices, read (plain or gzip, via zlib's transparent reading) into CSR.
// Labels are integers (-1/+1, 0/1, 1..K or any integers, "2.0" accepted): the distinct
// values, sorted ascending, map to classes 0..C-1 (for a train/test pair, over both files).
// Limits: "qid:N" tokens are skipped; multi-label lines ("1,3 ...") and regression targets
// are rejected; feature indices must fit in int32.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace {

// A parsed file before labels are mapped to classes.
struct LibsvmRaw {
  std::string path;
  HugePageVector<int64_t> row_ptr{0};
  HugePageVector<int32_t> col_idx;  // 0-based
  HugePageVector<float> values;
  std::vector<int64_t> raw_labels;
  size_t max_index = 0;       // largest 1-based index seen (= features needed)
  size_t max_index_line = 0;  // the line where it is
  size_t rows() const { return raw_labels.size(); }
};

std::string token_for_message(std::string_view tok) {
  constexpr size_t kMax = 40;
  if (tok.size() <= kMax) return std::string(tok);
  return std::string(tok.substr(0, kMax)) + "...";
}

constexpr double kLibsvmModelCopies = 6;

constexpr const char* kLineHint =
    "LIBSVM lines look like 'label idx:val idx:val ...' with integer labels and 1-based "
    "ascending indices; fix or regenerate the file";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// from_chars does not accept a leading '+'.
std::string_view strip_plus(std::string_view s) {
  if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
  return s;
}

bool parse_label(std::string_view tok, int64_t& out) {
  const std::string_view s = strip_plus(tok);
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  if (ec == std::errc() && p == end) return true;
  double d = 0;
  auto [pd, ecd] = std::from_chars(s.data(), end, d);
  if (ecd != std::errc() || pd != end || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
    return false;
  }
  out = static_cast<int64_t>(d);
  return true;
}

class LibsvmParser {
 public:
  explicit LibsvmParser(LibsvmRaw& raw) : raw_(raw) {}

  void parse_line(std::string_view line) {
    ++line_no_;
    const size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    size_t pos = 0;
    bool have_label = false;
    int64_t last_index = 0;
    while (true) {
      while (pos < line.size() && is_space(line[pos])) ++pos;
      if (pos >= line.size()) break;
      size_t end = pos;
      while (end < line.size() && !is_space(line[end])) ++end;
      const std::string_view tok = line.substr(pos, end - pos);
      pos = end;
      if (!have_label) {
        int64_t label = 0;
        if (!parse_label(tok, label)) {
          DSGD_THROW(InputError, kLineHint, "{}:{}: bad label '{}' (expected an integer class label)", raw_.path,
                     line_no_, token_for_message(tok));
        }
        raw_.raw_labels.push_back(label);
        have_label = true;
        continue;
      }
      const size_t colon = tok.find(':');
      if (colon == std::string_view::npos || colon == 0 || colon + 1 == tok.size()) {
        bad_token(tok);
      }
      const std::string_view key = tok.substr(0, colon);
      const std::string_view val = strip_plus(tok.substr(colon + 1));
      if (key == "qid") continue;  // SVMlight query id: irrelevant for classification
      int64_t index = 0;
      {
        auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
        if (ec != std::errc() || p != key.data() + key.size()) bad_token(tok);
      }
      float value = 0;
      {
        auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), value);
        if (ec != std::errc() || p != val.data() + val.size() || !std::isfinite(value)) {
          bad_token(tok);
        }
      }
      if (index <= 0) {
        DSGD_THROW(InputError, kLineHint, "{}:{}: feature index {} in '{}' (indices are 1-based)", raw_.path, line_no_,
                   index, token_for_message(tok));
      }
      if (index > 0x7fffffff) {
        DSGD_THROW(InputError, kLineHint, "{}:{}: feature index {} is too large (limit 2^31-1)", raw_.path, line_no_,
                   index);
      }
      if (index <= last_index) {
        DSGD_THROW(InputError, kLineHint, "{}:{}: feature index {} after {} (indices must be strictly ascending)",
                   raw_.path, line_no_, index, last_index);
      }
      last_index = index;
      raw_.col_idx.push_back(static_cast<int32_t>(index - 1));
      raw_.values.push_back(value);
    }
    if (have_label) {
      raw_.row_ptr.push_back(static_cast<int64_t>(raw_.values.size()));
      if (static_cast<size_t>(last_index) > raw_.max_index) {
        raw_.max_index = static_cast<size_t>(last_index);
        raw_.max_index_line = line_no_;
      }
    }
  }

 private:
  [[noreturn]] void bad_token(std::string_view tok) const {
    DSGD_THROW(InputError, kLineHint, "{}:{}: bad token '{}' (expected index:value)", raw_.path, line_no_,
               token_for_message(tok));
  }

  LibsvmRaw& raw_;
  size_t line_no_ = 0;
};

LibsvmRaw libsvm_parse_file(const std::string& path) {
  std::error_code fs_ec;
  if (!std::filesystem::is_regular_file(path, fs_ec)) {
    DSGD_THROW(InputError, "check the path in the dataset spec", "{}: no such file", path);
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) {
    DSGD_THROW(InputError, "check the file permissions", "{}: cannot open ({})", path, std::strerror(errno));
  }
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{file};
  gzbuffer(file, 1 << 18);

  LibsvmRaw raw;
  raw.path = path;
  LibsvmParser parser(raw);
  std::string buffer;  // carried-over partial line + the newly read block
  std::vector<char> block(size_t{1} << 20);
  while (true) {
    const int n = gzread(file, block.data(), static_cast<unsigned>(block.size()));
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(file, &errnum);
      DSGD_THROW(InputError, "the file is damaged; re-create it", "{}: read error ({})", path,
                 msg ? msg : "unknown zlib error");
    }
    if (n == 0) break;
    buffer.append(block.data(), static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      const size_t nl = buffer.find('\n', start);
      if (nl == std::string::npos) break;
      parser.parse_line(std::string_view(buffer).substr(start, nl - start));
      start = nl + 1;
    }
    buffer.erase(0, start);
  }
  if (!buffer.empty()) parser.parse_line(buffer);  // last line without '\n'
  return raw;
}

// Sorted distinct labels of the given files.
std::vector<int64_t> libsvm_label_values(std::initializer_list<const LibsvmRaw*> files) {
  std::vector<int64_t> values;
  for (const LibsvmRaw* f : files) values.insert(values.end(), f->raw_labels.begin(), f->raw_labels.end());
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Moves rows [begin, end) of raw into a Dataset with labels mapped through `label_values`.
Dataset libsvm_to_dataset(LibsvmRaw& raw, size_t begin, size_t end, const std::vector<int64_t>& label_values,
                          size_t features, std::string name) {
  Dataset ds;
  ds.name = std::move(name);
  ds.rows = end - begin;
  ds.features = features;
  ds.classes = static_cast<int>(label_values.size());
  ds.sparse = true;
  const int64_t first = raw.row_ptr[begin];
  const int64_t last = raw.row_ptr[end];
  ds.row_ptr.resize(ds.rows + 1);
  for (size_t i = 0; i <= ds.rows; ++i) ds.row_ptr[i] = raw.row_ptr[begin + i] - first;
  if (begin == 0 && end == raw.rows()) {
    ds.col_idx = std::move(raw.col_idx);
    ds.values = std::move(raw.values);
  } else {
    ds.col_idx.assign(raw.col_idx.begin() + first, raw.col_idx.begin() + last);
    ds.values.assign(raw.values.begin() + first, raw.values.begin() + last);
  }
  ds.labels.resize(ds.rows);
  for (size_t i = 0; i < ds.rows; ++i) {
    const auto it = std::lower_bound(label_values.begin(), label_values.end(), raw.raw_labels[begin + i]);
    ds.labels[i] = static_cast<int32_t>(it - label_values.begin());
  }
  return ds;
}

// A linear model over `features` features and the classes of `labels` needs features ×
// outputs weights, and a run holds at least 6 copies of them (parameters, gradient,
// evaluation copy, momentum, two algorithm buffers: engine/memory_estimate.hpp). Refuses a
// dimension whose copies alone exceed the memory available, before anything of that size
// is allocated: one stray index (2000000000:1) would otherwise allocate for minutes and die.
void require_model_fits(const LibsvmRaw& raw, size_t features, size_t classes, size_t features_override) {
  const double outputs = classes == 2 ? 1.0 : static_cast<double>(classes);
  const double copy_bytes = static_cast<double>(features) * outputs * sizeof(float);
  const double need = kLibsvmModelCopies * copy_bytes;
  const double available = memory_available_bytes();
  if (!(available > 0) || need <= available) return;
  const std::string where = features_override != 0 && features_override > raw.max_index
                                ? fmt::format("features={}", features_override)
                                : fmt::format("{}:{}: feature index {}", raw.path, raw.max_index_line, raw.max_index);
  DSGD_THROW(InputError,
             "renumber the features densely (or hash them into fewer, e.g. 2^20), or drop a stray index; "
             "features=D sets the dimension",
             "{} makes a model of {} features x {} output(s): {:.3g} GB per copy, {:.3g} GB for the {} copies a run "
             "holds, more than the {:.3g} GB of memory available",
             where, features, outputs, copy_bytes / 1e9, need / 1e9, kLibsvmModelCopies, available / 1e9);
}

void require_rows(const LibsvmRaw& raw) {
  if (raw.rows() == 0) {
    DSGD_THROW(InputError, "the file holds no samples; check the path", "{}: no samples (empty file)", raw.path);
  }
}

}  // namespace

Dataset dataset_read_libsvm(const std::string& path, size_t min_features) {
  LibsvmRaw raw = libsvm_parse_file(path);
  require_rows(raw);
  const std::vector<int64_t> labels = libsvm_label_values({&raw});
  const size_t features = std::max(raw.max_index, min_features);
  require_model_fits(raw, features, labels.size(), min_features);
  const size_t rows = raw.rows();
  return libsvm_to_dataset(raw, 0, rows, labels, features, path);
}

namespace detail {

DatasetPair libsvm_load_pair(const std::string& train_path, const std::string& test_path, size_t features_override) {
  LibsvmRaw train = libsvm_parse_file(train_path);
  require_rows(train);
  LibsvmRaw test;
  const bool split = test_path.empty();
  if (!split) {
    test = libsvm_parse_file(test_path);
    require_rows(test);
  }
  const std::vector<int64_t> labels = split ? libsvm_label_values({&train}) : libsvm_label_values({&train, &test});
  if (labels.size() < 2) {
    DSGD_THROW(InputError, "a classifier needs samples of at least two classes", "{}: every sample has the label {}",
               train_path, labels.front());
  }
  const size_t max_index = std::max(train.max_index, test.max_index);
  size_t features = max_index;
  if (features_override != 0) {
    if (features_override < max_index) {
      DSGD_THROW(InputError, "raise features= or drop it (it defaults to the largest index)",
                 "features={} is smaller than the largest feature index {} in {}{}", features_override, max_index,
                 train_path, split ? "" : " / " + test_path);
    }
    features = features_override;
  }
  if (features == 0) {
    DSGD_THROW(InputError, "the file holds labels only; check it", "{}: no feature appears in any line", train_path);
  }
  require_model_fits(test.max_index > train.max_index ? test : train, features, labels.size(), features_override);

  DatasetPair pair;
  if (split) {
    const size_t rows = train.rows();
    if (rows < 2) {
      DSGD_THROW(InputError, "pass a separate test file with test=PATH",
                 "{}: only {} sample, too few to split off a test set", train_path, rows);
    }
    const size_t test_rows = std::max<size_t>(1, rows / 10);
    pair.test = libsvm_to_dataset(train, rows - test_rows, rows, labels, features, train_path + "/test");
    pair.train = libsvm_to_dataset(train, 0, rows - test_rows, labels, features, train_path + "/train");
  } else {
    const size_t train_rows = train.rows();
    const size_t test_rows = test.rows();
    pair.train = libsvm_to_dataset(train, 0, train_rows, labels, features, train_path);
    pair.test = libsvm_to_dataset(test, 0, test_rows, labels, features, test_path);
  }
  return pair;
}

}  // namespace detail

}  // namespace dsgd
