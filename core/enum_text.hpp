// The text of a closed set's values (statuses, kinds) from one table per set: the value's
// text, the value of a text, and the list of known texts for error messages, all read from
// that table so that a new value is written once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dsgd {

template <class E>
struct EnumText {
  E value;
  const char* text;
};

template <class E, size_t N>
const char* enum_text(const EnumText<E> (&table)[N], E value) {
  for (const EnumText<E>& row : table)
    if (row.value == value) return row.text;
  return "?";  // not reached when every enumerator has a row
}

template <class E, size_t N>
std::optional<E> enum_parse(const EnumText<E> (&table)[N], std::string_view text) {
  for (const EnumText<E>& row : table)
    if (text == row.text) return row.value;
  return std::nullopt;
}

// "a, b, c": the table's texts, in table order.
template <class E, size_t N>
std::string enum_known(const EnumText<E> (&table)[N]) {
  std::string out;
  for (const EnumText<E>& row : table) out += (out.empty() ? "" : ", ") + std::string(row.text);
  return out;
}

}  // namespace dsgd
