#include "emm/conformance/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "emm/conformance/text_escaping.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {

std::string json_quote(std::string_view text) {
  const std::string clean = sanitize_utf8(text);
  std::string out = "\"";
  for (const char c : clean) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
          out += escape;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

JsonWriter::JsonWriter(int indent) : indent_(indent) {}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(stack_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (done_) throw Error("JsonWriter: the document is already complete");
  if (stack_.empty()) return;
  switch (stack_.back()) {
    case Frame::object_expect_key:
      throw Error("JsonWriter: a value inside an object needs a key first");
    case Frame::object_expect_value:
      stack_.back() = Frame::object_expect_key;
      return;
    case Frame::array:
      if (!first_.back()) out_ += ',';
      first_.back() = false;
      newline();
      return;
  }
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || stack_.back() != Frame::object_expect_key) {
    throw Error("JsonWriter: key() outside an object or where a value is expected");
  }
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  newline();
  out_ += json_quote(name);
  out_ += indent_ > 0 ? ": " : ":";
  stack_.back() = Frame::object_expect_value;
  return *this;
}

JsonWriter& JsonWriter::begin_object() { return open(Frame::object_expect_key, '{'); }

JsonWriter& JsonWriter::end_object() {
  return close(Frame::object_expect_key, '}',
               "JsonWriter: end_object() without a matching begin_object() or after a key");
}

JsonWriter& JsonWriter::begin_array() { return open(Frame::array, '['); }

JsonWriter& JsonWriter::end_array() {
  return close(Frame::array, ']', "JsonWriter: end_array() without a matching begin_array()");
}

JsonWriter& JsonWriter::open(Frame frame, char bracket) {
  before_value();
  out_ += bracket;
  stack_.push_back(frame);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(Frame frame, char bracket, const char* misuse) {
  if (stack_.empty() || stack_.back() != frame) throw Error(misuse);
  const bool empty = first_.back();
  stack_.pop_back();
  first_.pop_back();
  if (!empty) newline();
  out_ += bracket;
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  out_ += json_quote(text);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(const char* text) {
  if (text == nullptr) return null();
  return value(std::string_view(text));
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  before_value();
  out_ += std::to_string(number);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
  before_value();
  out_ += std::to_string(number);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  if (!std::isfinite(number)) return null();
  before_value();
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, number);
  out_.append(buffer, error == std::errc() ? end : buffer);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  if (stack_.empty()) done_ = true;
  return *this;
}

const std::string& JsonWriter::str() const {
  if (!stack_.empty()) throw Error("JsonWriter: an object or array is still open");
  return out_;
}

}  // namespace emm::conformance
