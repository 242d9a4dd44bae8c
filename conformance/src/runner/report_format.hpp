// report_format.hpp — private to the runner: what the report writers share (row order, cells,
// the backends-covered sentence, capability rows).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/report.hpp"

namespace emm::conformance::report_format {

// The clauses that have results, in catalogue order.
std::vector<const Clause*> clause_order(const CertificationReport& report);
const ClauseResult* find_result(const CertificationReport& report, const Clause& clause,
                                BackendKind backend);
// The level shown for a clause's row (its results' level for this plugin).
std::string row_level(const CertificationReport& report, const Clause& clause);
// "pass", "FAIL", "fail (warning)", "not_supported", "CRASH", "TIMEOUT", "not run", "-".
std::string cell(const ClauseResult* result, const BackendStatus& backend);
// "Backends covered: fake (emmkit fake device). Not run: gpu (no GPU: ...)".
std::string covered(const CertificationReport& report);
// "1.234" seconds.
std::string seconds(double ms);
// Plugin text on the console: visible_text(), with every line after the first indented, so that
// no line of it starts where the certifier's own lines do (a plugin's "VERDICT: CERTIFIED" line
// is shown as part of the quoted text, never as a verdict).
std::string console_text(std::string_view text);

// The command line that replays a result's reproducer: "emm-certify --plugin PATH --backend fake
// --only ALLOC-2 --seed 1 --budget 24".
std::string replay_command(const CertificationReport& report, const ClauseResult& result);
// "the shortest failing sequence found: 4 calls (sequence 3 of 24 failed, shrunk 7 times)".
std::string reproducer_heading(const Reproducer& reproducer);
// The reproducer's code to paste: its Python snippet for a Python plugin, else its GoogleTest
// body; and the language's name for a code fence ("python", "cpp").
const std::string& reproducer_code(const Reproducer& reproducer);
const char* reproducer_language(const Reproducer& reproducer);

}  // namespace emm::conformance::report_format
