// The catalogue, the check registry and the compiled typed tests must agree (spec §3: "the
// catalogue in the repository is checked against the compiled list of tests by a test, so no
// clause is silently untested"). Linked into the same binary as the reference instantiation so
// that the typed tests are visible in GoogleTest's registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <emm/conformance/catalogue.hpp>
#include <emm/conformance/check_registry.hpp>
#include <emm/conformance/nep49_registry.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <set>
#include <string>

namespace emm::conformance {
namespace {

// Names of the typed conformance tests compiled into this binary, e.g.
// "LIFE_2_InitializeIdempotence" (from NumbaReference/EmmConformance/0.<name>).
std::set<std::string> typed_test_names() {
  std::set<std::string> names;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    if (std::string(suite.name()).find("/EmmConformance/") == std::string::npos) continue;
    for (int j = 0; j < suite.total_test_count(); ++j) names.insert(suite.GetTestInfo(j)->name());
  }
  return names;
}

TEST(Catalogue, IsTheEmbeddedTsvWithEveryGroupOfTheSpecification) {
  EXPECT_EQ(catalogue().version(), "1.0");
  std::set<std::string> groups;
  for (const Clause& clause : catalogue().clauses()) groups.emplace(clause.group());
  EXPECT_EQ(groups,
            (std::set<std::string>{"REG", "LIFE", "ALLOC", "FIN", "DEFER", "DEALLOC", "INFO", "IPC",
                                   "MANAGED", "DEV", "CTX", "PERF", "NEP49"}));
}

TEST(Catalogue, LevelsTargetsAndOptionalCapabilitiesFollowTheSpecification) {
  auto clause = [](const char* id) -> const Clause& {
    const Clause* c = catalogue().find(id);
    if (c == nullptr) throw std::runtime_error(std::string("missing ") + id);
    return *c;
  };
  EXPECT_EQ(clause("REG-1").target(), "host+plugin");
  EXPECT_EQ(clause("ALLOC-10").level, Level::should);
  EXPECT_EQ(clause("ALLOC-10").optional, emm::find_capability("thread_safe"));
  EXPECT_EQ(clause("ALLOC-10").declared_level, Level::must);
  EXPECT_EQ(clause("ALLOC-11").level, Level::should);
  EXPECT_EQ(clause("DEFER-3").optional, emm::find_capability("host_only_derived"));
  EXPECT_EQ(clause("DEFER-6").level, Level::should);
  EXPECT_EQ(clause("INFO-1").optional, emm::find_capability("memory_info"));
  EXPECT_EQ(clause("INFO-2").optional, nullptr);
  EXPECT_EQ(clause("INFO-3").level, Level::should);
  for (const char* ipc : {"IPC-1", "IPC-2", "IPC-7"}) {
    EXPECT_EQ(clause(ipc).optional, emm::find_capability("ipc")) << ipc;
  }
  for (const char* managed : {"MANAGED-1", "MANAGED-2", "MANAGED-3"}) {
    EXPECT_EQ(clause(managed).optional, emm::find_capability("managed_memory")) << managed;
    EXPECT_EQ(clause(managed).target(), "plugin") << managed;
  }
  for (const char* perf : {"PERF-1", "PERF-2", "PERF-3"}) {
    EXPECT_EQ(clause(perf).level, Level::info) << perf;
    EXPECT_EQ(clause(perf).target(), "plugin") << perf;
  }
  for (int i = 1; i <= 7; ++i) {
    const std::string id = "DEALLOC-" + std::to_string(i);
    EXPECT_EQ(clause(id.c_str()).target(), "host") << id;
    EXPECT_EQ(clause(id.c_str()).level, Level::must) << id;
  }
  Capabilities thread_safe;
  thread_safe.thread_safe = true;
  EXPECT_EQ(clause("ALLOC-10").effective_level(thread_safe), Level::must);
  EXPECT_EQ(clause("ALLOC-10").effective_level(Capabilities{}), Level::should);
}

TEST(GoldenList, EveryPluginClauseHasACheckAndNoHostClauseHasOne) {
  unsigned next = 0;
  for (const Clause& clause : catalogue().clauses()) {
    EXPECT_EQ(check_for(clause) != nullptr, clause.plugin) << clause.id;
    const std::optional<PluginClause> key = plugin_clause(clause.id);
    EXPECT_EQ(key.has_value(), clause.plugin) << clause.id;
    if (key) {
      EXPECT_EQ(static_cast<unsigned>(*key), next++) << clause.id << " out of order";
    }
  }
  EXPECT_EQ(next, kPluginClauseCount);
}

TEST(GoldenList, EveryNep49ClauseHasABodyAndIsNeitherAPluginNorAHostClause) {
  std::size_t count = 0;
  for (const Clause& clause : catalogue().clauses()) {
    EXPECT_EQ(nep49_check_for(clause) != nullptr, clause.nep49) << clause.id;
    EXPECT_EQ(clause.group() == "NEP49", clause.nep49) << clause.id;
    if (!clause.nep49) continue;
    ++count;
    EXPECT_FALSE(clause.plugin || clause.host) << clause.id;
    EXPECT_EQ(clause.target(), "nep49") << clause.id;
    EXPECT_EQ(check_for(clause), nullptr) << clause.id << " must not be certified on plugins";
  }
  EXPECT_EQ(count, kNep49ClauseCount);
  EXPECT_EQ(catalogue().nep49_clauses().size(), kNep49ClauseCount);
  EXPECT_EQ(catalogue().find("NEP49-7")->level, Level::should)
      << "NumPy only calls calloc(nbytes, 1) after checking nbytes: the overflow check is advice";
}

TEST(GoldenList, TheTypedSuiteHasOneTestPerPluginClauseNamedFromTheCatalogue) {
  std::set<std::string> expected;
  for (const Clause* clause : catalogue().plugin_clauses())
    expected.insert(clause->full_test_name());
  EXPECT_EQ(typed_test_names(), expected)
      << "the typed tests compiled from plugin_clauses.hpp and the embedded catalogue disagree "
         "(a stale build?)";
}

TEST(CatalogueParse, RejectsMalformedInputNamingTheLine) {
  const std::string header =
      "# catalogue_version: "
      "9\nid\tlevel\ttarget\toptional\tdeclared_level\ttraits\ttest_name\ttitle\tsource\n";
  EMM_EXPECT_THROW(Error, Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\t-\tName\tTitle\n"),
                   "conformance catalogue line 3: expected 9 tab-separated fields, found 8");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMAYBE\tplugin\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad level 'MAYBE'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tdevice\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad target 'device'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tplugin\tgpu\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad optional capability 'gpu' (not in "
                   "emm::kCapabilityFields)");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "x1\tMUST\tplugin\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad clause id 'x1'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\t-\tName\tTitle\tSource\n"
                                             "X-1\tMUST\tplugin\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 4: duplicate clause id X-1");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tnep49\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: a nep49 clause has an id NEP49-<n> and no "
                   "optional capability (X-1)");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "9X-1\tMUST\tplugin\t-\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad clause id '9X-1'");
  const Catalogue two = Catalogue::parse(header + "NEP49-1\tMUST\tnep49\t-\t-\t-\tName\tT\tS\n");
  EXPECT_EQ(two.nep49_clauses().size(), 1u);
  EXPECT_TRUE(two.plugin_clauses().empty());
  EMM_EXPECT_THROW(
      Error,
      Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\t-\tname with spaces\tTitle\tSource\n"),
      "conformance catalogue line 3: test_name 'name with spaces' of X-1 is not CamelCase letters "
      "and digits");
  EMM_EXPECT_THROW(
      Error,
      Catalogue::parse(
          "id\tlevel\ttarget\toptional\tdeclared_level\ttraits\ttest_name\ttitle\tsource\n"),
      "conformance catalogue: no '# catalogue_version:' line");
  EMM_EXPECT_THROW(
      Error,
      Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\tthreads,fast\tName\tTitle\tSource\n"),
      "conformance catalogue line 3: bad trait 'fast' (threads, destroys_contexts, imports, "
      "property or devices=N with N from 2 to 8) for X-1");
  EMM_EXPECT_THROW(
      Error, Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\tdevices=1\tName\tTitle\tSource\n"),
      "conformance catalogue line 3: bad trait 'devices=1' (threads, destroys_contexts, imports, "
      "property or devices=N with N from 2 to 8) for X-1");
  const Catalogue traits = Catalogue::parse(header +
                                            "X-1\tMUST\tplugin\t-\t-\timports,devices=3,threads,"
                                            "destroys_contexts,property\tName\tT\tS\n");
  ASSERT_EQ(traits.clauses().size(), 1u);
  EXPECT_TRUE(traits.clauses()[0].imports_elsewhere);
  EXPECT_TRUE(traits.clauses()[0].runs_threads);
  EXPECT_TRUE(traits.clauses()[0].destroys_contexts);
  EXPECT_EQ(traits.clauses()[0].devices, 3);
  EXPECT_TRUE(traits.clauses()[0].has_property);
  const Catalogue ok =
      Catalogue::parse(header + "X-1\tSHOULD\thost+plugin\tipc\tMUST\t-\tName\tT\tS\n");
  ASSERT_EQ(ok.clauses().size(), 1u);
  EXPECT_EQ(ok.clauses()[0].full_test_name(), "X_1_Name");
  EXPECT_EQ(ok.clauses()[0].group(), "X");
  EXPECT_EQ(ok.version(), "9");
  EXPECT_FALSE(ok.clauses()[0].runs_threads || ok.clauses()[0].destroys_contexts ||
               ok.clauses()[0].imports_elsewhere || ok.clauses()[0].has_property);
  EXPECT_EQ(ok.clauses()[0].devices, 1);
}

}  // namespace
}  // namespace emm::conformance
