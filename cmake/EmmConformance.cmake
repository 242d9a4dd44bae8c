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
# backend (<name>.fake, <name>.gpu), each writing its JUnit, JSON, Markdown and HTML reports, and
# where the compiler has ThreadSanitizer a third (<name>.tsan) that certifies a ThreadSanitizer
# build of the plugin's code on the clauses that run threads (see the function). It needs no test
# framework. The GoogleTest executable (find_package(emmkit COMPONENTS gtest)) links
# emmkit::conformance_gtest and GTest::gtest_main and is registered with gtest_discover_tests
# (one CTest test per clause and backend; the gpu ones labelled `conformance-gpu` and run one at
# a time); the Boost.Test one (COMPONENTS boost) links emmkit::conformance_boost (which provides
# main()) and is registered as one CTest test that also writes Boost's JUnit report to
# <target>.junit.xml in its binary directory. Labels match `ctest -L conformance` /
# `ctest -L certification` (and the gpu instances `ctest -L gpu`).
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
#                            [THREAD_SANITIZER ON|OFF]   # default: ON where the compiler has it
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
#
# THREAD_SANITIZER (default ON where the compiler builds and links with -fsanitize=thread on top
# of the project's flags; OFF under another sanitizer, or set EMM_CERTIFY_THREAD_SANITIZER=OFF
# before the call to change the default) also builds <target>'s code with ThreadSanitizer and
# adds the test <name>.tsan (label `certification-tsan`; `-L certification` selects it too):
# emm-certify --only ALLOC-10,LIFE-8 (the clauses whose threads meet inside the plugin) on the
# fake backend over that build, so that a missing lock is found by a detector, not by luck. The
# build is the library <target>_emm_tsan (lib<output name>_tsan.so beside the plugin): <target>'s
# sources and compile settings, and a copy made the same way of each static or object library of
# this project it links (the plugin's code often lives there); imported targets, shared and
# interface libraries are linked as they are. Call the function once <target> and those
# libraries are complete (their properties are read at the call). emm-certify sees that the
# library is instrumented and runs it with ThreadSanitizer's runtime (docs/ci-guide.md §5); a
# race it reports while a clause's threads allocate and release fails that clause with both
# stacks. The test passes when both clauses pass (emm-certify's exit status 3, PARTIAL) and
# writes <dir>/<name>.tsan.{xml,json,md,html}.
function(emm_add_certification_test name)
  cmake_parse_arguments(PARSE_ARGV 1 EMM "" "PLUGIN;TIMEOUT_S;OUTPUT_DIRECTORY;THREAD_SANITIZER"
                        "BACKEND;ARGS")
  set(_where "emm_add_certification_test(${name})")
  if(EMM_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${_where}: unexpected arguments '${EMM_UNPARSED_ARGUMENTS}' (expected "
                        "PLUGIN, BACKEND, TIMEOUT_S, OUTPUT_DIRECTORY, THREAD_SANITIZER, ARGS)")
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

  if(NOT DEFINED EMM_THREAD_SANITIZER)
    if(DEFINED EMM_CERTIFY_THREAD_SANITIZER)
      set(EMM_THREAD_SANITIZER ${EMM_CERTIFY_THREAD_SANITIZER})
    else()
      _emm_thread_sanitizer_supported(EMM_THREAD_SANITIZER)
    endif()
  elseif(EMM_THREAD_SANITIZER)
    _emm_thread_sanitizer_supported(_supported)
    if(NOT _supported)
      message(FATAL_ERROR "${_where}: THREAD_SANITIZER ON, but ${CMAKE_CXX_COMPILER} cannot build "
                          "and link with -fsanitize=thread on top of this project's flags (another "
                          "sanitizer in CMAKE_CXX_FLAGS?); leave THREAD_SANITIZER out or set it OFF")
    endif()
  endif()
  if(NOT EMM_THREAD_SANITIZER)
    return()
  endif()
  _emm_thread_sanitizer_copy(${EMM_PLUGIN} _tsan_plugin)
  set(_test ${name}.tsan)
  add_test(NAME ${_test}
           COMMAND "${CMAKE_COMMAND}"
                   "-DEMM_CERTIFY=${_certify}"
                   "-DEMM_PLUGIN=$<TARGET_FILE:${_tsan_plugin}>"
                   "-DEMM_BACKEND=fake"
                   "-DEMM_THREAD_SANITIZER=ON"
                   "-DEMM_REPORT_BASE=${EMM_OUTPUT_DIRECTORY}/${_test}"
                   "-DEMM_EXTRA_ARGS=${_extra}"
                   -P "${_script}")
  set_tests_properties(${_test} PROPERTIES LABELS certification-tsan)
endfunction()

# Whether the compiler builds and links with -fsanitize=thread on top of the project's flags
# (not where -fsanitize=address is on: the two cannot be combined). Checked once (cached).
function(_emm_thread_sanitizer_supported out)
  if(NOT DEFINED EMM_HAVE_THREAD_SANITIZER)
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
    set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
    check_cxx_source_compiles("int main() { return 0; }" EMM_HAVE_THREAD_SANITIZER)
  endif()
  if(EMM_HAVE_THREAD_SANITIZER)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# _emm_thread_sanitizer_copy(<target> <out> [DEPENDENCY]): <out> is `target` itself when it is
# not a target to copy (a flag, a path, an imported target, an interface library, and with
# DEPENDENCY a shared library); else the name of its ThreadSanitizer copy, made on first use:
# <target>_emm_tsan, from the same sources, compile settings and usage requirements, compiled
# with -fsanitize=thread, linking the copies of what it links.
function(_emm_thread_sanitizer_copy target out)
  set(${out} "${target}" PARENT_SCOPE)
  if(NOT TARGET "${target}")
    return()
  endif()
  get_target_property(_aliased ${target} ALIASED_TARGET)
  if(_aliased)
    set(target ${_aliased})
  endif()
  get_target_property(_imported ${target} IMPORTED)
  get_target_property(_type ${target} TYPE)
  # A shared library the plugin links is a library of its own, not the plugin's code.
  if(_imported OR NOT _type MATCHES "^(STATIC|OBJECT|SHARED|MODULE)_LIBRARY$" OR
     ("DEPENDENCY" IN_LIST ARGN AND _type MATCHES "^(SHARED|MODULE)_LIBRARY$"))
    return()
  endif()
  set(_copy ${target}_emm_tsan)
  set(${out} ${_copy} PARENT_SCOPE)
  if(TARGET ${_copy})
    return()
  endif()

  get_target_property(_source_dir ${target} SOURCE_DIR)
  get_target_property(_binary_dir ${target} BINARY_DIR)
  get_target_property(_sources ${target} SOURCES)
  set(_absolute)
  foreach(_source IN LISTS _sources)
    if(IS_ABSOLUTE "${_source}" OR _source MATCHES "^\\$<")
      list(APPEND _absolute "${_source}")
    elseif(EXISTS "${_source_dir}/${_source}")
      list(APPEND _absolute "${_source_dir}/${_source}")
    else()
      list(APPEND _absolute "${_binary_dir}/${_source}")  # generated
    endif()
  endforeach()
  string(REPLACE "_LIBRARY" "" _kind "${_type}")
  add_library(${_copy} ${_kind} ${_absolute})

  foreach(_property COMPILE_DEFINITIONS COMPILE_OPTIONS COMPILE_FEATURES INCLUDE_DIRECTORIES
                    LINK_OPTIONS LINK_DIRECTORIES CXX_STANDARD CXX_STANDARD_REQUIRED
                    CXX_EXTENSIONS CXX_VISIBILITY_PRESET VISIBILITY_INLINES_HIDDEN PREFIX SUFFIX
                    BUILD_RPATH LIBRARY_OUTPUT_DIRECTORY ARCHIVE_OUTPUT_DIRECTORY
                    INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                    INTERFACE_COMPILE_DEFINITIONS INTERFACE_COMPILE_OPTIONS
                    INTERFACE_COMPILE_FEATURES INTERFACE_LINK_OPTIONS
                    INTERFACE_LINK_DIRECTORIES)
    get_target_property(_value ${target} ${_property})
    if(NOT _value STREQUAL "_value-NOTFOUND")
      set_property(TARGET ${_copy} PROPERTY ${_property} "${_value}")
    endif()
  endforeach()
  # What it links, with this project's static and object libraries replaced by their copies.
  foreach(_property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(_items ${target} ${_property})
    if(_items STREQUAL "_items-NOTFOUND")
      continue()
    endif()
    set(_mapped)
    foreach(_item IN LISTS _items)
      if(_item MATCHES "^\\$<(LINK_ONLY|BUILD_INTERFACE):([^$<>]+)>$")
        _emm_thread_sanitizer_copy("${CMAKE_MATCH_2}" _dependency DEPENDENCY)
        list(APPEND _mapped "$<${CMAKE_MATCH_1}:${_dependency}>")
      else()
        _emm_thread_sanitizer_copy("${_item}" _dependency DEPENDENCY)
        list(APPEND _mapped "${_dependency}")
      endif()
    endforeach()
    set_property(TARGET ${_copy} PROPERTY ${_property} "${_mapped}")
  endforeach()
  get_target_property(_output_name ${target} OUTPUT_NAME)
  if(NOT _output_name)
    set(_output_name ${target})
  endif()
  set_target_properties(${_copy} PROPERTIES OUTPUT_NAME ${_output_name}_tsan
                                            POSITION_INDEPENDENT_CODE ON)
  # After the copied options, so that a -fno-sanitize=... among them does not turn it off. GCC
  # 12 warns that ThreadSanitizer does not model atomic_thread_fence (-Wtsan): not the plugin's
  # fault, and -Werror would make it one. -g in every build type: a race is reported with the
  # file and line of both accesses, in a Release build too.
  target_compile_options(${_copy} PRIVATE -fsanitize=thread -fno-omit-frame-pointer -g
                                          $<$<CXX_COMPILER_ID:GNU>:-Wno-tsan>)
  if(_kind MATCHES "^(SHARED|MODULE)$")
    # -Bsymbolic-functions: the library calls its own (instrumented) copies of inline library
    # code such as shared_ptr's reference counting, not emm-certify's uninstrumented ones, whose
    # synchronisation ThreadSanitizer cannot see (a false race).
    # A clang build names no runtime (clang links it into executables only); emm-certify then
    # preloads $EMM_TSAN_RUNTIME or GCC's libtsan (runner/thread_sanitizer.hpp).
    target_link_options(${_copy} PRIVATE -fsanitize=thread "LINKER:-Bsymbolic-functions")
  endif()
endfunction()
