#include "emm/conformance/report.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "emm/conformance/json_writer.hpp"

namespace emm::conformance {
namespace {

bool counts_against(const ClauseResult& result) {
  return result.outcome != Outcome::pass && result.outcome != Outcome::not_supported;
}

std::string seconds(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", ms / 1000.0);
  return buffer;
}

// Clause ids in catalogue order, then any unknown ones in order of appearance.
std::vector<std::string> clause_order(const CertificationReport& report) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const Clause& clause : catalogue().clauses()) {
    for (const ClauseResult& r : report.results) {
      if (r.clause == clause.id && seen.insert(r.clause).second) ids.push_back(r.clause);
    }
  }
  for (const ClauseResult& r : report.results) {
    if (seen.insert(r.clause).second) ids.push_back(r.clause);
  }
  return ids;
}

const ClauseResult* find_result(const CertificationReport& report, const std::string& clause,
                                const std::string& backend) {
  for (const ClauseResult& r : report.results) {
    if (r.clause == clause && r.backend == backend) return &r;
  }
  return nullptr;
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
  }
  return "?";
}

std::string markdown_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string yes_no(bool flag) { return flag ? "yes" : "no"; }

std::string covered(const CertificationReport& report) {
  std::string ran;
  std::string not_run;
  for (const BackendStatus& b : report.backends) {
    std::string& list = b.ran ? ran : not_run;
    if (!list.empty()) list += "; ";
    list += b.name;
    if (b.ran && !b.device.empty()) list += " (" + b.device + ")";
    if (!b.ran && !b.reason.empty()) list += " (" + b.reason + ")";
  }
  std::string text = "Backends covered: " + (ran.empty() ? std::string("none") : ran);
  if (!not_run.empty()) text += ". Not run: " + not_run;
  return text;
}

}  // namespace

PluginInfo PluginInfo::from(const std::string& path, const std::string& name,
                            const Capabilities& capabilities) {
  PluginInfo info;
  info.path = path;
  info.name = name;
  info.memory_info = capabilities.memory_info;
  info.ipc = capabilities.ipc;
  info.host_only_derived = capabilities.host_only_derived;
  info.thread_safe = capabilities.thread_safe;
  info.runs_on_fake_driver = capabilities.runs_on_fake_driver;
  info.pooling = capabilities.pooling;
  info.defer_cleanup_behaviour =
      capabilities.defer_cleanup_behaviour != nullptr ? capabilities.defer_cleanup_behaviour : "";
  return info;
}

std::string Verdict::word() const { return certified ? "CERTIFIED" : "NOT CERTIFIED"; }

std::string Verdict::line() const {
  if (certified) return "VERDICT: CERTIFIED";
  if (!any_backend_ran) return "VERDICT: NOT CERTIFIED (no backend ran)";
  return "VERDICT: NOT CERTIFIED (" + std::to_string(must_failures) + " MUST clause" +
         (must_failures == 1 ? "" : "s") + " failed)";
}

Verdict compute_verdict(const CertificationReport& report) {
  Verdict verdict;
  verdict.any_backend_ran = std::any_of(report.backends.begin(), report.backends.end(),
                                        [](const BackendStatus& b) { return b.ran; });
  for (const ClauseResult& result : report.results) {
    if (result.level == Level::must && counts_against(result)) ++verdict.must_failures;
    if (result.level == Level::should && result.outcome != Outcome::pass) {
      verdict.warnings.push_back(&result);
    }
  }
  verdict.certified = verdict.any_backend_ran && verdict.must_failures == 0;
  return verdict;
}

