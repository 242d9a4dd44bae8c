// emm/conformance/outcome.hpp — what one (clause, backend) run yields (spec §3).
//
//   pass           the plugin meets the clause
//   fail           it does not; the message starts "[<ID>] " and says expected vs seen
//   not_supported  an optional capability is declared absent, or the backend cannot run
//   crash          the plugin killed the process (signal, abort, std::terminate)
//   timeout        no answer within the time bound
//
// Plain value types.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emm/conformance/catalogue.hpp"

namespace emm::conformance {

enum class Outcome { pass, fail, not_supported, crash, timeout };

// "pass", "fail", "not_supported", "crash", "timeout" (the JSON report's words).
std::string_view to_string(Outcome outcome) noexcept;
std::optional<Outcome> parse_outcome(std::string_view text) noexcept;

// A named figure a check recorded (PERF/INFO measurements, seeds, counts), in recording order.
using Property = std::pair<std::string, std::string>;

struct ClauseResult {
  std::string clause;
  std::string backend;        // "fake" | "gpu"
  Level level = Level::must;  // the clause's level for this plugin (ALLOC-10 may be MUST)
  Outcome outcome = Outcome::fail;
  std::string message;  // empty on pass unless the check left a note
  double duration_ms = 0.0;
  std::vector<Property> properties;
};

}  // namespace emm::conformance
