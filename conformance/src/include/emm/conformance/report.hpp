// emm/conformance/report.hpp — what one certification established, ready to be written.
//
// emm-certify fills a CertificationReport (the plugin, the backends and every clause result,
// as values) and turns it into a Certificate, which adds the verdict — computed once, here —
// for every writer (report_writers.hpp) and for the exit status:
//
//   Certificate certificate = make_certificate(std::move(report));
//   std::cout << to_text(certificate);
//   return certificate.verdict.certified ? 0 : 1;
//
// Plain value types.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/clause_result.hpp"
#include "emm/conformance/plugin_subject.hpp"
#include "emm/conformance/verdict.hpp"

namespace emm::conformance {

struct PluginInfo {
  PluginDescription description;
  // interface_version() of a null-context instance; nullopt when it could not be read.
  std::optional<int> interface_version;
};

struct BackendStatus {
  BackendKind kind = BackendKind::fake;
  bool ran = false;
  std::string device;  // when it ran: the device's name
  std::string reason;  // when it did not: why
};

// What was certified: an EMM plugin (a C++ library or a Python class) against the plugin
// clauses, or a NumPy data-memory handler (NEP 49) against the NEP49 clauses. Each writer speaks
// its terms: a handler has no capabilities, no interface version, and is "the handler".
enum class SubjectKind { emm_plugin, nep49_handler };
// "emm_plugin", "nep49_handler": the JSON report's `subject`.
std::string_view to_string(SubjectKind kind) noexcept;
// "plugin" or "handler", for prose ("the handler could not be loaded").
std::string_view subject_noun(SubjectKind kind) noexcept;
// The kind of subject `clause` certifies: a NEP49 clause a handler, any other a plugin.
SubjectKind subject_of(const Clause& clause) noexcept;

struct CertificationReport {
  SubjectKind subject = SubjectKind::emm_plugin;
  std::string kit_version;
  std::string catalogue_version;
  PluginInfo plugin;
  // False when the plugin library could not be loaded: every result is then not_run and
  // `load_failure` says why.
  bool plugin_loaded = true;
  std::string load_failure;
  int interrupted_by = 0;  // the signal that interrupted the run (SIGINT/SIGTERM/SIGHUP), or 0
  std::vector<BackendStatus> backends;
  std::vector<ClauseResult> results;
};

struct Certificate {
  CertificationReport report;
  Verdict verdict;
};

Certificate make_certificate(CertificationReport report);

}  // namespace emm::conformance
