# EmmCertificationTest.cmake — the cmake -P script behind each emm_add_certification_test test
# (EmmConformance.cmake): runs emm-certify on one backend, writes the reports and turns the
# result into a CTest outcome.
# Inputs (-D): EMM_CERTIFY EMM_PLUGIN EMM_BACKEND (fake|gpu) EMM_REPORT_BASE (path without
#              extension) EMM_EXTRA_ARGS ('|'-separated, may be empty) EMM_THREAD_SANITIZER (ON:
#              EMM_PLUGIN is the plugin's ThreadSanitizer build, certified on ALLOC-10 and LIFE-8)
# Outcome: exit 0 when emm-certify exits 0 (with EMM_THREAD_SANITIZER: 3, PARTIAL, both clauses
# passed); a failure (exit 1) with emm-certify's status explained otherwise; on the gpu backend,
# a line starting with the skip marker (the test's SKIP_REGULAR_EXPRESSION) when the machine has
# no usable GPU, unless EMMKIT_REQUIRE_GPU is set.
cmake_minimum_required(VERSION 3.25)

foreach(_required EMM_CERTIFY EMM_PLUGIN EMM_BACKEND EMM_REPORT_BASE)
  if(NOT DEFINED ${_required} OR "${${_required}}" STREQUAL "")
    message(FATAL_ERROR "EmmCertificationTest.cmake: -D${_required}=... is required")
  endif()
endforeach()

set(_marker "EMMKIT-CERTIFICATION-SKIPPED:")
set(_json "${EMM_REPORT_BASE}.json")
get_filename_component(_dir "${EMM_REPORT_BASE}" DIRECTORY)
file(MAKE_DIRECTORY "${_dir}")
# A report left by an earlier run must not be read as this run's.
foreach(_extension json xml md html)
  file(REMOVE "${EMM_REPORT_BASE}.${_extension}")
endforeach()
set(_extra "")
if(NOT "${EMM_EXTRA_ARGS}" STREQUAL "")
  string(REPLACE "|" ";" _extra "${EMM_EXTRA_ARGS}")
endif()
# The fake machine gets two devices unless ARGS says otherwise, so that the DEV clauses run
# (with one device they are not_supported, with a note).
if(EMM_THREAD_SANITIZER)
  # The clauses whose threads meet inside the plugin (the trait `threads` of catalogue.tsv; a test
  # of suites/conformance keeps this list equal to it);
  # emm-certify runs the instrumented library with ThreadSanitizer's runtime, and a race it
  # reports fails the clause that ran.
  list(PREPEND _extra --only ALLOC-10,LIFE-8)
elseif(EMM_BACKEND STREQUAL "fake" AND NOT "--devices" IN_LIST _extra)
  list(PREPEND _extra --devices 2)
endif()

execute_process(
  COMMAND "${EMM_CERTIFY}" --plugin "${EMM_PLUGIN}" --backend "${EMM_BACKEND}"
          --json "${_json}" --junit "${EMM_REPORT_BASE}.xml"
          --markdown "${EMM_REPORT_BASE}.md" --html "${EMM_REPORT_BASE}.html" ${_extra}
  RESULT_VARIABLE _status
  OUTPUT_VARIABLE _output
  ERROR_VARIABLE _output)
# The plugin's own text is in this output: it must not be able to skip the test.
string(REPLACE "${_marker}" "[plugin text] EMMKIT-CERTIFICATION-SKIPPED" _output "${_output}")
message("${_output}")

if(_status STREQUAL "0")
  message("emm_add_certification_test: CERTIFIED on the ${EMM_BACKEND} backend; reports: "
          "${EMM_REPORT_BASE}.{xml,json,md,html}")
  return()
endif()
if(EMM_THREAD_SANITIZER AND _status STREQUAL "3")
  message("emm_add_certification_test: ALLOC-10 and LIFE-8 passed under ThreadSanitizer: no "
          "race was reported while their threads allocated and released; reports: "
          "${EMM_REPORT_BASE}.{xml,json,md,html}")
  return()
endif()

# Did the backend run at all? The JSON report says, with the reason when it did not.
set(_ran "")
set(_reason "")
if(EXISTS "${_json}")
  file(READ "${_json}" _report)
  string(JSON _count ERROR_VARIABLE _json_error LENGTH "${_report}" backends)
  if(NOT _json_error AND _count GREATER 0)
    math(EXPR _last "${_count} - 1")
    foreach(_index RANGE ${_last})
      string(JSON _name ERROR_VARIABLE _json_error GET "${_report}" backends ${_index} name)
      if(_name STREQUAL EMM_BACKEND)
        string(JSON _ran ERROR_VARIABLE _json_error GET "${_report}" backends ${_index} ran)
        string(JSON _reason ERROR_VARIABLE _json_error GET "${_report}" backends ${_index} reason)
      endif()
    endforeach()
  endif()
endif()

if(EMM_BACKEND STREQUAL "gpu" AND _ran STREQUAL "OFF")
  if("$ENV{EMMKIT_REQUIRE_GPU}" MATCHES "^(1|ON|on|TRUE|true|YES|yes)$")
    message("emm_add_certification_test: the gpu backend did not run (${_reason}) and "
            "EMMKIT_REQUIRE_GPU is set: this runner was expected to have a GPU. Check the NVIDIA "
            "driver (nvidia-smi), or unset EMMKIT_REQUIRE_GPU on GPU-less runners.")
    message(FATAL_ERROR "emm_add_certification_test: no GPU where one is required")
  endif()
  message("${_marker} the gpu backend did not run (${_reason}); nothing was certified on it. "
          "Set EMMKIT_REQUIRE_GPU=1 where a GPU must be present.")
  return()
endif()

if(EMM_THREAD_SANITIZER AND _status STREQUAL "1")
  string(CONCAT _meaning "a clause failed on the ThreadSanitizer build of the plugin (a data race "
               "ThreadSanitizer reported, with both stacks, or what the clause saw itself: see "
               "emm-certify's message above)")
elseif(EMM_THREAD_SANITIZER AND _status STREQUAL "2")
  string(CONCAT _meaning "the ThreadSanitizer build of the plugin could not be loaded (is the "
               "ThreadSanitizer runtime it names installed? see emm-certify's message above)")
elseif(_status STREQUAL "1")
  string(CONCAT _meaning "NOT CERTIFIED: a MUST clause failed, crashed or timed out, or the backend did "
               "not run")
  if(_ran STREQUAL "OFF")
    string(APPEND _meaning " (it did not: ${_reason})")
  endif()
elseif(_status STREQUAL "2")
  string(CONCAT _meaning "a usage error, a report that could not be written, or a plugin that could not "
               "be loaded (see emm-certify's message above)")
elseif(_status STREQUAL "3")
  string(CONCAT _meaning "PARTIAL: only some clauses ran (an --only in ARGS); a partial run is never a "
               "certificate")
else()
  set(_meaning "emm-certify itself failed")
endif()
# One unwrapped line (CI logs and CTest's PASS/FAIL expressions read it), then the failure.
message("emm_add_certification_test: emm-certify exited with status ${_status} on the "
        "${EMM_BACKEND} backend: ${_meaning}. Reports: ${EMM_REPORT_BASE}.{xml,json,md,html}")
if(EMM_THREAD_SANITIZER)
  message(FATAL_ERROR "emm_add_certification_test: not passed under ThreadSanitizer")
endif()
message(FATAL_ERROR "emm_add_certification_test: not certified on the ${EMM_BACKEND} backend")
