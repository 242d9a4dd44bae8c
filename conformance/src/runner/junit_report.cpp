// The JUnit XML rendering of a Certificate (report_writers.hpp; spec §5).
#include <sstream>

#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {

using report_format::replay_command;
using report_format::reproducer_code;
using report_format::reproducer_heading;
using report_format::seconds;

std::string to_junit(const Certificate& certificate) {
  const CertificationReport& report = certificate.report;
  std::size_t failures = 0, errors = 0, skipped = 0;
  double total_ms = 0;
  // The verdict's policy (meaning_of): only what counts against the plugin is a failure or an
  // error; a SHOULD or INFO clause that did not pass passes here with its warning as output,
  // so that a CI dashboard is red exactly when the verdict is.
  // A clause whose check did not run here (not supported; not run at a level that does not
  // count) is <skipped>.
  const auto shown_skipped = [](const ClauseResult& r) {
    return meaning_of(r) != ResultMeaning::counts_against &&
           (r.outcome == Outcome::not_supported || r.outcome == Outcome::not_run);
  };
  for (const ClauseResult& r : report.results) {
    if (meaning_of(r) == ResultMeaning::counts_against) {
      (r.outcome == Outcome::fail ? failures : errors) += 1;
    }
    skipped += shown_skipped(r);
    total_ms += r.duration_ms;
  }
  const std::string counts = " tests=\"" + std::to_string(report.results.size()) +
                             "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
                             std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
                             "\" time=\"" + seconds(total_ms) + "\"";
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml << "<testsuites name=\"emm-certify\"" << counts << ">\n";
  xml << "  <testsuite name=\"" << xml_text("emm-certify " + report.plugin.description.name) << "\""
      << counts << ">\n";
  xml << "    <properties>\n";
  auto property = [&xml](std::string_view name, std::string_view value) {
    xml << "      <property name=\"" << xml_text(name) << "\" value=\"" << xml_text(value)
        << "\"/>\n";
  };
  property("plugin", report.plugin.description.name);
  property("plugin_path", report.plugin.description.path);
  property("kit_version", report.kit_version);
  property("catalogue_version", report.catalogue_version);
  property("verdict", certificate.verdict.word());
  property("verdict_line", certificate.verdict.line());
  for (const BackendStatus& b : report.backends) {
    property("backend." + std::string(to_string(b.kind)),
             b.ran ? "ran" + (b.device.empty() ? "" : ": " + b.device) : "not run: " + b.reason);
  }
  xml << "    </properties>\n";
  for (const ClauseResult& r : report.results) {
    const std::string message = summary(r);
    xml << "    <testcase classname=\"" << xml_text(r.clause->group()) << "\" name=\""
        << xml_text(r.clause->id + " " + std::string(to_string(r.backend))) << "\" time=\""
        << seconds(r.duration_ms) << "\"";
    std::string body;
    const ResultMeaning meaning = meaning_of(r);
    std::string output = r.output;
    if (shown_skipped(r)) {
      body = "      <skipped message=\"" + xml_text(message) + "\"/>\n";
    } else if (meaning == ResultMeaning::warning || meaning == ResultMeaning::noted) {
      // Passes here as it does in the verdict; the warning goes with the output.
      output = "warning (" + std::string(to_string(r.level)) + ", " +
               std::string(to_string(r.outcome)) + "): " + message +
               (output.empty() ? "" : "\n\n" + output);
    } else {
      switch (r.outcome) {
        case Outcome::pass:
        case Outcome::not_supported:  // shown_skipped
          break;
        case Outcome::fail: {
          std::string text = message;
          if (r.reproducer) {
            text += "\n\n" + reproducer_heading(*r.reproducer) + "; " + replay_command(report, r) +
                    " replays it:\n";
            std::size_t number = 0;
            for (const std::string& call : r.reproducer->calls) {
              text += std::to_string(++number) + ". " + call + "\n";
            }
            text += "\n" + reproducer_code(*r.reproducer);
          }
          body = "      <failure type=\"" + std::string(to_string(r.level)) + "\" message=\"" +
                 xml_text(message) + "\">" + xml_text(text) + "</failure>\n";
          break;
        }
        case Outcome::crash:
        case Outcome::timeout:
        case Outcome::not_run:
          body = "      <error type=\"" + std::string(to_string(r.outcome)) + "\" message=\"" +
                 xml_text(message) + "\">" + xml_text(message) + "</error>\n";
          break;
      }
    }
    if (!output.empty()) body += "      <system-out>" + xml_text(output) + "</system-out>\n";
    if (body.empty()) {
      xml << "/>\n";
    } else {
      xml << ">\n" << body << "    </testcase>\n";
    }
  }
  xml << "  </testsuite>\n</testsuites>\n";
  return xml.str();
}

}  // namespace emm::conformance
