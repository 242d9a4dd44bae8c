#include "emm/conformance/verdict.hpp"

#include <set>

#include "process/interruption.hpp"

namespace emm::conformance {

bool counts_against(const ClauseResult& result) noexcept {
  return meaning_of(result) == ResultMeaning::counts_against;
}

std::string Verdict::word() const {
  switch (kind) {
    case Word::certified:
      return "CERTIFIED";
    case Word::partial:
      return "PARTIAL";
    case Word::not_certified:
      break;
  }
  return "NOT CERTIFIED";
}

std::string Verdict::backend_list() const {
  std::string list;
  for (const BackendKind backend : backends) {
    if (!list.empty()) list += ", ";
    list += to_string(backend);
  }
  return list.empty() ? "no backend" : list;
}

std::string Verdict::line() const {
  const std::string text = "VERDICT: " + word() + " (";
  if (interrupted_by != 0) {
    return text + interruption_text(interrupted_by) + "; " + std::to_string(clauses_run) + " of " +
           std::to_string(clauses_in_catalogue) + " clauses ran; " + backend_list() + ")";
  }
  if (!plugin_loaded) return text + "the " + std::string(subject_noun) + " could not be loaded)";
  if (backends.empty()) return text + "no backend ran)";
  switch (kind) {
    case Word::certified:
      return text + backend_list() + ")";
    case Word::partial:
      return text + std::to_string(clauses_run) + " of " + std::to_string(clauses_in_catalogue) +
             " clauses; " + backend_list() + ")";
    case Word::not_certified:
      break;
  }
  return text + std::to_string(must_failures) + " MUST clause" + (must_failures == 1 ? "" : "s") +
         " failed; " + backend_list() + ")";
}

int Verdict::exit_status() const noexcept {
  if (interrupted_by != 0) return interruption_exit_status(interrupted_by);
  if (!plugin_loaded) return kExitUsage;
  switch (kind) {
    case Word::certified:
      return kExitCertified;
    case Word::partial:
      return kExitPartial;
    case Word::not_certified:
      break;
  }
  return kExitNotCertified;
}

Verdict compute_verdict(const VerdictInputs& inputs) {
  Verdict verdict;
  verdict.plugin_loaded = inputs.plugin_loaded;
  verdict.subject_noun = inputs.subject_noun;
  verdict.backends = inputs.backends_ran;
  verdict.clauses_in_catalogue = inputs.clauses_in_catalogue;
  verdict.interrupted_by = inputs.interrupted_by;
  std::set<const Clause*> run;
  for (std::size_t i = 0; i < inputs.results.size(); ++i) {
    const ClauseResult& result = inputs.results[i];
    if (result.outcome != Outcome::not_run) run.insert(result.clause);
    // A plugin that could not be loaded has one failure, the load; its clauses did not run, so
    // none of them is listed as failed or as a warning.
    if (!inputs.plugin_loaded) continue;
    switch (meaning_of(result)) {
      case ResultMeaning::counts_against:
        ++verdict.must_failures;
        verdict.failures.push_back(i);
        break;
      case ResultMeaning::warning:
        verdict.warnings.push_back(i);
        break;
      case ResultMeaning::passed:
      case ResultMeaning::skipped:
      case ResultMeaning::noted:
        break;
    }
  }
  verdict.clauses_run = run.size();
  const bool clean = verdict.plugin_loaded && !verdict.backends.empty() &&
                     verdict.must_failures == 0 && verdict.interrupted_by == 0;
  if (clean) {
    verdict.kind = verdict.clauses_run < verdict.clauses_in_catalogue ? Verdict::Word::partial
                                                                      : Verdict::Word::certified;
  }
  verdict.certified = verdict.kind == Verdict::Word::certified;
  return verdict;
}

}  // namespace emm::conformance
