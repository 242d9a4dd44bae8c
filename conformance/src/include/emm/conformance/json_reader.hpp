// emm/conformance/json_reader.hpp — reads a JSON document into a tree of values, for tools
// that consume emm-certify's own reports (the multi-plugin index, report_index.hpp).
//
//   JsonValue report = parse_json(text);                     // throws JsonError
//   const std::string& verdict = report.at("verdict").string();
//   for (const JsonValue& r : report.at("results").array()) ...
//
// Strict RFC 8259: one value, no comments, no trailing commas, \u escapes (surrogate pairs
// joined), numbers as double. Nesting is limited (kMaxJsonDepth) so that hostile input cannot
// exhaust the stack. A plain value type.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "emm/errors.hpp"

namespace emm::conformance {

// Text that is not JSON, or a value of another type than asked; the message says where.
class JsonError : public Error {
 public:
  using Error::Error;
};

inline constexpr int kMaxJsonDepth = 64;

class JsonValue {
 public:
  using Array = std::vector<JsonValue>;
  using Object = std::map<std::string, JsonValue, std::less<>>;

  JsonValue() = default;  // null
  explicit JsonValue(bool value) : value_(value) {}
  explicit JsonValue(double value) : value_(value) {}
  explicit JsonValue(std::string value) : value_(std::move(value)) {}
  explicit JsonValue(Array value) : value_(std::move(value)) {}
  explicit JsonValue(Object value) : value_(std::move(value)) {}

  bool is_null() const noexcept { return std::holds_alternative<std::monostate>(value_); }
  // Each throws JsonError naming the expected type when the value is another.
  bool boolean() const;
  double number() const;
  const std::string& string() const;
  const Array& array() const;
  const Object& object() const;
  // The member `key` of an object; throws JsonError when absent.
  const JsonValue& at(std::string_view key) const;
  // The member, or null when absent.
  const JsonValue* find(std::string_view key) const;

 private:
  std::variant<std::monostate, bool, double, std::string, Array, Object> value_;
};

JsonValue parse_json(std::string_view text);

}  // namespace emm::conformance
