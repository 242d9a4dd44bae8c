# cmake -P script behind the install_consumer test (see CMakeLists.txt beside it): install, then
# configure, build and run the consumer project (consumer/) against the scratch prefix, twice:
#   core   find_package(emmkit) without components while GoogleTest and Boost cannot be found
#          (CMAKE_DISABLE_FIND_PACKAGE_*): the program runs and `ctest -L certification`
#          certifies the plugin through emm_add_certification_test;
#   gtest  COMPONENTS gtest (OPTIONAL_COMPONENTS boost): the same, plus the conformance suites
#          and the installed emm-certify run by hand;
# and once more, expecting failure: COMPONENTS gtest while GoogleTest cannot be found must stop
# at find_package with the message that says what to install.
# Inputs (-D): EMMKIT_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR MAKE_PROGRAM CXX_COMPILER
#              BUILD_TYPE CXX_FLAGS CXX_FLAGS_CONFIG EXE_LINKER_FLAGS EXTRA_PREFIX_PATH ('|'-separated) CUDA_ROOT
cmake_minimum_required(VERSION 3.25)

foreach(_required EMMKIT_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR)
  if(NOT DEFINED ${_required} OR "${${_required}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${_required}=... is required")
  endif()
endforeach()

set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step name)
  list(JOIN ARGN " " _shown)
  message(STATUS "install_consumer: ${name}: ${_shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: step '${name}' failed (${_rc})")
  endif()
endfunction()

run_step(install "${CMAKE_COMMAND}" --install "${EMMKIT_BUILD_DIR}" --prefix "${_prefix}")

# Only the headers a plugin or test author includes are installed (conformance/include/); the
# kit's own (conformance/src/include/: the process layer, the scheduler, the report writers) are
# not, and the consumer below compiles from what is.
file(GLOB _private_headers RELATIVE "${CMAKE_CURRENT_LIST_DIR}/../../conformance/src/include"
     "${CMAKE_CURRENT_LIST_DIR}/../../conformance/src/include/emm/conformance/*.hpp")
if(NOT _private_headers)
  message(FATAL_ERROR "install_consumer: no private headers found under conformance/src/include")
endif()
foreach(_header IN LISTS _private_headers)
  file(GLOB_RECURSE _installed "${_prefix}/*/${_header}")
  if(_installed)
    message(FATAL_ERROR "install_consumer: the private header ${_header} was installed: "
                        "${_installed}")
  endif()
endforeach()

# The outer build's own prefixes go through the environment (':'-separated), searched after
# CMAKE_PREFIX_PATH, so the scratch prefix comes first.
if(EXTRA_PREFIX_PATH)
  string(REPLACE "|" ":" _extra "${EXTRA_PREFIX_PATH}")
  if(DEFINED ENV{CMAKE_PREFIX_PATH} AND NOT "$ENV{CMAKE_PREFIX_PATH}" STREQUAL "")
    set(_extra "${_extra}:$ENV{CMAKE_PREFIX_PATH}")
  endif()
  set(ENV{CMAKE_PREFIX_PATH} "${_extra}")
endif()

