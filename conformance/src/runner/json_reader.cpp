#include "emm/conformance/json_reader.hpp"

#include <charconv>
#include <cstdint>

namespace emm::conformance {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value(0);
    skip_space();
    if (at_ < text_.size()) fail("text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError("not valid JSON at byte " + std::to_string(at_) + ": " + what);
  }

  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }

  bool take(std::string_view literal) {
    if (text_.substr(at_, literal.size()) != literal) return false;
    at_ += literal.size();
    return true;
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxJsonDepth) fail("nested deeper than " + std::to_string(kMaxJsonDepth));
    skip_space();
    if (at_ >= text_.size()) fail("a value was expected");
    const char c = text_[at_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return JsonValue(parse_string());
    if (take("true")) return JsonValue(true);
    if (take("false")) return JsonValue(false);
    if (take("null")) return JsonValue();
    return JsonValue(parse_number());
  }

  JsonValue parse_object(int depth) {
    ++at_;
    JsonValue::Object members;
    skip_space();
    if (take("}")) return JsonValue(std::move(members));
    while (true) {
      skip_space();
      if (at_ >= text_.size() || text_[at_] != '"') fail("a member name was expected");
      std::string key = parse_string();
      skip_space();
      if (!take(":")) fail("':' was expected after a member name");
      members.insert_or_assign(std::move(key), parse_value(depth + 1));
      skip_space();
      if (take("}")) return JsonValue(std::move(members));
      if (!take(",")) fail("',' or '}' was expected");
    }
  }

  JsonValue parse_array(int depth) {
    ++at_;
    JsonValue::Array items;
    skip_space();
    if (take("]")) return JsonValue(std::move(items));
    while (true) {
      items.push_back(parse_value(depth + 1));
      skip_space();
      if (take("]")) return JsonValue(std::move(items));
      if (!take(",")) fail("',' or ']' was expected");
    }
  }

  unsigned hex4() {
    if (at_ + 4 > text_.size()) fail("a \\u escape needs four hex digits");
    unsigned value = 0;
    const auto [end, error] =
        std::from_chars(text_.data() + at_, text_.data() + at_ + 4, value, 16);
    if (error != std::errc() || end != text_.data() + at_ + 4) fail("bad \\u escape");
    at_ += 4;
    return value;
  }

  static void append_utf8(std::string& out, std::uint32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }

  std::string parse_string() {
    ++at_;
    std::string out;
    while (true) {
      if (at_ >= text_.size()) fail("an unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("an unterminated escape");
      const char e = text_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t code = hex4();
          if (code >= 0xD800 && code <= 0xDBFF && take("\\u")) {
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a lone high surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xD800 && code <= 0xDFFF) {
            code = 0xFFFD;  // a lone surrogate: kept as U+FFFD, the text stays valid UTF-8
          }
          append_utf8(out, code);
          break;
        }
        default:
          fail(std::string("an unknown escape \\") + e);
      }
    }
  }

  double parse_number() {
    const std::size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    const auto digits = [&] {
      const std::size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - first;
    };
    if (digits() == 0) {
      at_ = start;
      fail("a value was expected");
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (digits() == 0) fail("digits were expected after '.'");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) fail("digits were expected in an exponent");
    }
    double value = 0;
    const auto [end, error] = std::from_chars(text_.data() + start, text_.data() + at_, value);
    if (error != std::errc() || end != text_.data() + at_) fail("a number out of range");
    return value;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

[[noreturn]] void wrong_type(const char* expected) {
  throw JsonError(std::string("a JSON ") + expected + " was expected");
}

}  // namespace

bool JsonValue::boolean() const {
  if (const bool* v = std::get_if<bool>(&value_)) return *v;
  wrong_type("boolean");
}

double JsonValue::number() const {
  if (const double* v = std::get_if<double>(&value_)) return *v;
  wrong_type("number");
}

const std::string& JsonValue::string() const {
  if (const std::string* v = std::get_if<std::string>(&value_)) return *v;
  wrong_type("string");
}

const JsonValue::Array& JsonValue::array() const {
  if (const Array* v = std::get_if<Array>(&value_)) return *v;
  wrong_type("array");
}

const JsonValue::Object& JsonValue::object() const {
  if (const Object* v = std::get_if<Object>(&value_)) return *v;
  wrong_type("object");
}

const JsonValue* JsonValue::find(std::string_view key) const {
  const Object& members = object();
  const auto found = members.find(key);
  return found == members.end() ? nullptr : &found->second;
}

const JsonValue& JsonValue::at(std::string_view key) const {
  if (const JsonValue* value = find(key)) return *value;
  throw JsonError("the JSON object has no member '" + std::string(key) + "'");
}

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace emm::conformance
