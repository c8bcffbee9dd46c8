// See memory_info.hpp.
#include "core/memory_info.hpp"

#include <fstream>
#include <string>

namespace dsgd {

double memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024.0;
  }
  return 0;
}

}  // namespace dsgd
