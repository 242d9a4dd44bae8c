#include "emm/conformance/outcome.hpp"

#include <array>
#include <cstddef>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

namespace {

// The JSON report's words, in Outcome's order.
constexpr std::array<std::string_view, 6> kOutcomeNames{"pass",  "fail",    "not_supported",
                                                        "crash", "timeout", "not_run"};
static_assert(kOutcomeNames.size() == static_cast<std::size_t>(Outcome::not_run) + 1,
              "one name per Outcome");

}  // namespace

std::string_view to_string(Outcome outcome) noexcept {
  const auto index = static_cast<std::size_t>(outcome);
  return index < kOutcomeNames.size() ? kOutcomeNames[index] : "fail";
}

std::optional<Outcome> parse_outcome(std::string_view text) noexcept {
  for (std::size_t index = 0; index < kOutcomeNames.size(); ++index) {
    if (text == kOutcomeNames[index]) return static_cast<Outcome>(index);
  }
  return std::nullopt;
}

std::string unobserved_note(const ClauseResult& result, const std::string& what) {
  return (result.clause != nullptr ? result.clause->id : std::string("?")) + ": " + what +
         " not observable on " + std::string(to_string(result.backend));
}

ResultMeaning meaning_of(const ClauseResult& result) noexcept {
  switch (result.outcome) {
    case Outcome::pass:
      return ResultMeaning::passed;
    case Outcome::not_supported:
      // A SHOULD the plugin declares it does not do (ALLOC-10 without thread_safe) is worth a
      // warning; a MUST or INFO clause that does not apply is only skipped.
      return result.level == Level::should ? ResultMeaning::warning : ResultMeaning::skipped;
    case Outcome::fail:
    case Outcome::crash:
    case Outcome::timeout:
    case Outcome::not_run:
      break;
  }
  switch (result.level) {
    case Level::must:
      return ResultMeaning::counts_against;
    case Level::should:
      return result.outcome == Outcome::not_run ? ResultMeaning::noted : ResultMeaning::warning;
    case Level::info:
      break;
  }
  return ResultMeaning::noted;
}

std::string_view to_string(ResultMeaning meaning) noexcept {
  switch (meaning) {
    case ResultMeaning::passed:
      return "passed";
    case ResultMeaning::skipped:
      return "skipped";
    case ResultMeaning::counts_against:
      return "counts_against";
    case ResultMeaning::warning:
      return "warning";
    case ResultMeaning::noted:
      break;
  }
  return "noted";
}

std::string summary(const ClauseResult& result) {
  if (!result.message.empty()) return result.message;
  std::string text;
  for (const std::string& note : result.notes) {
    if (!text.empty()) text += "; ";
    text += note;
  }
  return text;
}

}  // namespace emm::conformance
