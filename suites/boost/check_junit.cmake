# Runs the Boost.Test conformance binary with Boost's JUnit logger and checks the report: one
# <testcase> per plugin clause and backend, no failure or error; the gpu cases are <skipped>
# exactly when the run found no GPU, and on a machine with one GPU its DEV cases too (they need
# two devices; the fake has two in-process). The plugin clauses come from CLAUSE_IDS (generated
# from the catalogue).
include("${CLAUSE_IDS}")
list(LENGTH EMM_PLUGIN_CLAUSE_IDS plugin_clauses)
set(device_clauses ${EMM_PLUGIN_CLAUSE_IDS})
list(FILTER device_clauses INCLUDE REGEX "^DEV-")
list(LENGTH device_clauses device_clause_count)
math(EXPR expected_cases "${plugin_clauses} * 2")
execute_process(COMMAND "${BINARY}" "--logger=JUNIT,all,${REPORT}" --report_level=no
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} exited ${rc}\n${out}\n${err}")
endif()
file(READ "${REPORT}" junit)
string(REGEX MATCHALL "<testcase " cases "${junit}")
list(LENGTH cases count)
if(NOT count EQUAL expected_cases)
  message(FATAL_ERROR "expected ${expected_cases} testcases in the JUnit report, found ${count}")
endif()
if(NOT junit MATCHES "failures=\"0\"" OR NOT junit MATCHES "errors=\"0\"")
  message(FATAL_ERROR "the JUnit report has failures or errors:\n${junit}")
endif()
string(REGEX MATCHALL "<skipped/>" skipped "${junit}")
list(LENGTH skipped skipped_count)
if(junit MATCHES "no GPU: ")
  if(NOT skipped_count EQUAL plugin_clauses)
    message(FATAL_ERROR "without a GPU the ${plugin_clauses} gpu cases must be <skipped>, found "
                        "${skipped_count}")
  endif()
elseif(NOT skipped_count EQUAL 0 AND NOT skipped_count EQUAL device_clause_count)
  message(FATAL_ERROR "with a GPU no case may be skipped but the ${device_clause_count} DEV cases "
                      "of a one-GPU machine, found ${skipped_count}")
endif()
