// emm-certify's command line (spec §5): defaults, every option, and the usage errors (exit 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <emm/conformance/certify_cli.hpp>
#include <emm/conformance/subject.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <set>
#include <string>
#include <vector>

namespace emm::conformance {
namespace {

CertifyOptions parse(std::vector<std::string_view> args) { return parse_certify_args(args); }

TEST(CertifyCli, DefaultsToEveryBackendEveryClauseAndSixtySeconds) {
  const CertifyOptions options = parse({"--plugin", "lib.so"});
  EXPECT_EQ(options.plugin_path, "./lib.so") << "a path without a slash is a file here";
  EXPECT_EQ(options.isolation, Isolation::backend);
  EXPECT_FALSE(options.memory_limit.has_value());
  EXPECT_EQ(options.backends, (std::vector<BackendKind>{BackendKind::fake, BackendKind::gpu}));
  EXPECT_TRUE(options.only.empty());
  EXPECT_EQ(options.timeout_s, 60);
  EXPECT_FALSE(options.list);
  EXPECT_TRUE(options.reports.json.empty());
}

TEST(CertifyCli, ReadsEveryOption) {
  const CertifyOptions options =
      parse({"--plugin", "p.so", "--backend", "fake", "--only", "LIFE-2,ALLOC-1", "--json",
             "r.json", "--junit", "r.xml", "--markdown", "r.md", "--timeout-s", "2"});
  EXPECT_EQ(options.backends, std::vector<BackendKind>{BackendKind::fake});
  EXPECT_EQ(options.only,
            (std::vector<const Clause*>{catalogue().find("LIFE-2"), catalogue().find("ALLOC-1")}));
  EXPECT_EQ(options.reports.json, "r.json");
  EXPECT_EQ(options.reports.junit, "r.xml");
  EXPECT_EQ(options.reports.markdown, "r.md");
  EXPECT_EQ(options.timeout_s, 2);
  EXPECT_EQ(parse({"--plugin=p.so", "--backend=gpu"}).backends,
            std::vector<BackendKind>{BackendKind::gpu});
  EXPECT_EQ(parse({"--plugin", "p.so", "--backend", "all"}).backends,
            (std::vector<BackendKind>{BackendKind::fake, BackendKind::gpu}));
}

TEST(CertifyCli, SeedAndBudgetSetTheExploration) {
  const CertifyOptions defaults = parse({"--plugin", "p.so"});
  EXPECT_EQ(defaults.backend_settings.exploration.seed, kDefaultSeed);
  EXPECT_EQ(defaults.backend_settings.exploration.budget, 0);  // the backend's default
  const CertifyOptions set =
      parse({"--plugin", "p.so", "--seed", "18446744073709551615", "--budget", "500"});
  EXPECT_EQ(set.backend_settings.exploration.seed, 18446744073709551615u);
  EXPECT_EQ(set.backend_settings.exploration.budget, 500);
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--seed", "-1"}),
                   "--seed needs a whole number from 0 to 18446744073709551615 (got '-1'); a "
                   "reproducer names the seed that replays it");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--seed", "18446744073709551616"}),
                   "--seed needs a whole number from 0 to 18446744073709551615 (got "
                   "'18446744073709551616'); a reproducer names the seed that replays it");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--budget", "0"}),
                   "--budget needs a whole number of sequences per clause from 1 to 1000000 "
                   "(got '0')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--budget", "24x"}),
                   "--budget needs a whole number of sequences per clause from 1 to 1000000 "
                   "(got '24x')");
}

TEST(CertifyCli, Nep49SubjectsReplaceThePluginAndTheirClauses) {
  const CertifyOptions module = parse({"--nep49", "numpy:PyDataMem_DefaultHandler"});
  ASSERT_TRUE(module.nep49.has_value());
  EXPECT_EQ(module.nep49->kind, Nep49SubjectSpec::Kind::module);
  EXPECT_EQ(module.nep49->location, "numpy");
  EXPECT_EQ(module.nep49->symbol, "PyDataMem_DefaultHandler");
  EXPECT_TRUE(module.plugin_path.empty());

  const CertifyOptions library = parse({"--nep49-library", "libh.so", "--only", "NEP49-6"});
  ASSERT_TRUE(library.nep49.has_value());
  EXPECT_EQ(library.nep49->kind, Nep49SubjectSpec::Kind::library);
  EXPECT_EQ(library.nep49->location, "./libh.so") << "a path without a slash is a file here";
  EXPECT_EQ(library.nep49->symbol, "emm_nep49_handler");
  EXPECT_EQ(library.only, std::vector<const Clause*>{catalogue().find("NEP49-6")});
  const CertifyOptions named = parse({"--nep49-library", "/x/lib:h.so:my_handler"});
  EXPECT_EQ(named.nep49->location, "/x/lib:h.so");
  EXPECT_EQ(named.nep49->symbol, "my_handler");
  EXPECT_EQ(parse({"--nep49-library", "/x:y/libh.so"}).nep49->symbol, "emm_nep49_handler")
      << "a colon before the last slash is part of the path";
}

