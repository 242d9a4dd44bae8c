// emm/conformance/clause_result.hpp — the result of one clause on one backend, as values.
//
// Made by evaluate() (evaluate.hpp) in the process that ran the check, carried across the
// process boundary by the result codec, and read by the verdict and the report writers: the
// clause is a pointer into catalogue(), the backend and the outcome are enumerations; text is
// made only by the writers.
//
//   ClauseResult r = evaluate(subject, *catalogue().find("LIFE-2"), backend);
//   if (r.outcome == Outcome::fail) std::cerr << r.message << '\n';   // "[LIFE-2] ..."
//
// A plain value type that owns its text; the Clause it points to is catalogue()'s and lives
// for the process. No shared state: one thread per object, as for any value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/exploration.hpp"
#include "emm/conformance/outcome.hpp"

namespace emm::conformance {

// A named figure a check recorded (PERF/INFO measurements, seeds, counts), in recording order.
using Property = std::pair<std::string, std::string>;

struct ClauseResult {
  const Clause* clause = nullptr;  // into catalogue()
  BackendKind backend = BackendKind::fake;
  Level level = Level::must;  // the clause's level for this plugin (ALLOC-10 may be MUST)
  Outcome outcome = Outcome::fail;
  // Why it did not pass ("[<ID>] ..."); empty on pass.
  std::string message;
  // Remarks the check left (e.g. "no block was shared: not a pool").
  std::vector<std::string> notes;
  // What the backend could not observe, so that part of the clause was not checked here
  // (e.g. "live cuMemHostAlloc blocks"); the certificate shows "DEFER-3: live cuMemHostAlloc
  // blocks not observable on gpu" (unobserved_note()).
  std::vector<std::string> unobserved;
  double duration_ms = 0.0;
  std::vector<Property> properties;
  // What the plugin and the check printed on stdout and stderr while the clause ran (capped:
  // the first and last 64 KiB), when the clause ran in a child process.
  std::string output;
  // For a failure found by the clause's property: the shortest failing sequence of calls, with
  // the seed that replays it.
  std::optional<Reproducer> reproducer;
};

// What one result means for the plugin: the one pass/fail policy (spec §3) that the verdict,
// the GoogleTest and Boost.Test front ends and the JUnit report all follow.
enum class ResultMeaning {
  passed,          // pass
  skipped,         // a MUST or INFO clause not_supported: it does not apply to the plugin
  counts_against,  // a MUST clause that did not pass (fail, crash, timeout, not_run)
  warning,         // a SHOULD clause that failed, crashed, timed out or is not supported:
                   // reported, not counted
  noted,           // an INFO clause that did not pass, or a SHOULD clause not run: shown only
};
[[nodiscard]] ResultMeaning meaning_of(const ClauseResult& result) noexcept;
// "passed", "skipped", "counts_against", "warning", "noted" (the JSON report's `meaning`).
[[nodiscard]] std::string_view to_string(ResultMeaning meaning) noexcept;

// `result.message`, or for a result without one its notes joined with "; ".
[[nodiscard]] std::string summary(const ClauseResult& result);
// "DEFER-3: host-free deferral not observable on gpu".
[[nodiscard]] std::string unobserved_note(const ClauseResult& result, const std::string& what);

}  // namespace emm::conformance
