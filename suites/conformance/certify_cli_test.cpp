// emm-certify's command line (spec §5): defaults, every option, and the usage errors (exit 2).
#include <gtest/gtest.h>

#include <emm/conformance/certify_cli.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <string>
#include <vector>

namespace emm::conformance {
namespace {

CertifyOptions parse(std::vector<std::string_view> args) { return parse_certify_args(args); }

TEST(CertifyCli, DefaultsToEveryBackendEveryClauseAndSixtySeconds) {
  const CertifyOptions options = parse({"--plugin", "lib.so"});
  EXPECT_EQ(options.plugin_path, "lib.so");
  EXPECT_EQ(options.backends, (std::vector<BackendKind>{BackendKind::fake, BackendKind::gpu}));
  EXPECT_TRUE(options.only.empty());
  EXPECT_EQ(options.timeout_s, 60);
  EXPECT_FALSE(options.list);
  EXPECT_TRUE(options.json_path.empty());
}

TEST(CertifyCli, ReadsEveryOption) {
  const CertifyOptions options =
      parse({"--plugin", "p.so", "--backend", "fake", "--only", "LIFE-2,ALLOC-1", "--json",
             "r.json", "--junit", "r.xml", "--markdown", "r.md", "--timeout-s", "2"});
  EXPECT_EQ(options.backends, std::vector<BackendKind>{BackendKind::fake});
  EXPECT_EQ(options.only,
            (std::vector<const Clause*>{catalogue().find("LIFE-2"), catalogue().find("ALLOC-1")}));
  EXPECT_EQ(options.json_path, "r.json");
  EXPECT_EQ(options.junit_path, "r.xml");
  EXPECT_EQ(options.markdown_path, "r.md");
  EXPECT_EQ(options.timeout_s, 2);
  EXPECT_EQ(parse({"--plugin=p.so", "--backend=gpu"}).backends,
            std::vector<BackendKind>{BackendKind::gpu});
  EXPECT_EQ(parse({"--plugin", "p.so", "--backend", "all"}).backends,
            (std::vector<BackendKind>{BackendKind::fake, BackendKind::gpu}));
}

TEST(CertifyCli, ListAndHelpNeedNoPlugin) {
  EXPECT_TRUE(parse({"--list"}).list);
  EXPECT_TRUE(parse({"--help"}).help);
}

TEST(CertifyCli, UsageErrorsSayWhatIsWrong) {
  EMM_EXPECT_THROW(UsageError, parse({}), "--plugin PATH is required");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin"}), "--plugin needs a value");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--plugin", "b.so"}),
                   "--plugin is given more than once");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--backend", "tpu"}),
                   "--backend must be fake, gpu or all (got 'tpu')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--only", "NOPE-1"}),
                   "--only: 'NOPE-1' is not a clause id (see --list)");
  EMM_EXPECT_THROW(
      UsageError, parse({"--plugin", "a.so", "--only", "DEALLOC-1"}),
      "--only: DEALLOC-1 is a host clause, checked by the kit's own suites; emm-certify "
      "certifies plugin clauses");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--only", ","}),
                   "--only needs at least one clause id");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--timeout-s", "0"}),
                   "--timeout-s needs a whole number of seconds from 1 to 86400 (got '0')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--timeout-s", "2s"}),
                   "--timeout-s needs a whole number of seconds from 1 to 86400 (got '2s')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--verbose"}),
                   "unknown argument '--verbose'");
  EMM_EXPECT_THROW(UsageError, parse({"a.so"}), "unknown argument 'a.so'");
}

TEST(CertifyCli, UsageTextListsEveryOptionAndTheExitCodes) {
  const std::string usage = certify_usage();
  for (const char* option : {"--plugin", "--backend", "--only", "--json", "--junit", "--markdown",
                             "--list", "--timeout-s"}) {
    EXPECT_NE(usage.find(option), std::string::npos) << option;
  }
  EXPECT_NE(usage.find("0 certified, 1 not certified, 2 usage error or plugin not loadable"),
            std::string::npos);
}

}  // namespace
}  // namespace emm::conformance
