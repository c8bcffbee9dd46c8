// Byte-level text datasets for the transformer: a Dataset whose `tokens` hold the byte
// stream (values 0..255, classes = 256) and whose samples are windows of `window`
// consecutive tokens (dataset_set_window; sample i starts at token i).
//   fortunes[:DIR]  the English fortunes of the Debian package `fortunes` (default DIR
//                   /usr/share/games/fortunes): every regular file without an extension, in
//                   name order, split into fortunes at the "%" lines; fortune k (counted over
//                   all files) goes to validation when k % 10 == 9, else to training; each
//                   fortune keeps its text followed by "%\n". About 2.3 MB train / 0.26 MB
//                   validation.
//   text:PATH       any file, bytes as they are; the last 10 % of the bytes is validation.
//   synthetic-text[:n=N,test=M,symbols=K]  an order-2 Markov chain over the K letters
//                   'a'.. (default n=200000 train tokens, test=n/10, K=8): each context (a, b)
//                   has 4 successors drawn from the seed with probabilities 0.6, 0.2, 0.15,
//                   0.05, so the entropy rate is exactly 1.0627 nats per token, whatever the
//                   state distribution: a model's validation loss cannot go below it, and a
//                   good one gets close. Train and test come from separate random streams.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace detail {
DatasetPair text_load_fortunes(const std::string& dir);
void text_validate_fortunes(const std::string& dir);
DatasetPair text_load_file(const std::string& path);
DatasetPair synthetic_text_make(const std::string& params, uint64_t seed);
void synthetic_text_validate_params(const std::string& params);
}  // namespace detail

namespace {

constexpr int kByteVocab = 256;
constexpr double kSuccessorProbs[4] = {0.6, 0.2, 0.15, 0.05};
constexpr uint64_t kStreamChain = 0x7e47, kStreamTrain = 0x7e48, kStreamTest = 0x7e49;

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) DSGD_THROW(InputError, "check the path and its permissions", "{}: cannot open the text file", path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Dataset text_dataset(std::string name, const std::string& bytes) {
  Dataset d;
  d.name = std::move(name);
  d.classes = kByteVocab;
  d.tokens.resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) d.tokens[i] = static_cast<int32_t>(static_cast<unsigned char>(bytes[i]));
  dataset_set_window(d, 1);
  return d;
}

std::vector<std::string> fortune_files(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    DSGD_THROW(InputError, "install the Debian package fortunes, or pass fortunes:DIR",
               "{}: no such directory (dataset 'fortunes')", dir);
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.is_symlink()) continue;
    const std::string name = entry.path().filename().string();
    if (name.find('.') != std::string::npos) continue;  // .dat indexes, .u8 links
    files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    DSGD_THROW(InputError, "install the Debian package fortunes, or pass fortunes:DIR",
               "{}: no fortune files (files without an extension) found", dir);
  }
  return files;
}

struct SyntheticTextParams {
  size_t n = 200000;
  size_t test = 0;
  bool test_given = false;
  size_t symbols = 8;
};

SyntheticTextParams synthetic_text_parse(const std::string& text) {
  const std::string hint = "synthetic-text parameters: n=TOKENS (>= 2), test=TOKENS, symbols=2..26";
  SyntheticTextParams p;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || value.empty() || used != value.size() || value[0] == '-')
      DSGD_THROW(InputError, hint, "synthetic-text: bad parameter '{}' (key=non-negative integer)", item);
    if (key == "n" && v >= 2 && v <= (1ull << 31)) {
      p.n = v;
    } else if (key == "test" && v <= (1ull << 31)) {
      p.test = v;
      p.test_given = true;
    } else if (key == "symbols" && v >= 2 && v <= 26) {
      p.symbols = v;
    } else {
      DSGD_THROW(InputError, hint, "synthetic-text: unknown parameter or value out of range '{}'", item);
    }
  }
  if (!p.test_given) p.test = p.n / 10;
  return p;
}