std::string to_json(const CertificationReport& report) {
  const Verdict verdict = compute_verdict(report);
  JsonWriter json;
  json.begin_object();
  json.key("kit_version").value(report.kit_version);
  json.key("catalogue_version").value(report.catalogue_version);
  json.key("plugin").begin_object();
  json.key("path").value(report.plugin.path);
  json.key("name").value(report.plugin.name);
  json.key("interface_version");
  if (report.plugin.interface_version) {
    json.value(*report.plugin.interface_version);
  } else {
    json.null();
  }
  json.key("capabilities").begin_object();
  json.key("memory_info").value(report.plugin.memory_info);
  json.key("ipc").value(report.plugin.ipc);
  json.key("host_only_derived").value(report.plugin.host_only_derived);
  json.key("thread_safe").value(report.plugin.thread_safe);
  json.key("runs_on_fake_driver").value(report.plugin.runs_on_fake_driver);
  json.key("pooling").value(report.plugin.pooling);
  json.key("defer_cleanup_behaviour").value(report.plugin.defer_cleanup_behaviour);
  json.end_object();
  json.end_object();
  json.key("backends").begin_array();
  for (const BackendStatus& b : report.backends) {
    json.begin_object();
    json.key("name").value(b.name);
    json.key("ran").value(b.ran);
    if (b.ran && !b.device.empty()) json.key("device").value(b.device);
    if (!b.ran) json.key("reason").value(b.reason);
    json.end_object();
  }
  json.end_array();
  json.key("verdict").value(verdict.word());
  json.key("results").begin_array();
  for (const ClauseResult& r : report.results) {
    json.begin_object();
    json.key("clause").value(r.clause);
    json.key("level").value(to_string(r.level));
    json.key("backend").value(r.backend);
    json.key("outcome").value(to_string(r.outcome));
    json.key("message").value(r.message);
    json.key("duration_ms").value(r.duration_ms);
    json.key("properties").begin_object();
    for (const auto& [key, value] : r.properties) json.key(key).value(value);
    json.end_object();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str() + "\n";
}

std::string to_junit(const CertificationReport& report) {
  const Verdict verdict = compute_verdict(report);
  std::size_t failures = 0, errors = 0, skipped = 0;
  double total_ms = 0;
  for (const ClauseResult& r : report.results) {
    failures += r.outcome == Outcome::fail;
    errors += r.outcome == Outcome::crash || r.outcome == Outcome::timeout;
    skipped += r.outcome == Outcome::not_supported;
    total_ms += r.duration_ms;
  }
  const std::string counts = " tests=\"" + std::to_string(report.results.size()) +
                             "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
                             std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
                             "\" time=\"" + seconds(total_ms) + "\"";
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml << "<testsuites name=\"emm-certify\"" << counts << ">\n";
  xml << "  <testsuite name=\"" << xml_escape("emm-certify " + report.plugin.name) << "\"" << counts
      << ">\n";
  xml << "    <properties>\n";
  auto property = [&xml](std::string_view name, std::string_view value) {
    xml << "      <property name=\"" << xml_escape(name) << "\" value=\"" << xml_escape(value)
        << "\"/>\n";
  };
  property("plugin", report.plugin.name);
  property("plugin_path", report.plugin.path);
  property("kit_version", report.kit_version);
  property("catalogue_version", report.catalogue_version);
  property("verdict", verdict.word());
  for (const BackendStatus& b : report.backends) {
    property("backend." + b.name,
             b.ran ? "ran" + (b.device.empty() ? "" : ": " + b.device) : "not run: " + b.reason);
  }
  xml << "    </properties>\n";
  for (const ClauseResult& r : report.results) {
    const std::string group = r.clause.substr(0, r.clause.find('-'));
    xml << "    <testcase classname=\"" << xml_escape(group) << "\" name=\""
        << xml_escape(r.clause + " " + r.backend) << "\" time=\"" << seconds(r.duration_ms) << "\"";
    const std::string level(to_string(r.level));
    switch (r.outcome) {
      case Outcome::pass:
        xml << "/>\n";
        continue;
      case Outcome::fail:
        xml << ">\n      <failure type=\"" << level << "\" message=\"" << xml_escape(r.message)
            << "\">" << xml_escape(r.message) << "</failure>\n";
        break;
      case Outcome::crash:
      case Outcome::timeout:
        xml << ">\n      <error type=\"" << to_string(r.outcome) << "\" message=\""
            << xml_escape(r.message) << "\">" << xml_escape(r.message) << "</error>\n";
        break;
      case Outcome::not_supported:
        xml << ">\n      <skipped message=\"" << xml_escape(r.message) << "\"/>\n";
        break;
    }
    xml << "    </testcase>\n";
  }
  xml << "  </testsuite>\n</testsuites>\n";
  return xml.str();
}

std::string to_markdown(const CertificationReport& report) {
  const Verdict verdict = compute_verdict(report);
  std::ostringstream md;
  md << "# emm-certify certificate: " << markdown_text(report.plugin.name) << "\n\n";
  md << "**" << verdict.word() << "**";
  if (!verdict.certified && verdict.any_backend_ran) {
    md << " (" << verdict.must_failures << " MUST clause" << (verdict.must_failures == 1 ? "" : "s")
       << " failed)";
  }
  md << ". " << markdown_text(covered(report)) << ".\n\n";
  md << "| | |\n|---|---|\n";
  md << "| Plugin | " << markdown_text(report.plugin.name) << " |\n";
  md << "| Library | `" << markdown_text(report.plugin.path) << "` |\n";
  md << "| Interface version | "
     << (report.plugin.interface_version ? std::to_string(*report.plugin.interface_version)
                                         : std::string("unknown"))
     << " |\n";
  md << "| Kit version | " << markdown_text(report.kit_version) << " |\n";
  md << "| Catalogue version | " << markdown_text(report.catalogue_version) << " |\n\n";

  md << "## Declared capabilities\n\n| Capability | Declared |\n|---|---|\n";
  md << "| memory_info | " << yes_no(report.plugin.memory_info) << " |\n";
  md << "| ipc | " << yes_no(report.plugin.ipc) << " |\n";
  md << "| host_only_derived | " << yes_no(report.plugin.host_only_derived) << " |\n";
  md << "| thread_safe | " << yes_no(report.plugin.thread_safe) << " |\n";
  md << "| runs_on_fake_driver | " << yes_no(report.plugin.runs_on_fake_driver) << " |\n";
  md << "| pooling | " << yes_no(report.plugin.pooling) << " |\n\n";
  md << "**defer_cleanup behaviour:** "
     << (report.plugin.defer_cleanup_behaviour.empty()
             ? std::string("_(not documented)_")
             : markdown_text(report.plugin.defer_cleanup_behaviour))
     << "\n\n";

  md << "## Results\n\n| Clause | Level | Title |";
  for (const BackendStatus& b : report.backends) md << " " << b.name << " |";
  md << "\n|---|---|---|";
  for (std::size_t i = 0; i < report.backends.size(); ++i) md << "---|";
  md << "\n";
  for (const std::string& id : clause_order(report)) {
    const Clause* clause = catalogue().find(id);
    const ClauseResult* any = nullptr;
    for (const BackendStatus& b : report.backends) {
      if (!any) any = find_result(report, id, b.name);
    }
    md << "| " << id << " | " << (any ? to_string(any->level) : "") << " | "
       << markdown_text(clause ? clause->title : "") << " |";
    for (const BackendStatus& b : report.backends)
      md << " " << cell(find_result(report, id, b.name), b) << " |";
    md << "\n";
  }

  std::vector<const ClauseResult*> problems;
  for (const ClauseResult& r : report.results) {
    if (r.level == Level::must && counts_against(r)) problems.push_back(&r);
  }
  if (!problems.empty()) {
    md << "\n## Failed MUST clauses\n\n";
    for (const ClauseResult* r : problems) {
      md << "- **" << r->clause << "** (" << r->backend << ", " << to_string(r->outcome)
         << "): " << markdown_text(r->message) << "\n";
    }
  }
  if (!verdict.warnings.empty()) {
    md << "\n## Warnings (SHOULD clauses)\n\n";
    for (const ClauseResult* r : verdict.warnings) {
      md << "- **" << r->clause << "** (" << r->backend << ", " << to_string(r->outcome)
         << "): " << markdown_text(r->message) << "\n";
    }
  }
  bool measurements = false;
  for (const ClauseResult& r : report.results) {
    if (r.properties.empty()) continue;
    if (!measurements) {
      md << "\n## Measurements and recorded figures\n\n| Clause | Backend | Figure | Value |\n"
            "|---|---|---|---|\n";
      measurements = true;
    }
    for (const auto& [key, value] : r.properties) {
      md << "| " << r.clause << " | " << r.backend << " | " << markdown_text(key) << " | "
         << markdown_text(value) << " |\n";
    }
  }
  md << "\n" << verdict.line() << "\n";
  return md.str();
}

std::string to_text(const CertificationReport& report) {
  const Verdict verdict = compute_verdict(report);
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %-7s", "CLAUSE", "LEVEL");
  out << line;
  for (const BackendStatus& b : report.backends) {
    std::snprintf(line, sizeof line, " %-16s", b.name.c_str());
    out << line;
  }
  out << "\n";
  for (const std::string& id : clause_order(report)) {
    const ClauseResult* any = nullptr;
    for (const BackendStatus& b : report.backends) {
      if (!any) any = find_result(report, id, b.name);
    }
    std::snprintf(line, sizeof line, "%-10s %-7s", id.c_str(),
                  any ? std::string(to_string(any->level)).c_str() : "");
    out << line;
    for (const BackendStatus& b : report.backends) {
      std::snprintf(line, sizeof line, " %-16s", cell(find_result(report, id, b.name), b).c_str());
      out << line;
    }
    out << "\n";
  }
  bool header = false;
  for (const ClauseResult& r : report.results) {
    if (r.level != Level::must || !counts_against(r)) continue;
    if (!header) out << "\nFailed MUST clauses:\n";
    header = true;
    out << "  " << r.clause << " (" << r.backend << ", " << to_string(r.outcome)
        << "): " << r.message << "\n";
  }
  if (!verdict.warnings.empty()) {
    out << "\nWarnings (SHOULD clauses):\n";
    for (const ClauseResult* r : verdict.warnings) {
      out << "  warning: " << r->clause << " (" << r->backend << ", " << to_string(r->outcome)
          << "): " << r->message << "\n";
    }
  }
  out << "\n" << covered(report) << "\n";
  out << verdict.line() << "\n";
  return out.str();
}

}  // namespace emm::conformance
