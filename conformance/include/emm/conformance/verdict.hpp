// emm/conformance/verdict.hpp — the verdict over a certification's results (spec §3).
//
// CERTIFIED iff at least one backend ran and every MUST result is pass or not_supported
// (evaluate() only lets not_supported through where a declared capability allows it). SHOULD
// results other than pass are warnings; INFO results are measurements.
//
//   Verdict v = compute_verdict(results, any_backend_ran);
//   std::cout << v.line();   // "VERDICT: NOT CERTIFIED (2 MUST clauses failed)"
//
// Plain value type; compute_verdict is pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "emm/conformance/clause_result.hpp"

namespace emm::conformance {

struct Verdict {
  bool certified = false;
  bool any_backend_ran = false;
  std::size_t must_failures = 0;  // MUST results that are not pass/not_supported
  // Indices into the results of the MUST failures and of the SHOULD results that did not pass.
  std::vector<std::size_t> failures;
  std::vector<std::size_t> warnings;

  // "CERTIFIED" or "NOT CERTIFIED".
  std::string word() const;
  // "VERDICT: CERTIFIED" / "VERDICT: NOT CERTIFIED (3 MUST clauses failed)" /
  // "VERDICT: NOT CERTIFIED (no backend ran)".
  std::string line() const;
};

// True when `result` counts against the plugin at its level (anything but pass/not_supported).
bool counts_against(const ClauseResult& result) noexcept;

Verdict compute_verdict(const std::vector<ClauseResult>& results, bool any_backend_ran);

}  // namespace emm::conformance
