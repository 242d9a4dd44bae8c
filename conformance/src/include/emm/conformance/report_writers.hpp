// emm/conformance/report_writers.hpp — the ways a Certificate is written.
//
//   * to_text: the console table (clause, level, one column per backend), failures, warnings,
//     notes, the covered backends and the verdict line;
//   * to_json: the JSON report — stable, tools parse it (spec §5):
//       {"kit_version", "catalogue_version",
//        "plugin": {"path", "name", "interface_version", "capabilities": {...}},
//        "backends": [{"name", "ran", "device"?, "reason"?}],
//        "verdict": "CERTIFIED" | "NOT CERTIFIED" | "PARTIAL", "verdict_backends": [...],
//        "verdict_line", "clauses_run", "clauses_in_catalogue", "load_failure"?,
//        "results": [{"clause", "level", "backend", "outcome", "message", "notes",
//                     "duration_ms", "properties": {...}, "output"?}]}
//     outcome is one of pass|fail|not_supported|crash|timeout|not_run; level MUST|SHOULD|INFO (the
//     level for this plugin: ALLOC-10 is MUST when thread_safe is declared); "message" is the
//     failure or skip message, or a passing result's notes joined; "notes" lists them one by
//     one; "properties" holds the figures a check recorded (PERF/INFO), strings;
//     "capabilities" has one boolean per row of emm::kCapabilityFields plus
//     "defer_cleanup_behaviour"; interface_version is null when it could not be read;
//   * to_junit: JUnit XML, one <testcase> per (clause, backend), classname = clause group
//     ("LIFE"), name = "<ID> <backend>"; fail -> <failure>, crash/timeout/not_run -> <error>,
//     not_supported -> <skipped>; the clause's output in <system-out>;
//   * to_markdown: a certificate for people: plugin, capabilities, defer_cleanup text, backends
//     covered, the table, failures, warnings, notes, measurements, outputs and the verdict;
//   * to_html: the same as one self-contained HTML file, the clause x backend matrix in colour.
// Plugin text is made safe for each format (text_escaping.hpp). The JSON report's shape is
// docs/report.schema.json.
//
// Pure functions of the Certificate (the verdict is read, never recomputed).
#pragma once

#include <string>

#include "emm/conformance/report.hpp"

namespace emm::conformance {

std::string to_text(const Certificate& certificate);
std::string to_json(const Certificate& certificate);
std::string to_junit(const Certificate& certificate);
std::string to_markdown(const Certificate& certificate);
std::string to_html(const Certificate& certificate);

}  // namespace emm::conformance
