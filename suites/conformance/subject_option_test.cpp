// A subject kind added as a SubjectOption (subject.hpp): the command line parses its option,
// --help lists it, make_subject builds it and a whole certification runs through it, with no
// other code changed. The kind here, --upper-plugin, certifies a plugin library like --plugin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <emm/conformance/certify.hpp>
#include <emm/conformance/certify_cli.hpp>
#include <emm/conformance/subject.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/errors.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace emm::conformance {
namespace {

// Added once per test process (ctest runs each test in its own).
void add_upper_plugin() {
  if (find_subject_option("--upper-plugin") != nullptr) return;
  add_subject_option({"--upper-plugin", "PATH", "a plugin library, certified as by --plugin",
                      [](const std::string& value) -> std::unique_ptr<Subject> {
                        if (value.find('/') == std::string::npos) {
                          throw UsageError("--upper-plugin needs a path with a slash (got '" +
                                           value + "')");
                        }
                        return plugin_library_subject(value);
                      }});
}

CertifyOptions parse(std::vector<std::string_view> args) { return parse_certify_args(args); }

TEST(SubjectOption, TheCommandLineParsesItAndHelpListsIt) {
  add_upper_plugin();
  const CertifyOptions options = parse({"--upper-plugin", "./libx.so", "--backend", "fake"});
  ASSERT_NE(options.subject_option, nullptr);
  EXPECT_EQ(options.subject_option->flag, "--upper-plugin");
  EXPECT_EQ(options.subject_value, "./libx.so");
  EXPECT_TRUE(options.plugin_path.empty());
  EXPECT_THAT(
      certify_usage(),
      ::testing::HasSubstr("  --upper-plugin PATH a plugin library, certified as by --plugin\n"));
  EXPECT_NE(std::find(subject_options().begin(), subject_options().end(),
                      find_subject_option("--upper-plugin")),
            subject_options().end());
}

TEST(SubjectOption, ItNamesTheOneSubjectOfARun) {
  add_upper_plugin();
  EMM_EXPECT_THROW(UsageError, parse({"--upper-plugin", "./a.so", "--plugin", "./b.so"}),
                   "--plugin and --upper-plugin exclude each other: certify one subject per run");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49", "numpy:X", "--upper-plugin", "./a.so"}),
                   "--nep49 and --upper-plugin exclude each other: certify one subject per run");
  EMM_EXPECT_THROW(UsageError, parse({"--nep49-library", "./h.so", "--upper-plugin", "./a.so"}),
                   "--nep49-library and --upper-plugin exclude each other: certify one subject "
                   "per run");
  EMM_EXPECT_THROW(UsageError, parse({"--upper-plugin", "./a.so", "--upper-plugin", "./b.so"}),
                   "--upper-plugin is given more than once");
  EMM_EXPECT_THROW(UsageError, parse({"--upper-plugin"}), "--upper-plugin needs a value");
}

TEST(SubjectOption, AddingOneRefusesTakenAndMalformedFlags) {
  add_upper_plugin();
  const auto make = [](const std::string&) -> std::unique_ptr<Subject> { return nullptr; };
  EMM_EXPECT_THROW(Error, add_subject_option({"--json", "F", "h", make}),
                   "add_subject_option: --json is emm-certify's own option");
  EMM_EXPECT_THROW(Error, add_subject_option({"--upper-plugin", "P", "h", make}),
                   "add_subject_option: --upper-plugin is added already");
  EMM_EXPECT_THROW(Error, add_subject_option({"upper", "P", "h", make}),
                   "add_subject_option: the flag 'upper' must be an option name starting with --");
  EMM_EXPECT_THROW(Error, add_subject_option({"--no-make", "P", "h", {}}),
                   "add_subject_option: --no-make has no make function");
  for (const std::string_view own : {"--plugin", "--python", "--nep49", "--only", "--help"}) {
    EXPECT_TRUE(is_certify_option(own)) << own;
  }
  EXPECT_FALSE(is_certify_option("--upper-plugin"));
}

int certify(std::vector<std::string> args, std::string& out, std::string& err) {
  std::vector<char*> argv;
  static std::string program = "emm-certify";
  argv.push_back(program.data());
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream out_stream, err_stream;
  const int status =
      certify_main(static_cast<int>(argv.size()), argv.data(), out_stream, err_stream);
  out = out_stream.str();
  err = err_stream.str();
  return status;
}

TEST(SubjectOption, ACertificationRunsThroughIt) {
  add_upper_plugin();
  std::string out, err;
  const int status = certify(
      {"--upper-plugin", EMM_REFERENCE_PLUGIN, "--backend", "fake", "--only", "REG-1,ALLOC-1"}, out,
      err);
  EXPECT_EQ(status, 3) << out << err;  // PARTIAL: two clauses passed
  EXPECT_THAT(out, ::testing::HasSubstr("VERDICT: PARTIAL (2 of 39 clauses; fake)"));
  EXPECT_THAT(out, ::testing::HasSubstr(EMM_REFERENCE_PLUGIN));
}

TEST(SubjectOption, ItsUsageErrorIsExitStatusTwo) {
  add_upper_plugin();
  std::string out, err;
  EXPECT_EQ(certify({"--upper-plugin", "nodir.so"}, out, err), 2);
  EXPECT_THAT(err, ::testing::StartsWith("emm-certify: --upper-plugin needs a path with a slash "
                                         "(got 'nodir.so')\n"));
}

// --only names catalogue clauses; which of them the added kind certifies only its subject knows,
// so the check comes once the subject is built, and is a usage error like the others.
TEST(SubjectOption, OnlyAClauseItsSubjectCertifiesMayBeNamed) {
  add_upper_plugin();
  std::string out, err;
  EXPECT_EQ(certify({"--upper-plugin", EMM_REFERENCE_PLUGIN, "--only", "REG-1,NEP49-1"}, out, err),
            2);
  EXPECT_THAT(err, ::testing::StartsWith("emm-certify: --only: NEP49-1 is not a clause "
                                         "--upper-plugin certifies (see --list)\n"));
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace emm::conformance
