# A plugin built with AddressSanitizer (sanitizer_plugin.cpp):
#  * certified by an emm-certify without the sanitizer runtime, the runtime ends the process that
#    loads it: "could not load" — exit status 2, the runtime's words and the kit's hint on stderr
#    and in the JSON report, every clause not_run — never exit status 1, in every isolation mode;
#  * with the runtime preloaded (docs/troubleshooting.md, "Sanitizer builds") it is certified.
#   -DCERTIFY=<emm-certify> -DPLUGIN=<libsanitizer_plugin.so> -DRUNTIME=<libasan.so> -DWORK=<dir>
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(expect_contains what text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what} does not say '${needle}':\n${text}")
  endif()
endfunction()

# --in-process too: the library is loaded in a child before emm-certify loads it itself.
foreach(isolation backend clause in-process)
  if(isolation STREQUAL "in-process")
    set(mode --in-process)
  else()
    set(mode --isolation ${isolation})
  endif()
  execute_process(COMMAND "${CERTIFY}" --plugin "${PLUGIN}" --backend fake ${mode}
                          --json "${WORK}/${isolation}.json" --timeout-s 60
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "2")
    message(FATAL_ERROR "--isolation ${isolation}: exit ${rc}, expected 2 (could not load)\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  foreach(needle "could not load the plugin" "ASan runtime does not come first"
                 "a plugin built with a sanitizer: preload its runtime")
    expect_contains("stderr (--isolation ${isolation})" "${err}" "${needle}")
  endforeach()
  file(READ "${WORK}/${isolation}.json" json)
  string(JSON verdict GET "${json}" verdict)
  string(JSON cause GET "${json}" load_failure)
  string(JSON results LENGTH "${json}" results)
  math(EXPR last "${results} - 1")
  foreach(i RANGE ${last})
    string(JSON outcome GET "${json}" results ${i} outcome)
    if(NOT outcome STREQUAL "not_run")
      message(FATAL_ERROR "--isolation ${isolation}: result ${i} is ${outcome}, expected not_run")
    endif()
  endforeach()
  if(NOT verdict STREQUAL "NOT CERTIFIED" OR results EQUAL 0)
    message(FATAL_ERROR "--isolation ${isolation}: verdict '${verdict}' over ${results} results")
  endif()
  expect_contains("the JSON report's load_failure" "${cause}" "ASan runtime does not come first")
endforeach()

# The recipe of the troubleshooting guide: the runtime preloaded, no memory limit needed.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env "LD_PRELOAD=${RUNTIME}"
                        "${CERTIFY}" --plugin "${PLUGIN}" --backend fake --only REG-1,ALLOC-1,FIN-1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "3")
  message(FATAL_ERROR "with LD_PRELOAD=${RUNTIME}: exit ${rc}, expected 3 (PARTIAL: the three "
                      "clauses pass)\nstdout:\n${out}\nstderr:\n${err}")
endif()
expect_contains("stdout with the runtime preloaded" "${out}" "VERDICT: PARTIAL (3 of ")