TEST(CertifyCli, Nep49UsageErrorsSayWhatIsWrong) {
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "numpy"}),
                   "--nep49 needs MODULE:ATTR, e.g. emm_nep49_pinned:handler or "
                   "numpy:PyDataMem_DefaultHandler (got 'numpy')");
  // A module or attribute that is not a dotted Python name would only fail at import time, in
  // a clause child; the command line says so at once (found by fuzz_certify_cli: NUL bytes).
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", std::string("r\0x:h", 5)}),
                   "--nep49 needs MODULE:ATTR with dotted Python names (letters, digits, '_' "
                   "and '.'), e.g. emm_nep49_pinned:handler (got 'r\\x00x:h')");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "my pool:handler"}),
                   "--nep49 needs MODULE:ATTR with dotted Python names (letters, digits, '_' "
                   "and '.'), e.g. emm_nep49_pinned:handler (got 'my pool:handler')");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "pool.:handler"}),
                   ::testing::EndsWith("(got 'pool.:handler')"));
  EXPECT_EQ(parse({"--nep49", "pkg.sub:Outer.handler"}).nep49->text(), "pkg.sub:Outer.handler");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49-library", "lib.so:"}),
                   "--nep49-library lib.so:: no symbol after ':' (PATH or PATH:SYMBOL)");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--nep49", "m:a"}),
                   "--plugin and --nep49 exclude each other: certify one subject per run");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "m:a", "--nep49-library", "l.so"}),
                   "--nep49 and --nep49-library name one handler: give one");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "m:a", "--only", "LIFE-2"}),
                   "--only: LIFE-2 is not a NEP49 clause; a --nep49 run certifies the NEP49-* "
                   "clauses");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--only", "NEP49-1"}),
                   "--only: NEP49-1 is a NEP 49 handler clause: certify a handler with --nep49 "
                   "or --nep49-library");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49-library", "./h.so", "--json", "h.so"}),
                   "--json h.so is the plugin library itself: writing the report would overwrite "
                   "it");
}

TEST(CertifyCli, ListAndHelpNeedNoPlugin) {
  EXPECT_TRUE(parse({"--list"}).list);
  EXPECT_TRUE(parse({"--help"}).help);
}

TEST(CertifyCli, UsageErrorsSayWhatIsWrong) {
  EMM_EXPECT_THROW(UsageError, parse({}),
                   "--plugin PATH is required (or, for a NumPy handler, --nep49 MODULE:ATTR or "
                   "--nep49-library PATH)");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin"}), "--plugin needs a value");
  EMM_EXPECT_THROW(UsageError, parse({"--python", "my_pool:"}),
                   "--python needs MODULE[:ATTR] with dotted Python names, e.g. "
                   "rmm.allocators.numba:RMMNumbaManager (got 'my_pool:')");
  EMM_EXPECT_THROW(UsageError, parse({"--python", "2fast.pool"}),
                   ::testing::EndsWith("(got '2fast.pool')"));
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
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--deadline", "15min"}),
                   "--deadline needs a duration such as 900, 900s, 15m or 2h (at most a week), "
                   "or none (got '15min')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--deadline", "0"}),
                   "--deadline needs a duration such as 900, 900s, 15m or 2h (at most a week), "
                   "or none (got '0')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "a.so", "--verbose"}),
                   "unknown argument '--verbose'");
  EMM_EXPECT_THROW(UsageError, parse({"a.so"}), "unknown argument 'a.so'");
}

