// See buffer.hpp.
#include "core/buffer.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dsgd {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::dtype_f32: return "float32";
    case DType::dtype_f64: return "float64";
  }
  return "unknown";
}

std::string device_name(Device d) {
  switch (d.kind) {
    case DeviceKind::device_host: return "host";
    case DeviceKind::device_cuda: return fmt::format("cuda:{}", d.index);
    case DeviceKind::device_test: return fmt::format("test:{}", d.index);
  }
  return "unknown";
}

namespace {

[[noreturn]] void not_host_f32(const char* what, DType t, Device d) {
  DSGD_THROW(Error, "this implementation runs on host float32 memory only: keep the model on the host",
             "{}: given {} memory on {}", what, dtype_name(t), device_name(d));
}

}  // namespace

float* BufferView::host_f32(const char* what) const {
  if (!device.is_host() || dtype != DType::dtype_f32) not_host_f32(what, dtype, device);
  return f32();
}

const float* ConstBufferView::host_f32(const char* what) const {
  if (!device.is_host() || dtype != DType::dtype_f32) not_host_f32(what, dtype, device);
  return f32();
}

}  // namespace dsgd
