// The catalogue, the check registry and the compiled typed tests must agree (spec §3: "the
// catalogue in the repository is checked against the compiled list of tests by a test, so no
// clause is silently untested"). Linked into the same binary as the reference instantiation so
// that the typed tests are visible in GoogleTest's registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <emm/conformance/catalogue.hpp>
#include <emm/conformance/registry.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <set>
#include <string>

namespace emm::conformance {
namespace {

// The clause ids of spec §4, written out by hand: the catalogue may not lose or invent one.
const std::set<std::string> kSpecClauses = {
    "REG-1",     "REG-2",     "REG-3",     "REG-4",     "REG-5",     "REG-6",     "LIFE-1",
    "LIFE-2",    "LIFE-3",    "LIFE-4",    "LIFE-5",    "LIFE-6",    "LIFE-7",    "LIFE-8",
    "LIFE-9",    "ALLOC-1",   "ALLOC-2",   "ALLOC-3",   "ALLOC-4",   "ALLOC-5",   "ALLOC-6",
    "ALLOC-7",   "ALLOC-8",   "ALLOC-9",   "ALLOC-10",  "ALLOC-11",  "FIN-1",     "FIN-2",
    "FIN-3",     "FIN-4",     "FIN-5",     "FIN-6",     "DEFER-1",   "DEFER-2",   "DEFER-3",
    "DEFER-4",   "DEFER-5",   "DEFER-6",   "DEALLOC-1", "DEALLOC-2", "DEALLOC-3", "DEALLOC-4",
    "DEALLOC-5", "DEALLOC-6", "DEALLOC-7", "INFO-1",    "INFO-2",    "INFO-3",    "IPC-1",
    "IPC-2",     "IPC-3",     "IPC-4",     "IPC-5",     "IPC-6",     "IPC-7",     "CTX-1",
    "CTX-2",     "CTX-3",     "PERF-1",    "PERF-2",    "PERF-3"};

std::set<std::string> catalogue_ids(bool plugin_only) {
  std::set<std::string> ids;
  for (const Clause& clause : catalogue().clauses()) {
    if (!plugin_only || clause.plugin) ids.insert(clause.id);
  }
  return ids;
}

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

TEST(Catalogue, EveryClauseOfTheSpecificationIsCatalogued) {
  EXPECT_EQ(catalogue_ids(false), kSpecClauses);
  EXPECT_GE(catalogue().clauses().size(), 45u);
  EXPECT_EQ(catalogue().version(), "1.0");
}

TEST(Catalogue, LevelsTargetsAndOptionalCapabilitiesFollowTheSpecification) {
  auto clause = [](const char* id) -> const Clause& {
    const Clause* c = catalogue().find(id);
    if (c == nullptr) throw std::runtime_error(std::string("missing ") + id);
    return *c;
  };
  EXPECT_EQ(clause("REG-1").target(), "host+plugin");
  EXPECT_EQ(clause("ALLOC-10").level, Level::should);
  EXPECT_EQ(clause("ALLOC-10").optional, Capability::thread_safe);
  EXPECT_EQ(clause("ALLOC-10").declared_level, Level::must);
  EXPECT_EQ(clause("ALLOC-11").level, Level::should);
  EXPECT_EQ(clause("DEFER-3").optional, Capability::host_only_derived);
  EXPECT_EQ(clause("DEFER-6").level, Level::should);
  EXPECT_EQ(clause("INFO-1").optional, Capability::memory_info);
  EXPECT_FALSE(clause("INFO-2").optional.has_value());
  EXPECT_EQ(clause("INFO-3").level, Level::should);
  for (const char* ipc : {"IPC-1", "IPC-2", "IPC-7"}) {
    EXPECT_EQ(clause(ipc).optional, Capability::ipc) << ipc;
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

TEST(GoldenList, EveryPluginClauseHasACheckAndEveryCheckAKnownPluginClause) {
  const std::vector<std::string> registered = check_registry().ids();
  const std::set<std::string> checks(registered.begin(), registered.end());
  EXPECT_EQ(checks, catalogue_ids(true))
      << "conformance/src/checks/*_checks.cpp and conformance/catalogue.tsv disagree";
  for (const std::string& id : registered) {
    const Clause* clause = catalogue().find(id);
    ASSERT_NE(clause, nullptr) << "a check is registered for unknown clause " << id;
    EXPECT_TRUE(clause->plugin) << id << " has a check but is a host clause";
  }
}

TEST(GoldenList, TheTypedSuiteHasOneTestPerPluginClauseNamedFromTheCatalogue) {
  std::set<std::string> expected;
  for (const Clause* clause : catalogue().plugin_clauses())
    expected.insert(clause->full_test_name());
  EXPECT_EQ(typed_test_names(), expected)
      << "emm/conformance/gtest.hpp's TYPED_TEST_P list and conformance/catalogue.tsv disagree";
}

TEST(CatalogueParse, RejectsMalformedInputNamingTheLine) {
  const std::string header =
      "# catalogue_version: "
      "9\nid\tlevel\ttarget\toptional\tdeclared_level\ttest_name\ttitle\tsource\n";
  EMM_EXPECT_THROW(Error, Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\tName\tTitle\n"),
                   "conformance catalogue line 3: expected 8 tab-separated fields, found 7");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMAYBE\tplugin\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad level 'MAYBE'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tdevice\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad target 'device'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tplugin\tgpu\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad optional capability 'gpu'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "x1\tMUST\tplugin\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 3: bad clause id 'x1'");
  EMM_EXPECT_THROW(Error,
                   Catalogue::parse(header + "X-1\tMUST\tplugin\t-\t-\tName\tTitle\tSource\n"
                                             "X-1\tMUST\tplugin\t-\t-\tName\tTitle\tSource\n"),
                   "conformance catalogue line 4: duplicate clause id X-1");
  EMM_EXPECT_THROW(
      Error,
      Catalogue::parse("id\tlevel\ttarget\toptional\tdeclared_level\ttest_name\ttitle\tsource\n"),
      "conformance catalogue: no '# catalogue_version:' line");
  const Catalogue ok =
      Catalogue::parse(header + "X-1\tSHOULD\thost+plugin\tipc\tMUST\tName\tT\tS\n");
  ASSERT_EQ(ok.clauses().size(), 1u);
  EXPECT_EQ(ok.clauses()[0].full_test_name(), "X_1_Name");
  EXPECT_EQ(ok.clauses()[0].group(), "X");
  EXPECT_EQ(ok.version(), "9");
}

}  // namespace
}  // namespace emm::conformance