// Generates `n` tokens of the chain from `rng`. succ[(a·K + b)·4 + j] is the j-th successor.
std::string markov_generate(const std::vector<uint8_t>& succ, size_t symbols, size_t n, Rng& rng) {
  std::string out(n, 'a');
  size_t a = rng.below(symbols), b = rng.below(symbols);
  for (size_t i = 0; i < n; ++i) {
    const double u = rng.uniform();
    size_t j = 0;
    double acc = kSuccessorProbs[0];
    while (j < 3 && u >= acc) acc += kSuccessorProbs[++j];
    const size_t c = succ[(a * symbols + b) * 4 + j];
    out[i] = static_cast<char>('a' + c);
    a = b;
    b = c;
  }
  return out;
}

}  // namespace

void dataset_set_window(Dataset& ds, size_t window) {
  if (window == 0) DSGD_THROW(Error, "", "dataset {}: a text window needs at least one token", ds.name);
  if (window > ds.tokens.size()) {
    DSGD_THROW(InputError, "pass a smaller --seq, or a longer text",
               "dataset {} has {} tokens, fewer than one window of {} (--seq {} + the next token)", ds.name,
               ds.tokens.size(), window, window - 1);
  }
  ds.window = window;
  ds.rows = ds.tokens.size() - window + 1;
  ds.eval_stride = std::max<size_t>(window - 1, 1);
}

double synthetic_text_entropy_nats() {
  double h = 0;
  for (double p : kSuccessorProbs) h -= p * std::log(p);
  return h;
}

namespace detail {

void text_validate_fortunes(const std::string& dir) {
  fortune_files(dir);
}

DatasetPair text_load_fortunes(const std::string& dir) {
  std::string train, test;
  size_t k = 0;
  for (const std::string& path : fortune_files(dir)) {
    const std::string bytes = read_file_bytes(path);
    size_t pos = 0;
    while (pos < bytes.size()) {
      // A fortune runs up to a line holding only "%" (or to the end of the file).
      size_t end = pos;
      size_t next = bytes.size();
      while (end < bytes.size()) {
        const size_t nl = bytes.find('\n', end);
        const size_t line_end = nl == std::string::npos ? bytes.size() : nl;
        if (line_end - end == 1 && bytes[end] == '%') {
          next = std::min(bytes.size(), line_end + 1);
          break;
        }
        end = nl == std::string::npos ? bytes.size() : nl + 1;
      }
      const std::string fortune = bytes.substr(pos, end - pos);
      pos = next;
      if (fortune.find_first_not_of(" \t\n") == std::string::npos) continue;
      std::string& dst = (k % 10 == 9) ? test : train;
      dst += fortune;
      dst += "%\n";
      ++k;
    }
  }
  return DatasetPair{text_dataset("fortunes/train", train), text_dataset("fortunes/validation", test)};
}

DatasetPair text_load_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    DSGD_THROW(InputError, "check the path in --dataset text:PATH", "{}: no such file (dataset text:{})", path, path);
  const std::string bytes = read_file_bytes(path);
  const size_t split = bytes.size() - bytes.size() / 10;
  return DatasetPair{text_dataset("text:" + path + "/train", bytes.substr(0, split)),
                     text_dataset("text:" + path + "/validation", bytes.substr(split))};
}

void synthetic_text_validate_params(const std::string& params) {
  synthetic_text_parse(params);
}

DatasetPair synthetic_text_make(const std::string& params, uint64_t seed) {
  const SyntheticTextParams p = synthetic_text_parse(params);
  const size_t K = p.symbols;
  // Successors: 4 distinct symbols per context (all K when K < 4, the rest repeating).
  std::vector<uint8_t> succ(K * K * 4);
  Rng chain(rng_derive_seed(seed, kStreamChain));
  std::vector<uint8_t> perm(K);
  for (size_t ctx = 0; ctx < K * K; ++ctx) {
    for (size_t i = 0; i < K; ++i) perm[i] = static_cast<uint8_t>(i);
    chain.shuffle(perm.data(), K);
    for (size_t j = 0; j < 4; ++j) succ[ctx * 4 + j] = perm[j % K];
  }
  Rng train_rng(rng_derive_seed(seed, kStreamTrain)), test_rng(rng_derive_seed(seed, kStreamTest));
  return DatasetPair{text_dataset("synthetic-text/train", markov_generate(succ, K, p.n, train_rng)),
                     text_dataset("synthetic-text/test", markov_generate(succ, K, p.test, test_rng))};
}

}  // namespace detail

}  // namespace dsgd
