// The embedding core (python/include/emm/python): one interpreter, the GIL from many threads,
// Python exceptions rendered into typed errors, and every way MODULE:ATTR can fail to import.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pybind11/pybind11.h>

#include <thread>
#include <vector>

#include "emm/conformance/testing/expect_throw.hpp"
#include "emm/python/gil.hpp"
#include "emm/python/import_target.hpp"
#include "emm/python/interpreter.hpp"
#include "emm/python/python_error.hpp"

namespace py = pybind11;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace emm::python {
namespace {

class EmbedCore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ensure_interpreter();
    Gil gil;
    py::module_::import("sys").attr("path").attr("insert")(0, EMM_TEST_PYTHON_MODULES);
  }
};

TEST_F(EmbedCore, StartsOneInterpreterAndLeavesTheGilFree) {
  ensure_interpreter();  // a second call changes nothing
  EXPECT_TRUE(interpreter_started_here());
  EXPECT_FALSE(holds_gil());
  EXPECT_THAT(interpreter_description(), StartsWith("Python 3."));
}

TEST_F(EmbedCore, GilCanBeTakenFromManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) {
        Gil gil;
        py::module_::import("emm_test_plain").attr("increment")();
        GilReleased released;  // and give it up in the middle of a scope
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  Gil gil;
  EXPECT_EQ(py::module_::import("emm_test_plain").attr("counter").cast<int>(), 8000);
}

TEST_F(EmbedCore, ParsesModuleAndAttribute) {
  const ImportTarget plain = ImportTarget::parse("pkg.mod", "_numba_memory_manager");
  EXPECT_EQ(plain.module, "pkg.mod");
  EXPECT_EQ(plain.attribute, "_numba_memory_manager");
  const ImportTarget named = ImportTarget::parse("pkg.mod:Outer.Inner", "x");
  EXPECT_EQ(named.attribute, "Outer.Inner");
  EXPECT_EQ(named.str(), "pkg.mod:Outer.Inner");
}

TEST_F(EmbedCore, RefusesTextThatIsNotModuleColonAttribute) {
  for (const char* text : {"", ":X", "mod:", "mod:a:b", "1mod", "mod..sub", "mod:a-b"}) {
    EMM_EXPECT_THROW(InvalidArgumentError, ImportTarget::parse(text, "attr"),
                     "'" + std::string(text) +
                         "' is not MODULE[:ATTR] (a dotted Python module name, then optionally a "
                         "colon and an attribute name), e.g. rmm.allocators.numba:RMMNumbaManager");
  }
}

TEST_F(EmbedCore, ImportsANestedAttribute) {
  Gil gil;
  const py::object value = import_target(ImportTarget::parse("emm_test_plain:Outer.Inner", "x"));
  EXPECT_EQ(value.attr("value").cast<int>(), 42);
}

TEST_F(EmbedCore, AMissingModuleSaysWhereItWasLookedFor) {
  Gil gil;
  const auto error = EMM_EXPECT_THROW(
      PythonImportError, import_target(ImportTarget::parse("emm_test_absent.sub:X", "x")),
      AllOf(StartsWith("cannot import emm_test_absent.sub: No module named 'emm_test_absent' on "
                       "this interpreter's path (["),
            HasSubstr("]); install it there or add its directory to PYTHONPATH")));
  if (error) {
    EXPECT_EQ(error->reason(), PythonImportError::Reason::module_not_found);
    EXPECT_EQ(error->type_name(), "ModuleNotFoundError");
  }
}

TEST_F(EmbedCore, AModuleRaisingOnImportShowsItsTraceback) {
  Gil gil;
  const auto error = EMM_EXPECT_THROW(
      PythonImportError, import_target(ImportTarget::parse("emm_test_raises_on_import", "x")),
      AllOf(StartsWith("importing emm_test_raises_on_import raised ValueError: plugin "
                       "configuration is broken; fix the module (its traceback follows)\n"
                       "Traceback (most recent call last):\n"),
            HasSubstr("emm_test_raises_on_import.py\", line 8, in <module>"),
            HasSubstr("line 5, in _configure")));
  if (error) {
    EXPECT_EQ(error->reason(), PythonImportError::Reason::import_raised);
    EXPECT_EQ(error->message(), "plugin configuration is broken");
  }
}

TEST_F(EmbedCore, AMissingDependencyInsideTheModuleIsNotAMissingModule) {
  Gil gil;
  const auto error = EMM_EXPECT_THROW(
      PythonImportError, import_target(ImportTarget::parse("emm_test_missing_dependency", "x")),
      AllOf(StartsWith("importing emm_test_missing_dependency raised ModuleNotFoundError: No "
                       "module named 'emm_test_no_such_dependency'; fix the module"),
            HasSubstr("emm_test_missing_dependency.py\", line 2, in <module>")));
  if (error) {
    EXPECT_EQ(error->reason(), PythonImportError::Reason::import_raised);
  }
}

TEST_F(EmbedCore, AMissingAttributeNamesTheModuleFile) {
  Gil gil;
  const auto error = EMM_EXPECT_THROW(
      PythonImportError, import_target(ImportTarget::parse("emm_test_plain", "NoSuchClass")),
      AllOf(StartsWith("module emm_test_plain ("), HasSubstr("emm_test_plain.py) has no attribute "
                                                             "'NoSuchClass'; name one it defines "
                                                             "as emm_test_plain:ATTR")));
  if (error) {
    EXPECT_EQ(error->reason(), PythonImportError::Reason::attribute_missing);
    EXPECT_TRUE(error->traceback().empty());
  }
}

TEST_F(EmbedCore, RendersAnExceptionWithItsQualifiedTypeAndTraceback) {
  Gil gil;
  try {
    py::module_::import("emm_test_plain").attr("fail")("out of widgets");
    FAIL() << "fail() did not raise";
  } catch (py::error_already_set& raised) {
    const PythonError error = make_python_error(raised, "calling fail()");
    EXPECT_EQ(error.type_name(), "emm_test_plain.CustomError");
    EXPECT_EQ(error.message(), "out of widgets");
    EXPECT_EQ(error.doing(), "calling fail()");
    EXPECT_THAT(error.traceback(),
                AllOf(StartsWith("Traceback (most recent call last):\n"), HasSubstr("in fail\n"),
                      HasSubstr("emm_test_plain.CustomError: out of widgets")));
    EXPECT_THAT(std::string(error.what()),
                StartsWith("calling fail() raised emm_test_plain.CustomError: out of widgets\n"
                           "Traceback (most recent call last):\n"));
  }
}

TEST_F(EmbedCore, RendersAnExceptionObjectWithoutATraceback) {
  Gil gil;
  const py::object exception = py::module_::import("builtins").attr("KeyError")("k");
  const PythonError error = make_python_error(exception, "reading a value");
  EXPECT_STREQ(error.what(), "reading a value raised KeyError: 'k'");
  EXPECT_TRUE(error.traceback().empty());
}

}  // namespace
}  // namespace emm::python
