// The JSON rendering of a Certificate (report_writers.hpp; spec §5).
#include <cstdint>

#include "emm/conformance/json_writer.hpp"
#include "emm/conformance/report_writers.hpp"
#include "runner/report_format.hpp"

namespace emm::conformance {

std::string to_json(const Certificate& certificate) {
  const CertificationReport& report = certificate.report;
  const PluginDescription& plugin = report.plugin.description;
  JsonWriter json;
  json.begin_object();
  json.key("kit_version").value(report.kit_version);
  json.key("catalogue_version").value(report.catalogue_version);
  json.key("subject").value(to_string(report.subject));
  // The subject, under the key every report has had; a NEP 49 handler has only a path and a name.
  json.key("plugin").begin_object();
  json.key("path").value(plugin.path);
  json.key("name").value(plugin.name);
  if (report.subject == SubjectKind::emm_plugin) {
    json.key("interface_version");
    if (report.plugin.interface_version) {
      json.value(*report.plugin.interface_version);
    } else {
      json.null();
    }
    json.key("capabilities").begin_object();
    for (const CapabilityField& field : kCapabilityFields) {
      json.key(field.name).value(declared(plugin.capabilities, field));
    }
    json.key("defer_cleanup_behaviour").value(plugin.defer_cleanup_behaviour);
    json.end_object();
  }
  json.end_object();
  json.key("backends").begin_array();
  for (const BackendStatus& b : report.backends) {
    json.begin_object();
    json.key("name").value(to_string(b.kind));
    json.key("ran").value(b.ran);
    if (b.ran && !b.device.empty()) json.key("device").value(b.device);
    if (!b.ran) json.key("reason").value(b.reason);
    json.end_object();
  }
  json.end_array();
  const Verdict& verdict = certificate.verdict;
  json.key("verdict").value(verdict.word());
  json.key("verdict_backends").begin_array();
  for (const BackendKind backend : verdict.backends) json.value(to_string(backend));
  json.end_array();
  json.key("verdict_line").value(verdict.line());
  json.key("clauses_run").value(static_cast<std::uint64_t>(verdict.clauses_run));
  json.key("clauses_in_catalogue").value(static_cast<std::uint64_t>(verdict.clauses_in_catalogue));
  if (!report.plugin_loaded) json.key("load_failure").value(report.load_failure);
  json.key("results").begin_array();
  for (const ClauseResult& r : report.results) {
    json.begin_object();
    json.key("clause").value(r.clause->id);
    json.key("level").value(to_string(r.level));
    json.key("backend").value(to_string(r.backend));
    json.key("outcome").value(to_string(r.outcome));
    json.key("meaning").value(to_string(meaning_of(r)));
    json.key("message").value(summary(r));
    json.key("notes").begin_array();
    for (const std::string& note : r.notes) json.value(note);
    for (const std::string& what : r.unobserved) json.value(unobserved_note(r, what));
    json.end_array();
    json.key("duration_ms").value(r.duration_ms);
    json.key("properties").begin_object();
    for (const auto& [key, value] : r.properties) json.key(key).value(value);
    json.end_object();
    if (r.reproducer) {
      const Reproducer& reproducer = *r.reproducer;
      json.key("reproducer").begin_object();
      json.key("seed").value(static_cast<std::uint64_t>(reproducer.seed));
      json.key("budget").value(static_cast<std::uint64_t>(reproducer.budget));
      json.key("sequences").value(static_cast<std::uint64_t>(reproducer.sequences));
      json.key("shrinks").value(static_cast<std::uint64_t>(reproducer.shrinks));
      json.key("calls").begin_array();
      for (const std::string& call : reproducer.calls) json.value(call);
      json.end_array();
      json.key("replay").value(report_format::replay_command(report, r));
      json.key("gtest").value(reproducer.gtest);
      json.key("python").value(reproducer.python);
      json.key("language").value(report_format::reproducer_language(reproducer));
      json.end_object();
    }
    if (!r.output.empty()) json.key("output").value(r.output);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.str() + "\n";
}

}  // namespace emm::conformance
