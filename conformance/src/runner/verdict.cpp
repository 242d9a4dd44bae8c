#include "emm/conformance/verdict.hpp"

namespace emm::conformance {

bool counts_against(const ClauseResult& result) noexcept {
  return result.outcome != Outcome::pass && result.outcome != Outcome::not_supported;
}

std::string Verdict::word() const { return certified ? "CERTIFIED" : "NOT CERTIFIED"; }

std::string Verdict::line() const {
  if (certified) return "VERDICT: CERTIFIED";
  if (!any_backend_ran) return "VERDICT: NOT CERTIFIED (no backend ran)";
  return "VERDICT: NOT CERTIFIED (" + std::to_string(must_failures) + " MUST clause" +
         (must_failures == 1 ? "" : "s") + " failed)";
}

Verdict compute_verdict(const std::vector<ClauseResult>& results, bool any_backend_ran) {
  Verdict verdict;
  verdict.any_backend_ran = any_backend_ran;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ClauseResult& result = results[i];
    if (result.level == Level::must && counts_against(result)) {
      ++verdict.must_failures;
      verdict.failures.push_back(i);
    }
    if (result.level == Level::should && result.outcome != Outcome::pass) {
      verdict.warnings.push_back(i);
    }
  }
  verdict.certified = verdict.any_backend_ran && verdict.must_failures == 0;
  return verdict;
}

}  // namespace emm::conformance
