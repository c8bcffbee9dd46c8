// Class-conditional synthetic images, bit-reproducible from the seed:
//   synthetic:shape=CxHxW,classes=K,n=N,test=M,noise=F   (defaults classes=10, n=2000,
//   test=n/5, noise=1.0)
// Each class k has a template image T_k: per channel, the sum of three random plane waves
// a·cos(2π(u x/W + v y/H) + φ) with integer frequencies u, v in [0, 3] and amplitudes a in
// [0.5, 1]. Sample i gets a label drawn uniformly from its own random stream and pixels
// T_label + noise·N(0, 1), circularly shifted by up to 2 pixels in each direction, so a small
// CNN learns it easily (and a linear model less so once shifted). Rows are channel-planar with
// image shape C×H×W.
// Limits: held in memory as float; specs needing more than 8 GiB are refused.
#include <cmath>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "workloads/datasets/dataset.hpp"

namespace dsgd {

namespace {

constexpr const char* kImagesHint =
    "synthetic image parameters: shape=CxHxW (required), classes=K>=2, n=ROWS, test=ROWS, noise>=0, e.g. "
    "synthetic:shape=3x32x32,classes=10";
constexpr uint64_t kStreamTemplates = 0x1a6e;
constexpr uint64_t kStreamImageRows = 0x1a6f;
constexpr int kMaxShift = 2;
constexpr int kWaves = 3;

struct ImageParams {
  size_t c = 0, h = 0, w = 0;
  int classes = 10;
  size_t n = 2000;
  size_t test = 0;
  bool test_given = false;
  double noise = 1.0;
  size_t test_rows() const { return test_given ? test : n / 5; }
};

size_t parse_positive(const std::string& key, const std::string& value, size_t lo, size_t hi) {
  return dataset_parse_count(key, value, lo, hi, kImagesHint);
}

ImageParams images_parse(const std::string& text) {
  ImageParams p;
  bool have_shape = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      DSGD_THROW(InputError, kImagesHint, "synthetic: parameter '{}' needs a value (key=value)", item);
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "shape") {
      const size_t x1 = value.find('x'), x2 = x1 == std::string::npos ? x1 : value.find('x', x1 + 1);
      if (x1 == std::string::npos || x2 == std::string::npos) {
        DSGD_THROW(InputError, kImagesHint, "synthetic: shape '{}' is not CxHxW", value);
      }
      p.c = parse_positive("shape (channels)", value.substr(0, x1), 1, 64);
      p.h = parse_positive("shape (height)", value.substr(x1 + 1, x2 - x1 - 1), 1, 1024);
      p.w = parse_positive("shape (width)", value.substr(x2 + 1), 1, 1024);
      have_shape = true;
    } else if (key == "classes") {
      p.classes = static_cast<int>(parse_positive(key, value, 2, 1000));
    } else if (key == "n") {
      p.n = parse_positive(key, value, 1, 1ull << 31);
    } else if (key == "test") {
      p.test = parse_positive(key, value, 0, 1ull << 31);
      p.test_given = true;
    } else if (key == "noise") {
      size_t used = 0;
      double v = -1;
      try {
        v = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || !std::isfinite(v) || v < 0) {
        DSGD_THROW(InputError, kImagesHint, "synthetic: bad value '{}' for parameter noise (expected a number >= 0)",
                   value);
      }
      p.noise = v;
    } else {
      DSGD_THROW(InputError, kImagesHint, "synthetic: unknown parameter '{}' for images", key);
    }
  }
  if (!have_shape) DSGD_THROW(InputError, kImagesHint, "synthetic: images need shape=CxHxW");
  const double bytes = double(p.n + p.test_rows()) * double(p.c * p.h * p.w) * 4.0;
  if (bytes > 8.0 * (1ull << 30)) {
    DSGD_THROW(InputError, "lower n or the image size", "synthetic: {} images of {}x{}x{} need {:.1f} GiB",
               p.n + p.test_rows(), p.c, p.h, p.w, bytes / (1ull << 30));
  }
  return p;
}

}  // namespace

namespace detail {
void synthetic_images_validate_params(const std::string& params) {
  (void)images_parse(params);
}
}  // namespace detail

DatasetPair dataset_make_synthetic_images(const std::string& params, uint64_t seed) {
  const ImageParams p = images_parse(params);
  const size_t hw = p.h * p.w, pixels = p.c * hw;
  // Templates: (classes, C, H, W).
  std::vector<float> templates(size_t(p.classes) * pixels, 0.0f);
  Rng trng(rng_derive_seed(seed, kStreamTemplates));
  for (size_t k = 0; k < size_t(p.classes); ++k)
    for (size_t c = 0; c < p.c; ++c)
      for (int j = 0; j < kWaves; ++j) {
        const double u = double(trng.below(4)), v = double(trng.below(4));
        const double a = 0.5 + 0.5 * trng.uniform(), phi = 6.283185307179586 * trng.uniform();
        float* t = templates.data() + (k * p.c + c) * hw;
        for (size_t y = 0; y < p.h; ++y)
          for (size_t x = 0; x < p.w; ++x)
            t[y * p.w + x] += static_cast<float>(
                a * std::cos(6.283185307179586 * (u * double(x) / double(p.w) + v * double(y) / double(p.h)) + phi));
      }
  DatasetPair pair;
  Dataset* parts[2] = {&pair.train, &pair.test};
  const size_t rows[2] = {p.n, p.test_rows()};
  const char* names[2] = {"synthetic-images/train", "synthetic-images/test"};
  size_t global = 0;
  for (int s = 0; s < 2; ++s) {
    Dataset& ds = *parts[s];
    ds.name = names[s];
    ds.rows = rows[s];
    ds.features = pixels;
    ds.classes = p.classes;
    ds.channels = p.c;
    ds.height = p.h;
    ds.width = p.w;
    ds.dense.resize(ds.rows * pixels);
    ds.labels.resize(ds.rows);
    for (size_t i = 0; i < ds.rows; ++i, ++global) {
      Rng rng(rng_derive_seed(seed, kStreamImageRows, global));
      const auto label = static_cast<size_t>(rng.below(uint64_t(p.classes)));
      const long sy = long(rng.below(2 * kMaxShift + 1)) - kMaxShift,
                 sx = long(rng.below(2 * kMaxShift + 1)) - kMaxShift;
      ds.labels[i] = static_cast<int32_t>(label);
      float* dst = ds.dense.data() + i * pixels;
      for (size_t c = 0; c < p.c; ++c) {
        const float* t = templates.data() + (label * p.c + c) * hw;
        for (size_t y = 0; y < p.h; ++y)
          for (size_t x = 0; x < p.w; ++x) {
            const size_t ty = size_t((long(y) + sy + long(p.h) * kMaxShift) % long(p.h));
            const size_t tx = size_t((long(x) + sx + long(p.w) * kMaxShift) % long(p.w));
            dst[c * hw + y * p.w + x] = t[ty * p.w + tx] + static_cast<float>(p.noise * rng.normal());
          }
      }
    }
  }
  return pair;
}

}  // namespace dsgd
