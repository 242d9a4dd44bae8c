// emm-certify's command line as built without libemm_python (certify_cli.cpp compiled here with
// EMM_PYTHON_NOT_BUILT_REASON, as the build does when EMMKIT_PYTHON finds no Python): --help says
// why --python is not available, and --python is refused with that reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "emm/conformance/certify_cli.hpp"
#include "emm/conformance/testing/expect_throw.hpp"

namespace emm::conformance {
namespace {

TEST(CertifyCliWithoutPython, HelpSaysWhyPythonIsNotAvailable) {
  EXPECT_THAT(certify_usage(),
              ::testing::HasSubstr("NOT AVAILABLE: this emmkit was built without libemm_python "
                                   "(no Python found for this test); install python3-dev and "
                                   "pybind11 and configure with -DEMMKIT_PYTHON=ON\n"));
}

TEST(CertifyCliWithoutPython, PythonIsRefusedWithTheReason) {
  const std::vector<std::string_view> args{"--python", "cupy_manager"};
  EMM_EXPECT_THROW(UsageError, parse_certify_args(args),
                   "--python cannot be used: this emmkit was built without libemm_python (no "
                   "Python found for this test); install python3-dev and pybind11 and configure "
                   "with -DEMMKIT_PYTHON=ON");
  ::unsetenv("EMM_PYTHON_LIBRARY");
  EXPECT_EQ(python_library_path(), "");
}

}  // namespace
}  // namespace emm::conformance
