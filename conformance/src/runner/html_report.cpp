// The HTML certificate (report_writers.hpp): one self-contained file — no script, no font, no
// image, nothing fetched — so that it can be archived by CI and opened anywhere. Plugin text is
// escaped for HTML after being made visible (no control character acts on a viewer).
#include <sstream>

#include "emm/conformance/report_writers.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "runner/html_style.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {
namespace {

using namespace report_format;

std::string css_class(const ClauseResult* result, const BackendStatus& backend) {
  if (!backend.ran || result == nullptr) return "none";
  if (result->outcome == Outcome::fail && result->level != Level::must) return "warn";
  return std::string(to_string(result->outcome));
}

}  // namespace

std::string to_html(const Certificate& certificate) {
  const CertificationReport& report = certificate.report;
  const Verdict& verdict = certificate.verdict;
  const PluginDescription& plugin = report.plugin.description;
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>emm-certify: " << html_text(plugin.name) << " — " << verdict.word()
       << "</title>\n<style>" << kHtmlStyle << "</style>\n</head>\n<body>\n";
  html << "<h1>emm-certify certificate: " << html_text(plugin.name) << "</h1>\n";
  html << "<p class=\"verdict " << verdict_class(verdict) << "\" id=\"verdict\">"
       << html_text(verdict.line()) << "</p>\n";
  html << "<p>" << html_text(covered(report)) << ".</p>\n";
  const bool handler = report.subject == SubjectKind::nep49_handler;
  if (!report.plugin_loaded) {
    html << "<p class=\"problem\">The " << subject_noun(report.subject)
         << " could not be loaded: " << html_text(report.load_failure) << "</p>\n";
  }

  html << (handler ? "<h2>NEP 49 handler</h2>\n" : "<h2>Plugin</h2>\n")
       << "<table class=\"facts\">\n";
  auto fact = [&html](std::string_view name, const std::string& value) {
    html << "<tr><th>" << name << "</th><td>" << html_text(value) << "</td></tr>\n";
  };
  fact("Name", plugin.name);
  fact(handler ? "Handler" : "Library", plugin.path);
  if (!handler) {
    fact("Interface version", report.plugin.interface_version
                                  ? std::to_string(*report.plugin.interface_version)
                                  : std::string("unknown"));
    fact("defer_cleanup behaviour", plugin.defer_cleanup_behaviour.empty()
                                        ? std::string("(not documented)")
                                        : plugin.defer_cleanup_behaviour);
  }
  fact("Kit version", report.kit_version);
  fact("Catalogue version", report.catalogue_version);
  for (const BackendStatus& b : report.backends) {
    fact("Backend " + std::string(to_string(b.kind)),
         b.ran ? "ran on " + b.device : "not run: " + b.reason);
  }
  html << "</table>\n";
  if (!handler) {
    html << "<h2>Declared capabilities</h2>\n<ul class=\"capabilities\">\n";
    for (const CapabilityField& field : kCapabilityFields) {
      const bool yes = declared(plugin.capabilities, field);
      html << "<li class=\"" << (yes ? "yes" : "no") << "\" title=\"" << html_text(field.meaning)
           << "\">" << field.name << ": " << (yes ? "yes" : "no") << "</li>\n";
    }
    html << "</ul>\n";
  }

  html << "<h2>Results</h2>\n<table class=\"matrix\" id=\"results\">\n<thead><tr><th>Clause</th>"
       << "<th>Level</th><th>Title</th>";
  for (const BackendStatus& b : report.backends) html << "<th>" << to_string(b.kind) << "</th>";
  html << "</tr></thead>\n<tbody>\n";
  for (const Clause* clause : clause_order(report)) {
    html << "<tr data-clause=\"" << clause->id << "\"><td>" << clause->id << "</td><td>"
         << row_level(report, *clause) << "</td><td>" << html_text(clause->title) << "</td>";
    for (const BackendStatus& b : report.backends) {
      const ClauseResult* result = find_result(report, *clause, b.kind);
      html << "<td class=\"" << css_class(result, b) << "\" data-backend=\"" << to_string(b.kind)
           << "\"";
      if (result != nullptr) html << " title=\"" << html_text(summary(*result)) << "\"";
      html << ">" << html_text(cell(result, b)) << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</tbody>\n</table>\n";

  auto items = [&](std::string_view heading, const std::vector<std::size_t>& indices) {
    if (indices.empty()) return;
    html << "<h2>" << heading << "</h2>\n<ul class=\"messages\">\n";
    for (const std::size_t i : indices) {
      const ClauseResult& r = report.results[i];
      html << "<li><b>" << r.clause->id << "</b> (" << to_string(r.backend) << ", "
           << to_string(r.outcome) << "): " << html_text(r.message);
      if (r.reproducer) {
        const Reproducer& reproducer = *r.reproducer;
        html << "<p>" << html_text(reproducer_heading(reproducer)) << "; <code>"
             << html_text(replay_command(report, r))
             << "</code> replays it:</p>\n<ol class=\"calls\">";
        for (const std::string& call : reproducer.calls) {
          html << "<li><code>" << html_text(call) << "</code></li>";
        }
        html << "</ol>\n<details><summary>" << r.clause->id << " reproducer ("
             << (reproducer.for_python ? "Python" : "GoogleTest") << ")</summary><pre>"
             << html_text(reproducer_code(reproducer)) << "</pre></details>";
      }
      html << "</li>\n";
    }
    html << "</ul>\n";
  };
  items("Failed MUST clauses", verdict.failures);
  items("Warnings (SHOULD clauses)", verdict.warnings);
  bool unobserved = false;
  for (const ClauseResult& r : report.results) {
    for (const std::string& what : r.unobserved) {
      if (!unobserved) html << "<h2>Not observable (not checked there)</h2>\n<ul>\n";
      unobserved = true;
      html << "<li>" << html_text(unobserved_note(r, what)) << "</li>\n";
    }
  }
  if (unobserved) html << "</ul>\n";
  bool measurements = false;
  for (const ClauseResult& r : report.results) {
    for (const auto& [key, value] : r.properties) {
      if (!measurements) {
        html << "<h2>Measurements and recorded figures</h2>\n<table class=\"facts\">\n"
             << "<tr><th>Clause</th><th>Backend</th><th>Figure</th><th>Value</th></tr>\n";
      }
      measurements = true;
      html << "<tr><td>" << r.clause->id << "</td><td>" << to_string(r.backend) << "</td><td>"
           << html_text(key) << "</td><td>" << html_text(value) << "</td></tr>\n";
    }
  }
  if (measurements) html << "</table>\n";
  bool outputs = false;
  for (const ClauseResult& r : report.results) {
    if (r.output.empty()) continue;
    if (!outputs) html << "<h2>Output of the clauses</h2>\n";
    outputs = true;
    html << "<details><summary>" << r.clause->id << " (" << to_string(r.backend)
         << ")</summary><pre>" << html_text(r.output) << "</pre></details>\n";
  }
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace emm::conformance
