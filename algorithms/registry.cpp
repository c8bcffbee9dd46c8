// The algorithm registry: one explicit table of the variants' entries (no static
// self-registration, which a static library's linker may drop). Each entry is declared in
// the variant's own file (algorithms/variant.hpp); adding a variant is that file and one line here.
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/variant.hpp"
#include "core/errors.hpp"

namespace dsgd {

const Variant& variant_ssgd();
const Variant& variant_localsgd();
const Variant& variant_diloco();
const Variant& variant_cocod();
const Variant& variant_dasgd();
const Variant& variant_overlap_local();
const Variant& variant_dpsgd();
const Variant& variant_zero();
const Variant& variant_adpsgd();
const Variant& variant_dreamddp();
const Variant& variant_ps();
const Variant& variant_palsgd();
const Variant& variant_mtdao();
const Variant& variant_osp();
const Variant& variant_oldsgd();
const Variant& variant_lasgd();
const Variant& variant_hogwild();
const Variant& variant_pdasgd();

const std::vector<const Variant*>& variant_all() {
  static const std::vector<const Variant*> entries = {
      &variant_ssgd(),    &variant_localsgd(),      &variant_diloco(), &variant_cocod(),
      &variant_dasgd(),   &variant_overlap_local(), &variant_dpsgd(),  &variant_zero(),
      &variant_adpsgd(),  &variant_dreamddp(),      &variant_ps(),     &variant_palsgd(),
      &variant_mtdao(),   &variant_osp(),           &variant_oldsgd(), &variant_lasgd(),
      &variant_hogwild(), &variant_pdasgd(),
  };
  return entries;
}

const Variant* variant_find(const std::string& name) {
  for (const Variant* v : variant_all())
    if (v->name == name) return v;
  return nullptr;
}

std::vector<const Variant*> variant_flag_owners(std::string_view key) {
  std::vector<const Variant*> owners;
  for (const Variant* v : variant_all())
    for (const VariantFlag& f : v->flags)
      if (key == f.key) owners.push_back(v);
  return owners;
}

const Variant& variant_get(const std::string& name) {
  if (const Variant* v = variant_find(name)) return *v;
  std::string known;
  for (const Variant* v : variant_all()) known += (known.empty() ? "" : ", ") + v->name;
  DSGD_THROW(InputError, fmt::format("available: {} (dsgd-bench list algorithms)", known), "unknown algorithm '{}'",
             name);
}

bool variant_uses_period(const std::string& algo) {
  const Variant* v = variant_find(algo);
  return v && v->takes_period;
}

bool variant_uses_compress(const std::string& algo) {
  const Variant* v = variant_find(algo);
  return v && v->no_compress.empty();
}

bool variant_timing_supported(const RunConfig& cfg) {
  const Variant* v = variant_find(cfg.algo);
  return v && v->timing && cfg.compress.empty() && (!v->timing_applies || v->timing_applies(cfg));
}

std::string variant_timing_supported_text() {
  std::vector<std::string> names;
  for (const Variant* v : variant_all())
    if (v->timing) names.push_back(v->timing_text.empty() ? v->name : v->timing_text);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out + ", without --compress";
}

std::unique_ptr<Algorithm> algorithm_create(const std::string& name, const RunConfig& cfg) {
  return variant_get(name).create(cfg);
}

}  // namespace dsgd
