# EmmConformance.cmake — functions that turn a plugin author's one-file conformance test into a
# registered test executable. Included by emmkit's own build and by find_package(emmkit).
#
#   emm_add_conformance_test(my_plugin_conformance
#                            SOURCES my_plugin_conformance.cpp   # EMM_INSTANTIATE_CONFORMANCE_SUITE
#                            LIBRARIES my_plugin)
#   emm_add_boost_conformance_test(my_plugin_boost
#                                  SOURCES my_plugin_boost.cpp   # EMM_BOOST_CONFORMANCE_SUITE
#                                  LIBRARIES my_plugin)
#
# The GoogleTest executable links emmkit::conformance_gtest and GTest::gtest_main and is
# registered with gtest_discover_tests (one CTest test per clause and backend; the gpu ones
# labelled `conformance-gpu` and run one at a time); the Boost.Test
# one links emmkit::conformance_boost (which provides main()) and is registered as one CTest
# test that also writes Boost's JUnit report to <target>.junit.xml in its binary directory.
# Labels match `ctest -L conformance` (and the gpu instances `ctest -L gpu`).
include_guard(GLOBAL)

function(emm_add_conformance_test target)
  cmake_parse_arguments(PARSE_ARGV 1 EMM "" "" "SOURCES;LIBRARIES")
  if(NOT EMM_SOURCES)
    message(FATAL_ERROR "emm_add_conformance_test(${target}): SOURCES is required")
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
    message(FATAL_ERROR "emm_add_boost_conformance_test(${target}): emmkit was built without "
                        "Boost.Test (install libboost-test-dev and rebuild emmkit)")
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
