// emm/python/dotted_name.hpp — the syntax of "package.module" and "outer.Inner": dotted Python
// identifiers. Header-only and free of Python.h, so that emm-certify checks a --python or
// --nep49 target on its command line (a usage error, exit 2) with the same rule the embedded
// importer applies (ImportTarget::parse), whether or not the Python adapter is built.
//
// An identifier starts with a letter or '_' and goes on with letters, digits and '_'. Bytes of
// 0x80 and above are let through (Python 3 identifiers may be non-ASCII; the interpreter judges
// them); NUL, spaces, punctuation and empty parts ("a..b", ".a", "a.") are not names.
#pragma once

#include <string_view>

namespace emm::python {

constexpr bool is_identifier(std::string_view part) noexcept {
  if (part.empty()) return false;
  const auto letter = [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
  };
  if (!letter(static_cast<unsigned char>(part.front()))) return false;
  for (const char c : part) {
    const auto u = static_cast<unsigned char>(c);
    if (!letter(u) && !(u >= '0' && u <= '9')) return false;
  }
  return true;
}

constexpr bool is_dotted_name(std::string_view name) noexcept {
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    if (!is_identifier(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

static_assert(is_dotted_name("rmm.allocators.numba") && is_dotted_name("_m") &&
              !is_dotted_name("") && !is_dotted_name("a..b") && !is_dotted_name("1a") &&
              !is_dotted_name("a.") && !is_dotted_name(std::string_view("a\0b", 3)));

}  // namespace emm::python
