# EmmConformance.cmake — functions that turn a plugin into registered CTest tests. Included by
# emmkit's own build and by find_package(emmkit).
#
#   emm_add_certification_test(my_plugin PLUGIN my_plugin_library)   # emm-certify, fake + gpu
#   emm_add_conformance_test(my_plugin_conformance
#                            SOURCES my_plugin_conformance.cpp   # EMM_INSTANTIATE_CONFORMANCE_SUITE
#                            LIBRARIES my_plugin)
#   emm_add_boost_conformance_test(my_plugin_boost
#                                  SOURCES my_plugin_boost.cpp   # EMM_BOOST_CONFORMANCE_SUITE
#                                  LIBRARIES my_plugin)
#
# emm_add_certification_test runs emm-certify on the plugin's shared library, one CTest test per
# backend (<name>.fake, <name>.gpu), each writing its JUnit, JSON, Markdown and HTML reports
# (see the function). It needs no test framework. The GoogleTest executable
# (find_package(emmkit COMPONENTS gtest)) links emmkit::conformance_gtest and GTest::gtest_main
# and is registered with gtest_discover_tests (one CTest test per clause and backend; the gpu
# ones labelled `conformance-gpu` and run one at a time); the Boost.Test one
# (COMPONENTS boost) links emmkit::conformance_boost (which provides main()) and is registered as
# one CTest test that also writes Boost's JUnit report to <target>.junit.xml in its binary
# directory. Labels match `ctest -L conformance` / `ctest -L certification` (and the gpu
# instances `ctest -L gpu`).
include_guard(GLOBAL)

# The script behind each certification test, beside this file in the source tree and installed;
# a global property, so that a function called from any directory finds it (this file is
# included once).
set_property(GLOBAL PROPERTY EMM_CERTIFICATION_SCRIPT
             "${CMAKE_CURRENT_LIST_DIR}/EmmCertificationTest.cmake")

function(emm_add_conformance_test target)
  cmake_parse_arguments(PARSE_ARGV 1 EMM "" "" "SOURCES;LIBRARIES")
  if(NOT EMM_SOURCES)
    message(FATAL_ERROR "emm_add_conformance_test(${target}): SOURCES is required")
  endif()
  if(NOT TARGET emmkit::conformance_gtest)
    message(FATAL_ERROR "emm_add_conformance_test(${target}): emmkit::conformance_gtest is not "
                        "defined; ask for it: find_package(emmkit CONFIG REQUIRED COMPONENTS gtest)")
  endif()
  if(NOT TARGET GTest::gtest_main)
    find_package(GTest REQUIRED)
  endif()
  add_executable(${target} ${EMM_SOURCES})
  target_link_libraries(${target} PRIVATE ${EMM_LIBRARIES} emmkit::conformance_gtest
                                          GTest::gtest_main)
  include(GoogleTest)
  # CTest names: <Prefix>.<CLAUSE>_<Name><emm::conformance::on_fake<Traits>> (and on_gpu).
  # The gpu instances (type index 1) carry the label `conformance-gpu` (ctest -L takes a regular
  # expression: both -L conformance and -L gpu select them) and share a resource lock: GPU memory
  # figures are device-wide, so two of them at once would see each other's allocations.
  gtest_discover_tests(${target} TEST_FILTER "-*/EmmConformance/1.*" TEST_LIST ${target}_TESTS
                       PROPERTIES LABELS conformance DISCOVERY_TIMEOUT 60)
  gtest_discover_tests(${target} TEST_FILTER "*/EmmConformance/1.*" TEST_LIST ${target}_GPU_TESTS
                       PROPERTIES LABELS conformance-gpu RESOURCE_LOCK emm_gpu
                       DISCOVERY_TIMEOUT 60)
endfunction()

