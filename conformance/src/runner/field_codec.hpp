// field_codec.hpp — private to the runner: the length-prefixed fields ("<len>:<bytes>") every
// message between emm-certify and its children is made of, so that any byte can travel in a
// field and a truncated or padded message is refused rather than misread.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace emm::conformance::field_codec {

inline void put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
}

// Takes one field off the front of `in`; false when `in` does not start with a whole field.
inline bool take(std::string_view& in, std::string& field) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos) return false;
  std::size_t length = 0;
  const auto [end, error] = std::from_chars(in.data(), in.data() + colon, length);
  if (error != std::errc() || end != in.data() + colon) return false;
  if (in.size() - colon - 1 < length) return false;
  field.assign(in.substr(colon + 1, length));
  in.remove_prefix(colon + 1 + length);
  return true;
}

// A count field that cannot exceed the items the rest of `in` could hold (each takes at least
// two bytes, "0:"), so a forged count cannot make the reader reserve or loop for long.
inline bool take_count(std::string_view& in, std::size_t& count) {
  std::string text;
  if (!take(in, text)) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  return error == std::errc() && end == text.data() + text.size() && count <= in.size() / 2;
}

inline void put_list(std::string& out, const std::vector<std::string>& items) {
  put(out, std::to_string(items.size()));
  for (const std::string& item : items) put(out, item);
}

inline bool take_list(std::string_view& in, std::vector<std::string>& items) {
  std::size_t count = 0;
  if (!take_count(in, count)) return false;
  for (std::size_t i = 0; i < count; ++i) {
    std::string item;
    if (!take(in, item)) return false;
    items.push_back(std::move(item));
  }
  return true;
}

}  // namespace emm::conformance::field_codec
