// emm/conformance/verdict.hpp — the verdict over a certification (spec §3, §7).
//
//   CERTIFIED      the plugin was loaded, at least one backend ran, every plugin clause of the
//                  catalogue ran, and every MUST result is pass or an allowed not_supported;
//   PARTIAL        as CERTIFIED, but `--only` ran k of the N plugin clauses: never a certificate;
//   NOT CERTIFIED  a MUST result failed, crashed or timed out, no backend ran, the plugin
//                  library could not be loaded, or a signal interrupted the run (SIGINT,
//                  SIGTERM, SIGHUP: the exit status is then 128 + the signal; its --deadline
//                  passed: 124).
// SHOULD results other than pass (and not_run) are warnings; INFO results are measurements. Every
// verdict names the backends it covers ("VERDICT: CERTIFIED (fake, gpu)").
//
//   const Verdict& v = certificate.verdict;   // computed once, by make_certificate()
//   std::cout << v.line() << '\n';
//   return v.exit_status();
//
// Plain value type; compute_verdict is pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

// emm-certify's exit statuses (certify.hpp prints them in --help).
inline constexpr int kExitCertified = 0;
inline constexpr int kExitNotCertified = 1;
inline constexpr int kExitUsage = 2;  // also: the plugin could not be loaded
inline constexpr int kExitPartial = 3;

struct Verdict {
  enum class Word { certified, not_certified, partial };
  Word kind = Word::not_certified;
  bool certified = false;  // kind == Word::certified
  bool plugin_loaded = true;
  std::string_view subject_noun = "plugin";  // "handler" for a NEP 49 handler
  std::vector<BackendKind> backends;         // the backends that ran: what the verdict covers
  std::size_t must_failures = 0;             // MUST results that are not pass/not_supported
  std::size_t clauses_run = 0;               // distinct clauses with a result (not_run is none)
  std::size_t clauses_in_catalogue = 0;
  int interrupted_by = 0;  // the signal that interrupted the run (SIGALRM: --deadline), or 0
  // Indices into the results of the MUST failures and of the SHOULD results that did not pass
  // (neither lists a clause that did not run: a plugin that could not be loaded has none).
  std::vector<std::size_t> failures;
  std::vector<std::size_t> warnings;

  // "CERTIFIED", "NOT CERTIFIED" or "PARTIAL": the plain word tools compare.
  std::string word() const;
  // "fake, gpu" (or "no backend").
  std::string backend_list() const;
  // "VERDICT: CERTIFIED (fake, gpu)", "VERDICT: NOT CERTIFIED (3 MUST clauses failed; fake)",
  // "VERDICT: PARTIAL (2 of 33 clauses; fake)", "VERDICT: NOT CERTIFIED (no backend ran)",
  // "VERDICT: NOT CERTIFIED (the plugin could not be loaded)" (the handler's, for a handler),
  // "VERDICT: NOT CERTIFIED (interrupted by SIGTERM (Terminated); 12 of 39 clauses ran; fake)".
  std::string line() const;
  // kExitCertified, kExitNotCertified, kExitPartial, kExitUsage when not loaded, 128 + the
  // signal when interrupted, 124 at the --deadline.
  int exit_status() const noexcept;
};

// meaning_of(result) == ResultMeaning::counts_against (clause_result.hpp).
[[nodiscard]] bool counts_against(const ClauseResult& result) noexcept;

struct VerdictInputs {
  const std::vector<ClauseResult>& results;
  std::vector<BackendKind> backends_ran;
  bool plugin_loaded = true;
  std::size_t clauses_in_catalogue = 0;      // plugin clauses a full run certifies
  int interrupted_by = 0;                    // the signal that interrupted the run, or 0
  std::string_view subject_noun = "plugin";  // static text: "plugin" or "handler"
};

Verdict compute_verdict(const VerdictInputs& inputs);

}  // namespace emm::conformance
