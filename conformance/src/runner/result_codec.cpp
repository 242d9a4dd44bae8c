#include "emm/conformance/result_codec.hpp"

#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

#include "runner/field_codec.hpp"

namespace emm::conformance {
namespace {

using namespace field_codec;

constexpr std::string_view kMagic = "EMMR3\n";
constexpr std::string_view kAnswerMagic = "EMMANS3\n";
constexpr std::string_view kResultKind = "result";
constexpr std::string_view kLoadFailureKind = "load_failure";
constexpr std::string_view kReusable = "reusable";
constexpr std::string_view kRetire = "retire";

// What the clause's process observed: everything but the clause, the backend and the level,
// which the parent knows from its command and stamps (stamp_result).
void put_observed(std::string& out, const ClauseResult& result) {
  put(out, to_string(result.outcome));
  put(out, result.message);
  // The shortest text that reads back as the same double (at most 24 characters).
  char duration[64];
  const auto written = std::to_chars(duration, duration + sizeof duration, result.duration_ms);
  put(out, std::string_view(duration, written.ptr));
  put_list(out, result.notes);
  put_list(out, result.unobserved);
  put(out, std::to_string(result.properties.size()));
  for (const auto& [key, value] : result.properties) {
    put(out, key);
    put(out, value);
  }
  put(out, result.reproducer ? "1" : "0");
  if (const std::optional<Reproducer>& reproducer = result.reproducer) {
    put(out, std::to_string(reproducer->seed));
    put(out, std::to_string(reproducer->budget));
    put(out, std::to_string(reproducer->sequences));
    put(out, std::to_string(reproducer->shrinks));
    put_list(out, reproducer->calls);
    put(out, reproducer->gtest);
    put(out, reproducer->python);
    put(out, reproducer->for_python ? "python" : "cpp");
  }
}

}  // namespace

std::string encode_result(const ClauseResult& result) {
  std::string out(kMagic);
  put(out, result.clause != nullptr ? result.clause->id : "");
  put(out, to_string(result.backend));
  put(out, to_string(result.level));
  put_observed(out, result);
  return out;
}

namespace {

template <class Number>
bool take_number(std::string_view& payload, Number& number) {
  std::string text;
  if (!take(payload, text)) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc() && end == text.data() + text.size() && number >= 0;
}

bool take_reproducer(std::string_view& payload, std::optional<Reproducer>& out) {
  std::string present;
  if (!take(payload, present)) return false;
  if (present == "0") return true;
  if (present != "1") return false;
  Reproducer reproducer;
  if (!take_number(payload, reproducer.seed) || !take_number(payload, reproducer.budget) ||
      !take_number(payload, reproducer.sequences) || !take_number(payload, reproducer.shrinks) ||
      !take_list(payload, reproducer.calls) || !take(payload, reproducer.gtest) ||
      !take(payload, reproducer.python)) {
    return false;
  }
  std::string language;
  if (!take(payload, language) || (language != "python" && language != "cpp")) return false;
  reproducer.for_python = language == "python";
  out = std::move(reproducer);
  return true;
}

}  // namespace

namespace {

// put_observed's fields, into `result`; false on anything garbled.
bool take_observed(std::string_view& payload, ClauseResult& result) {
  std::string outcome, duration;
  if (!take(payload, outcome) || !take(payload, result.message) || !take(payload, duration) ||
      !take_list(payload, result.notes) || !take_list(payload, result.unobserved)) {
    return false;
  }
  const auto parsed_outcome = parse_outcome(outcome);
  if (!parsed_outcome) return false;
  result.outcome = *parsed_outcome;
  const auto [end, error] =
      std::from_chars(duration.data(), duration.data() + duration.size(), result.duration_ms);
  if (error != std::errc() || end != duration.data() + duration.size()) return false;
  // A child measures a finite, non-negative time; anything else is a garbled answer.
  if (!std::isfinite(result.duration_ms) || result.duration_ms < 0) return false;
  std::size_t count = 0;
  if (!take_count(payload, count)) return false;
  for (std::size_t i = 0; i < count; ++i) {
    std::string key, value;
    if (!take(payload, key) || !take(payload, value)) return false;
    result.properties.emplace_back(std::move(key), std::move(value));
  }
  return take_reproducer(payload, result.reproducer);
}

}  // namespace

std::optional<ClauseResult> decode_result(std::string_view payload) {
  if (!payload.starts_with(kMagic)) return std::nullopt;
  payload.remove_prefix(kMagic.size());
  ClauseResult result;
  std::string id, backend, level;
  if (!take(payload, id) || !take(payload, backend) || !take(payload, level)) return std::nullopt;
  result.clause = catalogue().find(id);
  const auto parsed_backend = parse_backend(backend);
  const auto parsed_level = parse_level(level);
  if (result.clause == nullptr || !parsed_backend || !parsed_level) return std::nullopt;
  result.backend = *parsed_backend;
  result.level = *parsed_level;
  if (!take_observed(payload, result) || !payload.empty()) return std::nullopt;
  return result;
}

void stamp_result(ClauseResult& result, const Clause& clause, BackendKind backend, Level level) {
  result.clause = &clause;
  result.backend = backend;
  result.level = level;
}

ChildAnswer ChildAnswer::loaded(std::string nonce, ClauseResult result) {
  ChildAnswer answer;
  answer.kind = Kind::result;
  answer.nonce = std::move(nonce);
  answer.result = std::move(result);
  return answer;
}

ChildAnswer ChildAnswer::not_loaded(std::string nonce, std::string why) {
  ChildAnswer answer;
  answer.kind = Kind::load_failure;
  answer.nonce = std::move(nonce);
  answer.load_failure = std::move(why);
  answer.reusable = false;
  return answer;
}

std::string encode_answer(const ChildAnswer& answer) {
  std::string out(kAnswerMagic);
  put(out, answer.nonce);
  if (answer.kind == ChildAnswer::Kind::result) {
    put(out, kResultKind);
    std::string observed;
    put_observed(observed, answer.result);
    put(out, observed);
  } else {
    put(out, kLoadFailureKind);
    put(out, answer.load_failure);
  }
  put(out, answer.reusable ? kReusable : kRetire);
  return out;
}

std::optional<ChildAnswer> decode_answer(std::string_view payload) {
  if (!payload.starts_with(kAnswerMagic)) return std::nullopt;
  payload.remove_prefix(kAnswerMagic.size());
  ChildAnswer answer;
  std::string kind, body, reuse;
  if (!take(payload, answer.nonce) || !take(payload, kind) || !take(payload, body) ||
      !take(payload, reuse) || !payload.empty() || (reuse != kReusable && reuse != kRetire)) {
    return std::nullopt;
  }
  answer.reusable = reuse == kReusable;
  if (kind == kResultKind) {
    std::string_view observed = body;
    if (!take_observed(observed, answer.result) || !observed.empty()) return std::nullopt;
    answer.kind = ChildAnswer::Kind::result;
  } else if (kind == kLoadFailureKind) {
    answer.kind = ChildAnswer::Kind::load_failure;
    answer.load_failure = std::move(body);
  } else {
    return std::nullopt;
  }
  return answer;
}

}  // namespace emm::conformance
