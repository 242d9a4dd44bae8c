#include "emm/conformance/report.hpp"

#include <algorithm>
#include <cstdio>

#include "emm/conformance/text_escaping.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {

std::string_view to_string(SubjectKind kind) noexcept {
  return kind == SubjectKind::nep49_handler ? "nep49_handler" : "emm_plugin";
}

std::string_view subject_noun(SubjectKind kind) noexcept {
  return kind == SubjectKind::nep49_handler ? "handler" : "plugin";
}

SubjectKind subject_of(const Clause& clause) noexcept {
  return clause.nep49 ? SubjectKind::nep49_handler : SubjectKind::emm_plugin;
}

Certificate make_certificate(CertificationReport report) {
  std::vector<BackendKind> ran;
  for (const BackendStatus& b : report.backends) {
    if (b.ran) ran.push_back(b.kind);
  }
  // A certification covers the clauses of one kind of subject: a plugin's or a NEP 49 handler's.
  const bool nep49 = report.subject == SubjectKind::nep49_handler;
  const std::size_t in_catalogue =
      nep49 ? catalogue().nep49_clauses().size() : catalogue().plugin_clauses().size();
  Verdict verdict =
      compute_verdict({report.results, std::move(ran), report.plugin_loaded, in_catalogue,
                       report.interrupted_by, subject_noun(report.subject)});
  return Certificate{std::move(report), std::move(verdict)};
}

namespace report_format {

std::vector<const Clause*> clause_order(const CertificationReport& report) {
  std::vector<const Clause*> clauses;
  for (const Clause& clause : catalogue().clauses()) {
    for (const ClauseResult& r : report.results) {
      if (r.clause == &clause) {
        clauses.push_back(&clause);
        break;
      }
    }
  }
  return clauses;
}

const ClauseResult* find_result(const CertificationReport& report, const Clause& clause,
                                BackendKind backend) {
  for (const ClauseResult& r : report.results) {
    if (r.clause == &clause && r.backend == backend) return &r;
  }
  return nullptr;
}

std::string row_level(const CertificationReport& report, const Clause& clause) {
  for (const ClauseResult& r : report.results) {
    if (r.clause == &clause) return std::string(to_string(r.level));
  }
  return "";
}

std::string cell(const ClauseResult* result, const BackendStatus& backend) {
  if (!backend.ran) return "not run";
  if (result == nullptr) return "-";
  switch (result->outcome) {
    case Outcome::pass:
      return "pass";
    case Outcome::fail:
      return result->level == Level::must ? "FAIL" : "fail (warning)";
    case Outcome::not_supported:
      return "not_supported";
    case Outcome::crash:
      return "CRASH";
    case Outcome::timeout:
      return "TIMEOUT";
    case Outcome::not_run:
      return "NOT RUN";
  }
  return "?";
}

std::string covered(const CertificationReport& report) {
  std::string ran;
  std::string not_run;
  for (const BackendStatus& b : report.backends) {
    std::string& list = b.ran ? ran : not_run;
    if (!list.empty()) list += "; ";
    list += to_string(b.kind);
    if (b.ran && !b.device.empty()) list += " (" + b.device + ")";
    if (!b.ran && !b.reason.empty()) list += " (" + b.reason + ")";
  }
  std::string text = "Backends covered: " + (ran.empty() ? std::string("none") : ran);
  if (!not_run.empty()) text += ". Not run: " + not_run;
  return text;
}

std::string seconds(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", ms / 1000.0);
  return buffer;
}

std::string console_text(std::string_view text) {
  const std::string visible = visible_text(text);
  std::string out;
  for (std::size_t i = 0; i < visible.size(); ++i) {
    out += visible[i];
    if (visible[i] == '\n' && i + 1 < visible.size()) out += "    ";
  }
  return out;
}

std::string replay_command(const CertificationReport& report, const ClauseResult& result) {
  const Reproducer& reproducer = *result.reproducer;
  // A NEP 49 handler's path is its spec, "PATH:SYMBOL" or "MODULE:ATTR" (for_python).
  const std::string subject =
      result.clause->nep49 ? (reproducer.for_python ? "--nep49 " : "--nep49-library ") +
                                 report.plugin.description.path
      : reproducer.for_python ? std::string("--python <module:Class>")
                              : "--plugin " + report.plugin.description.path;
  return "emm-certify " + subject + " --backend " + std::string(to_string(result.backend)) +
         " --only " + result.clause->id + " --seed " + std::to_string(reproducer.seed) +
         " --budget " + std::to_string(reproducer.budget);
}

std::string reproducer_heading(const Reproducer& reproducer) {
  return "the shortest failing sequence found: " + std::to_string(reproducer.calls.size()) +
         " call" + (reproducer.calls.size() == 1 ? "" : "s") + " (sequence " +
         std::to_string(reproducer.sequences) + " of " + std::to_string(reproducer.budget) +
         " failed, shrunk " + std::to_string(reproducer.shrinks) + " times)";
}

const std::string& reproducer_code(const Reproducer& reproducer) {
  return reproducer.for_python ? reproducer.python : reproducer.gtest;
}

const char* reproducer_language(const Reproducer& reproducer) {
  return reproducer.for_python ? "python" : "cpp";
}

}  // namespace report_format
}  // namespace emm::conformance
