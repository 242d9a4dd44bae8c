// emm-certify's --python and --capabilities (conformance/.../certify_cli.hpp), parsed: what they
// accept, what they refuse, and where libemm_python is found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/testing/expect_throw.hpp"

namespace emm::conformance {
namespace {

CertifyOptions parse(std::vector<std::string_view> args) { return parse_certify_args(args); }

TEST(CertifyCliPython, PythonNamesTheClassAndLoadsLibemmPython) {
  const CertifyOptions options = parse({"--python", "cupy_manager:CuPyMemoryManager"});
  EXPECT_EQ(options.python_target, "cupy_manager:CuPyMemoryManager");
  EXPECT_FALSE(options.python_capabilities.has_value());
  EXPECT_EQ(options.plugin_path, python_library_path());
  EXPECT_THAT(options.plugin_path, ::testing::EndsWith("libemm_python.so"));
  EXPECT_EQ(python_unavailable_reason(), "");
}

TEST(CertifyCliPython, CapabilitiesOverrideWhatTheClassDeclares) {
  EXPECT_EQ(parse({"--python", "m", "--capabilities", "ipc,memory_info"}).python_capabilities,
            "ipc,memory_info");
  EXPECT_EQ(parse({"--python", "m", "--capabilities=none"}).python_capabilities, "none");
}

TEST(CertifyCliPython, RefusesWhatCannotWork) {
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--python", "m"}),
                   "--plugin and --python exclude each other: certify a library or a class");
  EMM_EXPECT_THROW(UsageError, parse({"--plugin", "p.so", "--capabilities", "ipc"}),
                   "--capabilities applies to --python only: a plugin library declares its own");
  EMM_EXPECT_THROW(UsageError, parse({"--python", "m", "--capabilities", "ipc,flying"}),
                   "--capabilities: 'flying' is not a capability a Python plugin can declare; "
                   "use some of memory_info,ipc,thread_safe,pooling,no_caching,managed_memory, "
                   "or none");
  EMM_EXPECT_THROW(UsageError, parse({"--python", "m", "--capabilities", "runs_on_fake_driver"}),
                   ::testing::StartsWith("--capabilities: 'runs_on_fake_driver' is not a "
                                         "capability a Python plugin can declare"));
  EMM_EXPECT_THROW(UsageError, parse({"--python", "m", "--python", "n"}),
                   "--python is given more than once");
}

TEST(CertifyCliPython, EmmPythonLibraryOverridesWhereTheLibraryIsLooked) {
  ::setenv("EMM_PYTHON_LIBRARY", "/opt/elsewhere/libemm_python.so", 1);
  EXPECT_EQ(python_library_path(), "/opt/elsewhere/libemm_python.so");
  ::unsetenv("EMM_PYTHON_LIBRARY");
  EXPECT_NE(python_library_path(), "/opt/elsewhere/libemm_python.so");
}

TEST(CertifyCliPython, UsageTextShowsPythonAndCapabilities) {
  const std::string usage = certify_usage();
  EXPECT_THAT(usage, ::testing::HasSubstr("--python M[:A]"));
  EXPECT_THAT(usage, ::testing::HasSubstr("--capabilities C"));
  EXPECT_THAT(usage, ::testing::HasSubstr("(without one: memory_info and ipc\n"
                                          "                      inferred from the methods the "
                                          "class overrides)"));
  EXPECT_THAT(usage, ::testing::Not(::testing::HasSubstr("NOT AVAILABLE")));
}

}  // namespace
}  // namespace emm::conformance
