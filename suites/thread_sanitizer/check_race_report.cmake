# emm-certify over the ThreadSanitizer builds of counter_plugin.cpp (suites/thread_sanitizer):
#  * the racy one: ALLOC-10 fails (exit status 1), its message names the data race in the plugin
#    library and quotes both stacks (the access and the previous one, each through
#    counter_plugin.cpp), in backend and in clause isolation, and also when TSAN_OPTIONS asks
#    ThreadSanitizer to end the process at the first report (halt_on_error=1): never a crash;
#  * the correct one: ALLOC-10 passes (exit status 3, PARTIAL) and no clause output holds a
#    report, so the kit itself raced nowhere a ThreadSanitizer runtime can see.
# Skipped (the marker line) when the runtime cannot be loaded on this machine.
#   -DCERTIFY=<emm-certify> -DRACY=<racy TSan library> -DCORRECT=<correct TSan library> -DWORK=<dir>
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(expect_contains what text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what} does not say '${needle}':\n${text}")
  endif()
endfunction()

# Runs emm-certify --only ALLOC-10 on `library`; sets <prefix>_rc, <prefix>_out (stdout and
# stderr) and <prefix>_json (the report).
function(certify prefix library)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${ARGN}
                          "${CERTIFY}" --plugin "${library}" --backend fake --only ALLOC-10
                          --json "${WORK}/${prefix}.json" --timeout-s 120
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(json "")
  if(EXISTS "${WORK}/${prefix}.json")
    file(READ "${WORK}/${prefix}.json" json)
  endif()
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_json "${json}" PARENT_SCOPE)
endfunction()

certify(correct "${CORRECT}")
if(correct_rc STREQUAL "2" AND correct_out MATCHES "could not load")
  message("EMMKIT-TEST-SKIPPED: the ThreadSanitizer build of the plugin cannot be loaded here "
          "(is the ThreadSanitizer runtime installed?):\n${correct_out}")
  return()
endif()
if(NOT correct_rc STREQUAL "3")
  message(FATAL_ERROR "the correct plugin under ThreadSanitizer: exit ${correct_rc}, expected 3 "
                      "(PARTIAL: ALLOC-10 passed)\n${correct_out}")
endif()
expect_contains("emm-certify's console" "${correct_out}"
                "ThreadSanitizer: the plugin is instrumented and the runtime is loaded")
string(JSON output ERROR_VARIABLE no_output GET "${correct_json}" results 0 output)
string(FIND "${output}" "ThreadSanitizer" at)  # no output at all: no report either
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the correct plugin's ALLOC-10 output holds a ThreadSanitizer report:\n"
                      "${output}")
endif()

get_filename_component(racy_file "${RACY}" NAME)
foreach(mode backend clause halt)
  set(arguments)
  set(environment)
  if(mode STREQUAL "clause")
    set(arguments --isolation clause)
  elseif(mode STREQUAL "halt")
    set(environment "TSAN_OPTIONS=halt_on_error=1")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${environment}
                          "${CERTIFY}" --plugin "${RACY}" --backend fake --only ALLOC-10
                          --json "${WORK}/racy.${mode}.json" --timeout-s 120 ${arguments}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc STREQUAL "1")
    message(FATAL_ERROR "the racy plugin (${mode}): exit ${rc}, expected 1 (NOT CERTIFIED)\n${out}")
  endif()
  file(READ "${WORK}/racy.${mode}.json" json)
  string(JSON clause GET "${json}" results 0 clause)
  string(JSON outcome GET "${json}" results 0 outcome)
  string(JSON message GET "${json}" results 0 message)
  if(NOT clause STREQUAL "ALLOC-10" OR NOT outcome STREQUAL "fail")
    message(FATAL_ERROR "the racy plugin (${mode}): ${clause} is ${outcome}, expected ALLOC-10 "
                        "fail:\n${message}")
  endif()
  expect_contains("ALLOC-10's message (${mode})" "${message}"
                  "[ALLOC-10] ThreadSanitizer found a data race in the plugin (${racy_file})")
  # Both stacks: the access, then the previous one, each running through the racy line.
  if(NOT message MATCHES "\n  (Read|Write) of size [0-9]+ at [^\n]* by thread T[0-9]+:\n    #0 [^\n]*counter_plugin\\.cpp:[0-9]+")
    message(FATAL_ERROR "ALLOC-10's message (${mode}) lacks the first stack:\n${message}")
  endif()
  if(NOT message MATCHES "\n  Previous (read|write) of size [0-9]+ at [^\n]* by thread T[0-9]+:\n    #0 [^\n]*counter_plugin\\.cpp:[0-9]+")
    message(FATAL_ERROR "ALLOC-10's message (${mode}) lacks the previous access's stack:\n"
                        "${message}")
  endif()
  expect_contains("ALLOC-10's message (${mode})" "${message}" "SUMMARY: ThreadSanitizer: data race")
endforeach()
message(STATUS "thread_sanitizer.race_report: the race fails ALLOC-10 with both stacks; the "
               "correct plugin has no report")