TEST(CertifyCli, DeadlineTakesSecondsMinutesHoursOrNone) {
  EXPECT_EQ(parse({"--plugin", "a.so"}).deadline_s, 15u * 60);  // the default
  EXPECT_EQ(parse({"--plugin", "a.so", "--deadline", "90"}).deadline_s, 90u);
  EXPECT_EQ(parse({"--plugin", "a.so", "--deadline", "90s"}).deadline_s, 90u);
  EXPECT_EQ(parse({"--plugin", "a.so", "--deadline", "15m"}).deadline_s, 900u);
  EXPECT_EQ(parse({"--plugin", "a.so", "--deadline=2h"}).deadline_s, 7200u);
  EXPECT_EQ(parse({"--plugin", "a.so", "--deadline", "none"}).deadline_s, 0u);
}

TEST(CertifyCli, UsageTextListsEveryOptionAndTheExitCodes) {
  const std::string usage = certify_usage();
  for (const char* option : {"--plugin", "--backend", "--only", "--json", "--junit", "--markdown",
                             "--html", "--list", "--timeout-s", "--memory-limit", "--isolation",
                             "--in-process", "--nep49", "--nep49-library", "--deadline"}) {
    EXPECT_NE(usage.find(option), std::string::npos) << option;
  }
  for (const char* status : {"  0  CERTIFIED", "  1  NOT CERTIFIED", "  2  usage error",
                             "  3  PARTIAL", "  124  NOT CERTIFIED", "  128+n  NOT CERTIFIED"}) {
    EXPECT_NE(usage.find(status), std::string::npos) << status;
  }
}

// is_certify_option() keeps a list of its own (a subject kind added at run time must not take a
// flag emm-certify has): it must name exactly the flags the usage text shows, and the parser must
// know each of them.
TEST(CertifyCli, TheOptionListIsTheUsageTextsFlagsAndTheParserKnowsEach) {
  const std::string usage = certify_usage();
  std::set<std::string> shown;
  for (std::size_t at = usage.find("--"); at != std::string::npos; at = usage.find("--", at)) {
    std::size_t end = at + 2;
    while (end < usage.size() &&
           (std::islower(static_cast<unsigned char>(usage[end])) != 0 ||
            std::isdigit(static_cast<unsigned char>(usage[end])) != 0 || usage[end] == '-')) {
      ++end;
    }
    if (end > at + 2) shown.insert(usage.substr(at, end - at));
    at = end;
  }
  ASSERT_GE(shown.size(), 20u);
  for (const std::string& flag : shown) {
    // A subject kind a test added (subject_option_test.cpp) shows its flag too; it is not ours.
    if (find_subject_option(flag) != nullptr) continue;
    EXPECT_TRUE(is_certify_option(flag)) << flag << " is in the usage text but not in the list";
    try {
      (void)parse({flag.c_str(), "x"});
    } catch (const UsageError& error) {
      EXPECT_EQ(std::string(error.what()).find("unknown argument '" + flag + "'"),
                std::string::npos)
          << error.what();
    }
  }
  EXPECT_TRUE(is_certify_option("-h"));
  EXPECT_FALSE(is_certify_option("--my-subject"));
}

TEST(CertifyCli, ChecksReportPathsAndValuesBeforeAnythingRuns) {
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--json="}),
                   "--json needs a non-empty value");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--json", "r.x", "--junit", "r.x"}),
                   "--json and --junit name the same file r.x; give each report its own path");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "./p.so", "--markdown", "p.so"}),
                   "--markdown p.so is the plugin library itself: writing the report would "
                   "overwrite it");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--memory-limit", "lots"}),
                   "--memory-limit needs a size such as 16G, 512M or 1048576, or none (got "
                   "'lots')");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--isolation", "clause", "--in-process"}),
                   "--isolation and --in-process exclude each other");
  EXPECT_EQ(parse({"--plugin", "p.so", "--memory-limit", "512M"}).memory_limit,
            std::size_t{512} << 20);
  EXPECT_EQ(parse({"--plugin", "p.so", "--memory-limit", "none"}).memory_limit, 0u);
  EXPECT_EQ(parse({"--plugin", "p.so", "--isolation", "clause"}).isolation, Isolation::clause);
  EXPECT_EQ(parse({"--plugin", "p.so", "--only", "LIFE-2,LIFE-2,ALLOC-1,LIFE-2"}).only.size(), 2u)
      << "a repeated --only id runs once";
}

}  // namespace
}  // namespace emm::conformance
