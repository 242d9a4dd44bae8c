// emm/conformance/json_writer.hpp — a small streaming JSON writer for the reports.
//
//   JsonWriter json;
//   json.begin_object().key("verdict").value("CERTIFIED").key("results").begin_array();
//   json.end_array().end_object();
//   std::string text = json.str();   // pretty-printed, 2-space indent, valid UTF-8
//
// Strings are written as valid UTF-8 whatever they contain (a plugin's exception text may
// not be): invalid bytes become U+FFFD; control characters are escaped. Non-finite numbers
// become null. Misuse (a value where a key is required, unbalanced end_*) throws emm::Error.
//
// Not thread-safe; one writer builds one document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace emm::conformance {

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2);

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text);
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(double number);
  JsonWriter& null();

  // The document; throws emm::Error while an object or array is still open.
  const std::string& str() const;

 private:
  enum class Frame { object_expect_key, object_expect_value, array };
  JsonWriter& open(Frame frame, char bracket);
  // Closes the innermost `frame`; throws Error(misuse) when that is not what is open.
  JsonWriter& close(Frame frame, char bracket, const char* misuse);
  void before_value();
  void newline();

  int indent_;
  std::string out_;
  std::vector<Frame> stack_;
  std::vector<bool> first_;
  bool done_ = false;
};

// A JSON string literal, quotes included (valid UTF-8: sanitize_utf8, text_escaping.hpp).
std::string json_quote(std::string_view text);

}  // namespace emm::conformance
