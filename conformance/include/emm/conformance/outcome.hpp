// emm/conformance/outcome.hpp — what one (clause, backend) run yields (spec §3).
//
//   pass           the plugin meets the clause
//   fail           it does not; the message starts "[<ID>] " and says expected vs seen
//   not_supported  an optional capability is declared absent, or the backend cannot run
//   crash          the plugin killed the process (signal, abort, std::terminate)
//   timeout        no answer within the time bound
//   not_run        the clause could not be run at all: the plugin library could not be loaded
//
// Plain value type; to_string() and parse_outcome() are pure and may be called from any thread.
#pragma once

#include <optional>
#include <string_view>

namespace emm::conformance {

enum class Outcome { pass, fail, not_supported, crash, timeout, not_run };

// "pass", "fail", "not_supported", "crash", "timeout", "not_run" (the JSON report's words).
[[nodiscard]] std::string_view to_string(Outcome outcome) noexcept;
[[nodiscard]] std::optional<Outcome> parse_outcome(std::string_view text) noexcept;

}  // namespace emm::conformance