function(emm_add_boost_conformance_test target)
  cmake_parse_arguments(PARSE_ARGV 1 EMM "" "" "SOURCES;LIBRARIES")
  if(NOT EMM_SOURCES)
    message(FATAL_ERROR "emm_add_boost_conformance_test(${target}): SOURCES is required")
  endif()
  if(NOT TARGET emmkit::conformance_boost)
    message(FATAL_ERROR "emm_add_boost_conformance_test(${target}): emmkit::conformance_boost "
                        "is not defined; ask for it with find_package(emmkit CONFIG REQUIRED "
                        "COMPONENTS boost) (emmkit must have been built with Boost.Test: "
                        "libboost-test-dev)")
  endif()
  if(NOT TARGET Boost::unit_test_framework)
    find_package(Boost REQUIRED COMPONENTS unit_test_framework)
  endif()
  add_executable(${target} ${EMM_SOURCES})
  target_link_libraries(${target} PRIVATE ${EMM_LIBRARIES} emmkit::conformance_boost)
  add_test(NAME ${target}
           COMMAND ${target} --logger=HRF,message,stdout:JUNIT,all,${target}.junit.xml
                   --report_level=short
           WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  set_tests_properties(${target} PROPERTIES LABELS conformance)
endfunction()

# emm_add_certification_test(<name> PLUGIN <target>
#                            [BACKEND fake|gpu ...]      # default: fake gpu
#                            [TIMEOUT_S <seconds>]       # emm-certify --timeout-s (per clause)
#                            [OUTPUT_DIRECTORY <dir>]    # default: <binary dir>/certificates
#                            [ARGS <emm-certify argument> ...])
#
# One CTest test per backend, <name>.<backend>, running the kit's emm-certify on <target>'s
# library (a SHARED or MODULE library built with EMM_EXPORT_MEMORY_MANAGER); the fake backend
# has two devices unless ARGS holds --devices, so that the DEV clauses run. Each run writes
#   <dir>/<name>.<backend>.xml    JUnit (one testcase per clause; CI test views read it)
#   <dir>/<name>.<backend>.json   the report tools parse (docs/report.schema.json)
#   <dir>/<name>.<backend>.md     the Markdown certificate (for a job summary)
#   <dir>/<name>.<backend>.html   the HTML certificate
# The test passes when emm-certify exits 0 (CERTIFIED on that backend) and fails on anything
# else, with emm-certify's exit status explained. The gpu test is SKIPPED, not passed, when the
# machine has no usable GPU (the report says the gpu backend did not run, and why), so a
# GPU-less runner stays green and shows it certified nothing there; set the environment
# variable EMMKIT_REQUIRE_GPU=1 on a GPU runner to make that a failure instead.
# Labels: `certification` (fake) and `certification-gpu` (gpu; also selected by -L gpu); the gpu
# tests share the resource lock emm_gpu with the conformance suites' GPU cases.
function(emm_add_certification_test name)
  cmake_parse_arguments(PARSE_ARGV 1 EMM "" "PLUGIN;TIMEOUT_S;OUTPUT_DIRECTORY" "BACKEND;ARGS")
  set(_where "emm_add_certification_test(${name})")
  if(EMM_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${_where}: unexpected arguments '${EMM_UNPARSED_ARGUMENTS}' (expected "
                        "PLUGIN, BACKEND, TIMEOUT_S, OUTPUT_DIRECTORY, ARGS)")
  endif()
  if(NOT EMM_PLUGIN)
    message(FATAL_ERROR "${_where}: PLUGIN <target> is required: the plugin's shared library")
  endif()
  if(NOT TARGET ${EMM_PLUGIN})
    message(FATAL_ERROR "${_where}: PLUGIN '${EMM_PLUGIN}' is not a target; define the plugin "
                        "library (add_library(${EMM_PLUGIN} SHARED ...)) before this call")
  endif()
  get_target_property(_type ${EMM_PLUGIN} TYPE)
  if(NOT _type MATCHES "^(SHARED|MODULE)_LIBRARY$")
    message(FATAL_ERROR "${_where}: PLUGIN '${EMM_PLUGIN}' is a ${_type}; emm-certify loads a "
                        "SHARED or MODULE library exporting EMM_EXPORT_MEMORY_MANAGER")
  endif()
  if(NOT EMM_BACKEND)
    set(EMM_BACKEND fake gpu)
  endif()
  list(REMOVE_DUPLICATES EMM_BACKEND)
  foreach(_backend IN LISTS EMM_BACKEND)
    if(NOT _backend MATCHES "^(fake|gpu)$")
      message(FATAL_ERROR "${_where}: BACKEND must be fake or gpu, not '${_backend}'")
    endif()
  endforeach()
  if(DEFINED EMM_TIMEOUT_S AND NOT EMM_TIMEOUT_S MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${_where}: TIMEOUT_S needs a whole number of seconds, not "
                        "'${EMM_TIMEOUT_S}'")
  endif()
  if(TARGET emmkit::certify)
    set(_certify "$<TARGET_FILE:emmkit::certify>")
  else()
    message(FATAL_ERROR "${_where}: emmkit::certify (emm-certify) is not defined: "
                        "find_package(emmkit CONFIG REQUIRED) first")
  endif()
  if(NOT EMM_OUTPUT_DIRECTORY)
    set(EMM_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/certificates")
  endif()
  set(_extra ${EMM_ARGS})
  if(DEFINED EMM_TIMEOUT_S)
    list(APPEND _extra --timeout-s ${EMM_TIMEOUT_S})
  endif()
  # '|' stands for ';' on the command line of the script.
  string(REPLACE ";" "|" _extra "${_extra}")

  get_property(_script GLOBAL PROPERTY EMM_CERTIFICATION_SCRIPT)
  foreach(_backend IN LISTS EMM_BACKEND)
    set(_test ${name}.${_backend})
    add_test(NAME ${_test}
             COMMAND "${CMAKE_COMMAND}"
                     "-DEMM_CERTIFY=${_certify}"
                     "-DEMM_PLUGIN=$<TARGET_FILE:${EMM_PLUGIN}>"
                     "-DEMM_BACKEND=${_backend}"
                     "-DEMM_REPORT_BASE=${EMM_OUTPUT_DIRECTORY}/${_test}"
                     "-DEMM_EXTRA_ARGS=${_extra}"
                     -P "${_script}")
    if(_backend STREQUAL "gpu")
      set_tests_properties(${_test} PROPERTIES LABELS certification-gpu RESOURCE_LOCK emm_gpu
                           SKIP_REGULAR_EXPRESSION "EMMKIT-CERTIFICATION-SKIPPED:")
    else()
      set_tests_properties(${_test} PROPERTIES LABELS certification)
    endif()
  endforeach()
endfunction()
