// Small text helpers shared by the parsers of flags and specs.
#pragma once

#include <string>
#include <string_view>

namespace dsgd {

// `text` without leading and trailing blanks (space, tab, CR, LF).
inline std::string_view text_trim_view(std::string_view text) {
  constexpr std::string_view blanks = " \t\r\n";
  const size_t begin = text.find_first_not_of(blanks);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(blanks) - begin + 1);
}

// The same, as a copy.
inline std::string text_trim(std::string_view text) {
  return std::string(text_trim_view(text));
}

}  // namespace dsgd
