// The NEP 49 property engine (nep49/src/engine, spec §8): zoo handlers whose defect
// needs a particular sequence (a wrong free size and then a calloc, the factory asked again, many
// threads at once) are found, shrunk to a few calls and reported with the seed that replays them;
// the same seed gives the same sequence; a crash is a failing sequence like any other; --budget
// decides how many sequences run; correct designs pass.
#include <gtest/gtest.h>

#include <emm/conformance/backend.hpp>
#include <emm/conformance/nep49_registry.hpp>
#include <memory>
#include <string>

namespace emm::conformance {
namespace {

// The zoo's libraries (suites/known_bad_nep49), built beside this test.
std::string zoo(const std::string& name) {
  return std::string(EMM_NEP49_ZOO_DIR) + "/lib" + name + ".so";
}

ClauseResult certify(const std::string& handler, const char* id, Exploration exploration = {}) {
  const std::unique_ptr<Nep49Subject> subject =
      Nep49Subject::load(Nep49SubjectSpec::library(zoo(handler)));
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::fake);
  return evaluate_nep49(*subject, *catalogue().find(id), *backend, exploration);
}

std::string property(const ClauseResult& result, const std::string& key) {
  for (const auto& [name, value] : result.properties) {
    if (name == key) return value;
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Nep49Engine, Nep49_5_HandlerLifetimeDefectIsShrunkToAFewCalls) {
  const ClauseResult result = certify("factory_resets_pool", "NEP49-5");
  ASSERT_EQ(result.outcome, Outcome::fail) << result.message;
  EXPECT_TRUE(contains(result.message, "[NEP49-5] at call ")) << result.message;
  EXPECT_TRUE(contains(result.message, "overlaps the live p")) << result.message;
  ASSERT_TRUE(result.reproducer.has_value());
  EXPECT_LE(result.reproducer->calls.size(), 4u);
  bool asked_again = false;
  for (const std::string& call : result.reproducer->calls) {
    asked_again = asked_again || contains(call, "= emm_nep49_handler()");
  }
  EXPECT_TRUE(asked_again) << "the reproducer should ask the factory again";
  EXPECT_TRUE(contains(result.reproducer->gtest, "TEST(Nep49Reproducer, NEP49_5)"));
  EXPECT_TRUE(contains(result.reproducer->python, "lib.emm_nep49_handler()"));
  EXPECT_FALSE(result.reproducer->for_python);
}

TEST(Nep49Engine, Nep49_11_SameSeedSameReproducer) {
  const Exploration exploration{.seed = 7, .budget = 40};
  const ClauseResult first = certify("calloc_clears_freed_size", "NEP49-11", exploration);
  const ClauseResult second = certify("calloc_clears_freed_size", "NEP49-11", exploration);
  ASSERT_EQ(first.outcome, Outcome::fail) << first.message;
  ASSERT_TRUE(first.reproducer.has_value() && second.reproducer.has_value());
  EXPECT_EQ(first.reproducer->calls, second.reproducer->calls);
  EXPECT_EQ(first.reproducer->seed, 7u);
  EXPECT_EQ(first.reproducer->budget, 40);
  EXPECT_TRUE(contains(first.message, "expected 0x00 after free(")) << first.message;
}

TEST(Nep49Engine, Nep49_11_CrashIsAShrunkSequence) {
  const ClauseResult result = certify("free_size_checked", "NEP49-11");
  ASSERT_EQ(result.outcome, Outcome::crash) << result.message;
  EXPECT_TRUE(contains(result.message, "SIGABRT")) << result.message;
  ASSERT_TRUE(result.reproducer.has_value());
  ASSERT_FALSE(result.reproducer->calls.empty());
  EXPECT_LE(result.reproducer->calls.size(), 3u);
  EXPECT_TRUE(contains(result.reproducer->calls.back(), "->free(ctx, p"));
}

TEST(Nep49Engine, BudgetDecidesTheSequences) {
  const ClauseResult calloc_overflow =
      certify("baseline", "NEP49-7", Exploration{.seed = 3, .budget = 5});
  ASSERT_EQ(calloc_overflow.outcome, Outcome::pass) << calloc_overflow.message;
  EXPECT_EQ(property(calloc_overflow, "sequences"), "5");
  EXPECT_EQ(property(calloc_overflow, "sequence_seed"), "3");
  // Contention: a quarter of the budget's sequences, and how often it contended.
  const ClauseResult threads = certify("baseline", "NEP49-13", Exploration{.budget = 8});
  ASSERT_EQ(threads.outcome, Outcome::pass) << threads.message;
  EXPECT_EQ(property(threads, "sequences"), "2");
  EXPECT_FALSE(property(threads, "contention_rounds").empty());
  EXPECT_NE(property(threads, "contention_calls"), "0");
}

TEST(Nep49Engine, CorrectDesignsPass) {
  for (const char* handler : {"good_size_classes", "good_thread_cache"}) {
    for (const char* id : {"NEP49-5", "NEP49-6", "NEP49-8", "NEP49-11", "NEP49-13"}) {
      const ClauseResult result = certify(handler, id);
      EXPECT_EQ(result.outcome, Outcome::pass) << handler << " " << id << ": " << result.message;
    }
  }
}

}  // namespace
}  // namespace emm::conformance
