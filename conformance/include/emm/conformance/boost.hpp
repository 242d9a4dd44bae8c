// emm/conformance/boost.hpp — the conformance suite for Boost.Test.
//
//   #include <emm/conformance/boost.hpp>
//   EMM_BOOST_CONFORMANCE_SUITE(MyTraits)    // traits as for gtest.hpp
//
// registers, at static-initialisation time, a test suite named after the plugin with one
// sub-suite per backend ("fake", "gpu") and one test case per plugin clause, named like the
// GoogleTest tests ("LIFE_2_InitializeIdempotence"). Each case runs the same check body as
// emm-certify and the GoogleTest suite. A failure is reported as a failed BOOST_CHECK carrying
// the check's message ("[LIFE-2] ..."); SHOULD/INFO clauses only warn (BOOST_TEST_MESSAGE). A
// clause that is not supported (declared capability absent, or no GPU) is skipped: the case's
// precondition runs the check and, on not_supported, skips the case with the reason, so Boost's
// JUnit logger (--logger=JUNIT,all,report.xml) shows it as <skipped>.
//
// Link with emm_conformance_boost (emm_add_boost_conformance_test does); it provides main()
// unless the test file defines its own (BOOST_TEST_MODULE in one file of the test).
//
// Thread-safety: the registered cases run on Boost.Test's thread, one at a time, as its
// framework requires; nothing here may be called from other threads.
#pragma once

#include "emm/conformance/backend_kind.hpp"
#include "emm/conformance/catalogue.hpp"
#include "emm/conformance/evaluate.hpp"
#include "emm/conformance/plugin_subject.hpp"

#ifndef BOOST_TEST_DYN_LINK
#define BOOST_TEST_DYN_LINK
#endif
#include <boost/test/unit_test.hpp>
#include <map>
#include <memory>
#include <string>

namespace emm::conformance::boost_detail {

// Boost.Test units may not contain some characters: keep letters, digits, '_' and '.'.
inline std::string unit_name(std::string_view text) {
  std::string name;
  for (const char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.';
    name += keep ? c : '_';
  }
  return name;
}

// The result of one (clause, backend), computed once: by the precondition, used by the body.
struct Slot {
  PluginSubject subject;
  const Clause* clause;
  BackendKind backend;
  std::optional<ClauseResult> result;

  const ClauseResult& get() {
    if (!result) result = evaluate_on(subject, *clause, backend);
    return *result;
  }
};

inline bool register_suite(const PluginSubject& subject) {
  namespace utf = boost::unit_test;
  utf::test_suite* plugin_suite =
      BOOST_TEST_SUITE(unit_name("emm_conformance_" + subject.description.name));
  for (const BackendKind backend : kBackendKinds) {
    utf::test_suite* backend_suite = BOOST_TEST_SUITE(std::string(to_string(backend)));
    for (const Clause* clause : catalogue().plugin_clauses()) {
      auto slot = std::make_shared<Slot>(Slot{subject, clause, backend, std::nullopt});
      utf::test_case* test = utf::make_test_case(
          [slot] {
            const ClauseResult& r = slot->get();
            // The verdict's policy (meaning_of): SHOULD clauses warn and INFO clauses measure
            // (spec §3).
            const ResultMeaning meaning = meaning_of(r);
            if ((meaning == ResultMeaning::warning || meaning == ResultMeaning::noted) &&
                r.outcome != Outcome::not_supported) {
              BOOST_TEST_MESSAGE("warning (" << to_string(r.level) << "): " << r.message);
            }
            for (const std::string& note : r.notes) BOOST_TEST_MESSAGE(note);
            for (const std::string& what : r.unobserved) {
              BOOST_TEST_MESSAGE(unobserved_note(r, what));
            }
            for (const auto& [key, value] : r.properties) BOOST_TEST_MESSAGE(key << " = " << value);
            BOOST_CHECK_MESSAGE(
                meaning != ResultMeaning::counts_against,
                r.message + (r.reproducer ? "\n" + describe(*r.reproducer) : std::string()));
          },
          clause->full_test_name(), __FILE__, __LINE__);
      test->add_precondition([slot](utf::test_unit_id) -> boost::test_tools::assertion_result {
        const ClauseResult& r = slot->get();
        // Not run here: a skip (a SHOULD clause's is also a warning in the verdict).
        if (r.outcome != Outcome::not_supported) return true;
        boost::test_tools::assertion_result skip(false);
        skip.message() << r.message;
        return skip;
      });
      backend_suite->add(test);
    }
    plugin_suite->add(backend_suite);
  }
  utf::framework::master_test_suite().add(plugin_suite);
  return true;
}

}  // namespace emm::conformance::boost_detail

#define EMM_BOOST_CONFORMANCE_SUITE_CAT2_(a, b) a##b
#define EMM_BOOST_CONFORMANCE_SUITE_CAT_(a, b) EMM_BOOST_CONFORMANCE_SUITE_CAT2_(a, b)
#define EMM_BOOST_CONFORMANCE_SUITE(Traits)                                                   \
  [[maybe_unused]] static const bool EMM_BOOST_CONFORMANCE_SUITE_CAT_(emm_boost_conformance_, \
                                                                      __LINE__) =             \
      ::emm::conformance::boost_detail::register_suite(                                       \
          ::emm::conformance::subject_from_traits<Traits>());
