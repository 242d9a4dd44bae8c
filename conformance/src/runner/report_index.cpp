#include "emm/conformance/report_index.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "emm/conformance/catalogue.hpp"
#include "runner/html_style.hpp"

namespace emm::conformance {
namespace {

std::string outcome_class(const std::string& outcome, const std::string& level) {
  if (outcome == "fail" && level != "MUST") return "warn";
  return outcome;
}

std::string verdict_css(const std::string& word) {
  if (word == "CERTIFIED") return "certified";
  if (word == "PARTIAL") return "partial";
  return "not-certified";
}

// The clause ids of every readable report, in catalogue order, then unknown ones (a report
// from another catalogue version) in the order they appear.
std::vector<std::string> clause_columns(const std::vector<IndexEntry>& entries) {
  std::set<std::string> seen;
  std::vector<std::string> unknown;
  for (const IndexEntry& entry : entries) {
    if (!entry.problem.empty()) continue;
    for (const JsonValue& result : entry.report.at("results").array()) {
      const std::string& id = result.at("clause").string();
      if (seen.insert(id).second && catalogue().find(id) == nullptr) unknown.push_back(id);
    }
  }
  std::vector<std::string> columns;
  for (const Clause& clause : catalogue().clauses()) {
    if (seen.contains(clause.id)) columns.push_back(clause.id);
  }
  columns.insert(columns.end(), unknown.begin(), unknown.end());
  return columns;
}

}  // namespace

IndexEntry read_index_entry(const std::string& path) {
  IndexEntry entry;
  entry.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    entry.problem = "cannot be read";
    return entry;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    entry.report = parse_json(text.str());
    // The fields the index reads; a report without them is not emm-certify's.
    (void)entry.report.at("verdict").string();
    (void)entry.report.at("plugin").at("name").string();
    for (const JsonValue& backend : entry.report.at("backends").array()) {
      (void)backend.at("name").string();
    }
    for (const JsonValue& result : entry.report.at("results").array()) {
      (void)result.at("clause").string();
      (void)result.at("backend").string();
      (void)result.at("outcome").string();
      (void)result.at("level").string();
      (void)result.at("message").string();
    }
  } catch (const JsonError& error) {
    entry.problem = std::string("is not an emm-certify JSON report: ") + error.what();
  }
  return entry;
}

std::string index_html(const std::vector<IndexEntry>& entries) {
  const std::vector<std::string> columns = clause_columns(entries);
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>emm-certify: " << entries.size() << " certificates</title>\n<style>" << kHtmlStyle
       << "</style>\n</head>\n<body>\n<h1>emm-certify: " << entries.size()
       << " certificates</h1>\n<table class=\"matrix\" id=\"index\">\n<thead><tr><th>Plugin</th>"
       << "<th>Backend</th><th>Verdict</th>";
  for (const std::string& id : columns) html << "<th>" << html_text(id) << "</th>";
  html << "</tr></thead>\n<tbody>\n";
  for (const IndexEntry& entry : entries) {
    if (!entry.problem.empty()) {
      html << "<tr data-report=\"" << html_text(entry.path) << "\"><td>" << html_text(entry.path)
           << "</td><td></td><td class=\"crash\">" << html_text(entry.problem) << "</td>";
      for (std::size_t i = 0; i < columns.size(); ++i) html << "<td class=\"none\"></td>";
      html << "</tr>\n";
      continue;
    }
    const JsonValue& report = entry.report;
    const std::string& verdict = report.at("verdict").string();
    const JsonValue* line = report.find("verdict_line");
    for (const JsonValue& backend : report.at("backends").array()) {
      const std::string& name = backend.at("name").string();
      html << "<tr data-report=\"" << html_text(entry.path) << "\" data-backend=\""
           << html_text(name) << "\"><td title=\"" << html_text(entry.path) << "\">"
           << html_text(report.at("plugin").at("name").string()) << "</td><td>" << html_text(name)
           << "</td><td class=\"" << verdict_css(verdict) << "\" title=\""
           << html_text(line != nullptr ? line->string() : verdict) << "\">" << html_text(verdict)
           << "</td>";
      for (const std::string& id : columns) {
        const JsonValue* found = nullptr;
        for (const JsonValue& result : report.at("results").array()) {
          if (result.at("clause").string() == id && result.at("backend").string() == name) {
            found = &result;
            break;
          }
        }
        if (found == nullptr) {
          html << "<td class=\"none\">-</td>";
          continue;
        }
        const std::string& outcome = found->at("outcome").string();
        html << "<td class=\"" << html_text(outcome_class(outcome, found->at("level").string()))
             << "\" data-clause=\"" << html_text(id) << "\" title=\""
             << html_text(found->at("message").string()) << "\">" << html_text(outcome) << "</td>";
      }
      html << "</tr>\n";
    }
  }
  html << "</tbody>\n</table>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace emm::conformance
