// The console rendering of a Certificate (report_writers.hpp). Everything a plugin supplied is
// passed through console_text(): a terminal shows it, it does not act on it, and none of its
// lines can pass for one of the certifier's.
#include <cstdio>
#include <sstream>

#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {

using namespace report_format;

std::string to_text(const Certificate& certificate) {
  const CertificationReport& report = certificate.report;
  const Verdict& verdict = certificate.verdict;
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %-7s", "CLAUSE", "LEVEL");
  out << line;
  for (const BackendStatus& b : report.backends) {
    std::snprintf(line, sizeof line, " %-16s", std::string(to_string(b.kind)).c_str());
    out << line;
  }
  out << "\n";
  for (const Clause* clause : clause_order(report)) {
    std::snprintf(line, sizeof line, "%-10s %-7s", clause->id.c_str(),
                  row_level(report, *clause).c_str());
    out << line;
    for (const BackendStatus& b : report.backends) {
      std::snprintf(line, sizeof line, " %-16s",
                    cell(find_result(report, *clause, b.kind), b).c_str());
      out << line;
    }
    out << "\n";
  }
  // A failure's reproducer: numbered calls and the command that replays them.
  auto sequence = [&](const ClauseResult& r) {
    if (!r.reproducer) return;
    out << "    " << reproducer_heading(*r.reproducer) << ":\n";
    std::size_t number = 0;
    for (const std::string& call : r.reproducer->calls) {
      char label[16];
      std::snprintf(label, sizeof label, "    %3zu. ", ++number);
      std::string lines = visible_text(call);
      for (std::size_t at = lines.find('\n'); at != std::string::npos;
           at = lines.find('\n', at + 1)) {
        lines.insert(at + 1, "         ");
      }
      out << label << lines << "\n";
    }
    out << "    replay: " << visible_text(replay_command(report, r)) << "\n";
  };
  auto item = [&out](const ClauseResult& r, const std::string& text) {
    out << r.clause->id << " (" << to_string(r.backend) << ", " << to_string(r.outcome)
        << "): " << console_text(text) << "\n";
  };
  if (!report.plugin_loaded) {
    out << "\nThe " << subject_noun(report.subject)
        << " could not be loaded: " << console_text(report.load_failure) << "\n";
  } else if (!verdict.failures.empty()) {
    out << "\nFailed MUST clauses:\n";
    for (const std::size_t i : verdict.failures) {
      out << "  ";
      item(report.results[i], report.results[i].message);
      sequence(report.results[i]);
    }
  }
  if (!verdict.warnings.empty()) {
    out << "\nWarnings (SHOULD clauses):\n";
    for (const std::size_t i : verdict.warnings) {
      out << "  warning: ";
      item(report.results[i], report.results[i].message);
      sequence(report.results[i]);
    }
  }
  bool header = false;
  for (const ClauseResult& r : report.results) {
    for (const std::string& what : r.unobserved) {
      if (!header) out << "\nNot observable (those parts were not checked there):\n";
      header = true;
      out << "  " << console_text(unobserved_note(r, what)) << "\n";
    }
  }
  out << "\n" << visible_text(covered(report)) << "\n";
  out << verdict.line() << "\n";
  return out.str();
}

}  // namespace emm::conformance
