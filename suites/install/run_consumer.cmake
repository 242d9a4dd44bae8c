# cmake -P script behind the install_consumer test (see CMakeLists.txt beside it): install, then
# configure, build and run the consumer project (consumer/) against the scratch prefix.
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

# The outer build's own prefixes go through the environment (':'-separated), searched after
# CMAKE_PREFIX_PATH, so the scratch prefix comes first.
if(EXTRA_PREFIX_PATH)
  string(REPLACE "|" ":" _extra "${EXTRA_PREFIX_PATH}")
  if(DEFINED ENV{CMAKE_PREFIX_PATH} AND NOT "$ENV{CMAKE_PREFIX_PATH}" STREQUAL "")
    set(_extra "${_extra}:$ENV{CMAKE_PREFIX_PATH}")
  endif()
  set(ENV{CMAKE_PREFIX_PATH} "${_extra}")
endif()

set(_configure "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${_prefix}"
    "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"
    "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
if(BUILD_TYPE)
  string(TOUPPER "${BUILD_TYPE}" _config)
  list(APPEND _configure "-DCMAKE_CXX_FLAGS_${_config}=${CXX_FLAGS_CONFIG}")
endif()
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(CUDA_ROOT)
  list(APPEND _configure "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
endif()
run_step(configure ${_configure})

# The package must come from the scratch prefix, not from a copy installed elsewhere.
file(STRINGS "${_build}/CMakeCache.txt" _emmkit_dir REGEX "^emmkit_DIR:")
string(REGEX REPLACE "^emmkit_DIR:[A-Z]+=" "" _emmkit_dir "${_emmkit_dir}")
file(REAL_PATH "${_prefix}" _real_prefix)
file(REAL_PATH "${_emmkit_dir}" _real_emmkit_dir)
string(FIND "${_real_emmkit_dir}" "${_real_prefix}/" _at)
if(NOT _at EQUAL 0)
  message(FATAL_ERROR "install_consumer: emmkit was found at '${_emmkit_dir}', "
                      "not in the scratch prefix '${_prefix}'")
endif()

run_step(build "${CMAKE_COMMAND}" --build "${_build}")
include("${_build}/consumer_paths.cmake")

# 1. The reference system over the installed fake driver.
run_step(run "${_build}/emmkit_consumer")
# 2. The installed conformance suite over the consumer's plugin type (GPU cases skip without one).
run_step(conformance "${CONSUMER_CONFORMANCE}" --gtest_brief=1)
if(CONSUMER_BOOST_CONFORMANCE)
  run_step(boost_conformance "${CONSUMER_BOOST_CONFORMANCE}" --report_level=short)
endif()
# 3. The installed emm-certify over the consumer's plugin library, on the fake driver.
run_step(certify "${EMM_CERTIFY}" --plugin "${CONSUMER_PLUGIN}" --backend fake
         --json "${WORK_DIR}/certificate.json")
file(READ "${WORK_DIR}/certificate.json" _report)
string(JSON _verdict GET "${_report}" verdict)
if(NOT _verdict STREQUAL "CERTIFIED")
  message(FATAL_ERROR "install_consumer: emm-certify's report says '${_verdict}'")
endif()
message(STATUS "install_consumer: OK (the consumer ran, its conformance suite passed, "
               "emm-certify: ${_verdict})")
