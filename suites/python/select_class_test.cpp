// libemm_python's emm_python_select_class (python/include/emm/python/plugin_entry.hpp), as
// emm-certify --python uses it in each child: it names the class before the entry point runs,
// refuses a null class, and refuses once the entry point has presented one. Each test is a
// process of its own (gtest_discover_tests), so each loads libemm_python afresh.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "emm/conformance/certify_cli.hpp"
#include "emm/errors.hpp"
#include "emm/plugin_loader.hpp"
#include "emm/python/plugin_entry.hpp"

namespace emm::conformance {
namespace {

python::SelectClassFunction select_function(const std::string& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  return reinterpret_cast<python::SelectClassFunction>(::dlsym(handle, python::kSelectClassSymbol));
}

TEST(PythonSelectClass, TheSelectedClassIsTheOneTheEntryPointLoadsAndThenItIsFixed) {
  const std::string library = python_library_path();
  const python::SelectClassFunction select = select_function(library);
  ASSERT_NE(select, nullptr) << library << " does not export " << python::kSelectClassSymbol;
  EXPECT_FALSE(select(nullptr, nullptr));
  ASSERT_TRUE(select("emmkit_no_such_module:Manager", "none"));
  // The environment names another class: the selection wins over it.
  ::setenv(python::kPluginVariable, "emmkit_from_the_environment:Manager", 1);
  try {
    (void)load_plugin(library);
    ADD_FAILURE() << "a class in a module that does not exist was loaded";
  } catch (const PluginLoadError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("python:emmkit_no_such_module:Manager"), std::string::npos) << what;
    EXPECT_EQ(what.find("emmkit_from_the_environment"), std::string::npos) << what;
  }
  EXPECT_FALSE(select("emmkit_another:Manager", nullptr));
}

}  // namespace
}  // namespace emm::conformance
