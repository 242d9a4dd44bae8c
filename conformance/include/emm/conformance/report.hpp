// emm/conformance/report.hpp — a certification's results and the four ways it is written.
//
// emm-certify fills a CertificationReport and writes:
//   * the console table and verdict line (to_text),
//   * the JSON report (to_json) — stable, tools parse it (spec §5):
//       {"kit_version", "catalogue_version",
//        "plugin": {"path", "name", "interface_version", "capabilities": {...}},
//        "backends": [{"name", "ran", "device"?, "reason"?}],
//        "verdict": "CERTIFIED" | "NOT CERTIFIED",
//        "results": [{"clause", "level", "backend", "outcome", "message", "duration_ms",
//                     "properties": {...}}]}
//     outcome is one of pass|fail|not_supported|crash|timeout; level MUST|SHOULD|INFO (the
//     level for this plugin: ALLOC-10 is MUST when thread_safe is declared); "properties"
//     holds the figures a check recorded (PERF/INFO), strings; interface_version is null when
//     the probe instance could not report it;
//   * JUnit XML (to_junit): one <testcase> per (clause, backend), classname = clause group
//     ("LIFE"), name = "<ID> <backend>"; fail -> <failure>, crash/timeout -> <error>,
//     not_supported -> <skipped>;
//   * a Markdown certificate (to_markdown): plugin, capabilities, defer_cleanup text, backends
//     covered, the table, warnings, measurements and the verdict.
//
// Verdict (spec §3): CERTIFIED iff at least one backend ran and every MUST result is pass or
// not_supported (run_clause only lets not_supported through where it is allowed). SHOULD
// results other than pass are warnings.
//
// Plain value types; the functions are pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/outcome.hpp"

namespace emm::conformance {

struct PluginInfo {
  std::string path;
  std::string name;
  std::optional<int> interface_version;
  bool memory_info = false;
  bool ipc = false;
  bool host_only_derived = false;
  bool thread_safe = false;
  bool runs_on_fake_driver = true;
  bool pooling = false;
  std::string defer_cleanup_behaviour;

  static PluginInfo from(const std::string& path, const std::string& name,
                         const Capabilities& capabilities);
};

struct BackendStatus {
  std::string name;  // "fake" | "gpu"
  bool ran = false;
  std::string device;  // when it ran: the device's name
  std::string reason;  // when it did not: why
};

struct CertificationReport {
  std::string kit_version;
  std::string catalogue_version;
  PluginInfo plugin;
  std::vector<BackendStatus> backends;
  std::vector<ClauseResult> results;
};

struct Verdict {
  bool certified = false;
  bool any_backend_ran = false;
  std::size_t must_failures = 0;              // MUST results not pass/not_supported
  std::vector<const ClauseResult*> warnings;  // SHOULD results that did not pass
  // "CERTIFIED" or "NOT CERTIFIED".
  std::string word() const;
  // "VERDICT: CERTIFIED" / "VERDICT: NOT CERTIFIED (3 MUST clauses failed)" /
  // "VERDICT: NOT CERTIFIED (no backend ran)".
  std::string line() const;
};

Verdict compute_verdict(const CertificationReport& report);

std::string to_json(const CertificationReport& report);
std::string to_junit(const CertificationReport& report);
std::string to_markdown(const CertificationReport& report);
// The final console output: table (clause, level, one column per backend), warnings, the
// covered backends and the verdict line.
std::string to_text(const CertificationReport& report);

}  // namespace emm::conformance
