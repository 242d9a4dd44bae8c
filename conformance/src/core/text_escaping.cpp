#include "emm/conformance/text_escaping.hpp"

#include <cstdint>
#include <cstdio>

namespace emm::conformance {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the well-formed UTF-8 sequence starting at text[i], or 0 if it is not one.
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char min_second = 0x80;
  unsigned char max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;
    if (lead == 0xED) max_second = 0x9F;  // no UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;
    if (lead == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

std::uint32_t decode(std::string_view sequence) {
  const auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(sequence[k]));
  };
  switch (sequence.size()) {
    case 1:
      return byte(0);
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
             (byte(3) & 0x3F);
  }
}

bool noncharacter(std::uint32_t c) {
  return (c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE;
}

bool bidi_control(std::uint32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

// Calls `emit(sequence, code point)` for each well-formed sequence and (U+FFFD, 0xFFFD) for
// each byte that is not part of one.
template <class Emit>
void for_each_code_point(std::string_view text, Emit&& emit) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      emit(kReplacement, 0xFFFD);
      ++i;
    } else {
      emit(text.substr(i, n), decode(text.substr(i, n)));
      i += n;
    }
  }
}

std::string escaped(std::uint32_t c) {
  char buffer[16];
  if (c < 0x100) {
    std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  }
  return buffer;
}

}  // namespace

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text,
                      [&out](std::string_view sequence, std::uint32_t) { out.append(sequence); });
  return out;
}

std::string xml_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&out](std::string_view sequence, std::uint32_t c) {
    switch (c) {
      case '&':
        out += "&amp;";
        return;
      case '<':
        out += "&lt;";
        return;
      case '>':
        out += "&gt;";
        return;
      case '"':
        out += "&quot;";
        return;
      case '\'':
        out += "&apos;";
        return;
      default:
        break;
    }
    const bool allowed =
        c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c != 0xFFFE && c != 0xFFFF);
    out += allowed ? sequence : kReplacement;
  });
  return out;
}

std::string visible_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&out](std::string_view sequence, std::uint32_t c) {
    if (c == '\n' || c == '\t') {
      out += sequence;
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || bidi_control(c)) {
      out += escaped(c);
    } else if (noncharacter(c)) {
      out += kReplacement;
    } else {
      out += sequence;
    }
  });
  return out;
}

}  // namespace emm::conformance
