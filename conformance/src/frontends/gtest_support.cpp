// The GoogleTest flavour's glue (emm_conformance_gtest): how a ClauseResult becomes a
// GoogleTest outcome, and REG-2's StrictMock driver.
#include <gmock/gmock.h>

#include <iostream>

#include "emm/conformance/evaluate.hpp"
#include "emm/conformance/gtest.hpp"
#include "emm/errors.hpp"
#include "emm/mocks/mock_driver.hpp"

namespace emm::conformance::gtest_detail {

RunOptions run_options() {
  RunOptions options;
  options.make_probe_driver = [] {
    // No expectations: GoogleMock fails the test on any call (spec REG-2).
    auto mock = std::make_shared<::testing::StrictMock<MockDriver>>();
    return ProbeDriver{mock, [] { return std::string(); }};
  };
  return options;
}

void run_clause_test(const PluginSubject& subject, const char* clause_id, BackendKind backend) {
  ::testing::Test::RecordProperty("clause", clause_id);
  const Clause* clause = catalogue().find(clause_id);
  if (clause == nullptr) throw Error(std::string(clause_id) + " is not in the clause catalogue");
  // Failures GoogleMock reports during the run (REG-2's StrictMock) carry the clause id too.
  SCOPED_TRACE(clause->tag(subject.description.name + " on " + std::string(to_string(backend))));
  const ClauseResult result = evaluate_on(subject, *clause, backend, run_options());
  ::testing::Test::RecordProperty("outcome", std::string(to_string(result.outcome)));
  ::testing::Test::RecordProperty("level", std::string(to_string(result.level)));
  for (const auto& [key, value] : result.properties) {
    ::testing::Test::RecordProperty("emm." + key, value);
  }
  for (const std::string& note : result.notes) std::cout << "[ NOTE     ] " << note << "\n";
  for (const std::string& what : result.unobserved) {
    std::cout << "[ NOTE     ] " << unobserved_note(result, what) << "\n";
    ::testing::Test::RecordProperty("unobserved", what);
  }
  // The verdict's policy (meaning_of): SHOULD clauses warn and INFO clauses measure; neither
  // decides the verdict (spec §3).
  const ResultMeaning meaning = meaning_of(result);
  if (meaning != ResultMeaning::counts_against && result.outcome == Outcome::not_supported) {
    // Not run here: shown as a skip (a SHOULD clause's is also a warning in the verdict).
    GTEST_SKIP() << result.message;
  }
  switch (meaning) {
    case ResultMeaning::passed:
    case ResultMeaning::skipped:
      return;
    case ResultMeaning::warning:
    case ResultMeaning::noted:
      ::testing::Test::RecordProperty("warning", result.message);
      std::cout << "[ WARNING  ] (" << to_string(result.level) << ") " << result.message << "\n";
      return;
    case ResultMeaning::counts_against:
      ADD_FAILURE() << result.message
                    << (result.reproducer ? "\n" + describe(*result.reproducer) : std::string());
      return;
  }
}

}  // namespace emm::conformance::gtest_detail