set(_configure_common -S "${CONSUMER_SOURCE_DIR}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${_prefix}"
    "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"
    "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    "-DCMAKE_SHARED_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    "-DCMAKE_MODULE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
if(BUILD_TYPE)
  string(TOUPPER "${BUILD_TYPE}" _config)
  list(APPEND _configure_common "-DCMAKE_CXX_FLAGS_${_config}=${CXX_FLAGS_CONFIG}")
endif()
if(MAKE_PROGRAM)
  list(APPEND _configure_common "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND _configure_common "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(CUDA_ROOT)
  list(APPEND _configure_common "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
endif()
get_filename_component(_ctest "${CMAKE_COMMAND}" DIRECTORY)
set(_ctest "${_ctest}/ctest")
set(_no_test_frameworks -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)

# The package must come from the scratch prefix, not from a copy installed elsewhere.
function(check_package_location build)
  file(STRINGS "${build}/CMakeCache.txt" _emmkit_dir REGEX "^emmkit_DIR:")
  string(REGEX REPLACE "^emmkit_DIR:[A-Z]+=" "" _emmkit_dir "${_emmkit_dir}")
  file(REAL_PATH "${_prefix}" _real_prefix)
  file(REAL_PATH "${_emmkit_dir}" _real_emmkit_dir)
  string(FIND "${_real_emmkit_dir}" "${_real_prefix}/" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "install_consumer: emmkit was found at '${_emmkit_dir}', "
                        "not in the scratch prefix '${_prefix}'")
  endif()
endfunction()

# certify_certified STEP JSON SUBJECT_OPTION PATH: the installed emm-certify (EMM_CERTIFY unless
# CERTIFY is set) on the fake backend must certify the subject; sets `verdict` in the caller.
function(certify_certified step json option path)
  if(NOT CERTIFY)
    set(CERTIFY "${EMM_CERTIFY}")
  endif()
  run_step(${step} "${CERTIFY}" ${option} "${path}" --backend fake --json "${json}")
  file(READ "${json}" _report)
  string(JSON _verdict GET "${_report}" verdict)
  if(NOT _verdict MATCHES "^CERTIFIED")
    message(FATAL_ERROR "install_consumer: ${step}: emm-certify's report says '${_verdict}'")
  endif()
  set(verdict "${_verdict}" PARENT_SCOPE)
endfunction()

# ctest over the consumer's certification tests: consumer.fake must pass, consumer.gpu must
# pass on a GPU and be reported skipped without one.
function(run_certification_tests flavour build)
  run_step(${flavour}_certification "${_ctest}" --test-dir "${build}"
           -L certification --output-on-failure)
  foreach(_backend fake gpu)
    if(NOT EXISTS "${build}/certificates/consumer.${_backend}.xml")
      message(FATAL_ERROR "install_consumer: ${flavour}: emm_add_certification_test wrote no "
                          "JUnit report ${build}/certificates/consumer.${_backend}.xml")
    endif()
  endforeach()
endfunction()

# --- core: no components, no test framework findable ----------------------------------------
set(_build_core "${WORK_DIR}/build-core")
run_step(core_configure "${CMAKE_COMMAND}" -B "${_build_core}" ${_configure_common}
         -DCONSUMER_FLAVOUR=core ${_no_test_frameworks})
check_package_location("${_build_core}")
run_step(core_build "${CMAKE_COMMAND}" --build "${_build_core}")
run_step(core_run "${_build_core}/emmkit_consumer")
run_certification_tests(core "${_build_core}")

# --- COMPONENTS nep49 alone: a NEP 49 handler's project, with no CUDA Toolkit findable --------
set(_build_nep49 "${WORK_DIR}/build-nep49")
set(_configure_nep49 ${_configure_common})
list(TRANSFORM _configure_nep49 REPLACE "^${CONSUMER_SOURCE_DIR}$"
     "${CONSUMER_SOURCE_DIR}/../nep49_consumer")
run_step(nep49_configure "${CMAKE_COMMAND}" -B "${_build_nep49}" ${_configure_nep49}
         ${_no_test_frameworks} -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
         -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DCMAKE_DISABLE_FIND_PACKAGE_Threads=ON)
check_package_location("${_build_nep49}")
run_step(nep49_build "${CMAKE_COMMAND}" --build "${_build_nep49}")
include("${_build_nep49}/nep49_paths.cmake")
# Under a sanitizer build the handler is built, not certified: NEP 49 certification loads
# CPython through the NumPy bridge, which is not instrumented and never finalized (its leaks and
# races are not the handler's; the NEP 49 zoo is left out of those builds for the same reason).
set(verdict "built, not certified (a sanitizer build)")
if(NOT CXX_FLAGS MATCHES "-fsanitize=")
  set(CERTIFY "${NEP49_CERTIFY}")
  certify_certified(nep49_certify "${WORK_DIR}/nep49_certificate.json" --nep49-library
                    "${CONSUMER_HANDLER}")
  unset(CERTIFY)
endif()
message(STATUS "install_consumer: COMPONENTS nep49 without the CUDA Toolkit: the handler "
               "${verdict}")

# --- COMPONENTS gtest without GoogleTest: find_package must say what is missing -------------
execute_process(COMMAND "${CMAKE_COMMAND}" -B "${WORK_DIR}/build-no-gtest" ${_configure_common}
                        -DCONSUMER_FLAVOUR=gtest ${_no_test_frameworks}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(_rc EQUAL 0 OR NOT _out MATCHES "component gtest needs GoogleTest")
  message(FATAL_ERROR "install_consumer: COMPONENTS gtest without GoogleTest should fail "
                      "find_package with 'component gtest needs GoogleTest...'; got status "
                      "${_rc}:\n${_out}")
endif()
message(STATUS "install_consumer: COMPONENTS gtest without GoogleTest fails as it should")

# --- gtest: the conformance suites too ------------------------------------------------------
run_step(configure "${CMAKE_COMMAND}" -B "${_build}" ${_configure_common} -DCONSUMER_FLAVOUR=gtest)
check_package_location("${_build}")
run_step(build "${CMAKE_COMMAND}" --build "${_build}")
include("${_build}/consumer_paths.cmake")

# 1. The reference system over the installed fake driver.
run_step(run "${_build}/emmkit_consumer")
# 2. The installed conformance suite over the consumer's plugin type (GPU cases skip without one).
run_step(conformance "${CONSUMER_CONFORMANCE}" --gtest_brief=1)
if(CONSUMER_BOOST_CONFORMANCE)
  run_step(boost_conformance "${CONSUMER_BOOST_CONFORMANCE}" --report_level=short)
endif()
# 3. The installed emm-certify over the consumer's plugin library, on the fake driver, by hand
#    and through emm_add_certification_test.
certify_certified(certify "${WORK_DIR}/certificate.json" --plugin "${CONSUMER_PLUGIN}")
set(_verdict "${verdict}")
# 4. A plugin in the 0.1 export form, built against this install: it loads and is certified, and
#    the defer_cleanup text it gave inside Capabilities reaches the certificate.
run_step(certify_0_1_form "${EMM_CERTIFY}" --plugin "${CONSUMER_PLUGIN_0_1_FORM}" --backend fake
         --json "${WORK_DIR}/certificate_0_1_form.json")
file(READ "${WORK_DIR}/certificate_0_1_form.json" _report)
string(JSON _verdict_0_1 GET "${_report}" verdict)
string(JSON _text_0_1 GET "${_report}" plugin capabilities defer_cleanup_behaviour)
if(NOT _verdict_0_1 MATCHES "^CERTIFIED" OR NOT _text_0_1 MATCHES "0\\.1 form")
  message(FATAL_ERROR "install_consumer: the 0.1-form plugin: verdict '${_verdict_0_1}', "
                      "defer_cleanup text '${_text_0_1}'")
endif()
run_certification_tests(gtest "${_build}")
message(STATUS "install_consumer: OK (without components: the consumer ran and was certified "
               "by CTest; with gtest: its conformance suite passed, emm-certify: ${_verdict})")
