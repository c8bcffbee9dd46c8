// Fuzz target: run configuration files (core/run_config.cpp). The first byte picks TOML
// (odd) or JSON (even); the rest is the file's text. A loaded configuration is validated
// too, as `dsgd-bench run --config` would.
#include "core/run_config.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool toml = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  dsgd_fuzz::refuse_ok([&] {
    dsgd::RunConfig cfg;
    dsgd::run_config_load_text(cfg, text, toml ? "fuzz.toml" : "fuzz.json", toml);
    dsgd::run_config_validate(cfg);
    (void)dsgd::run_config_to_json(cfg).dump();
  });
  return 0;
}
