# Runs COMMAND (a ;-list) with ENV_PYTHONPATH and ENV_CERTIFY set; its exit status must be
# EXPECT_STATUS and its output must contain each of EXPECT (a ;-list).
set(ENV{PYTHONPATH} "${ENV_PYTHONPATH}")
set(ENV{EMMKIT_CERTIFY} "${ENV_CERTIFY}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "${COMMAND}: exit status ${status}, expected ${EXPECT_STATUS}\n${out}\n${err}")
endif()
foreach(piece IN LISTS EXPECT)
  string(FIND "${out}${err}" "${piece}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${COMMAND}: the output lacks '${piece}'\n${out}\n${err}")
  endif()
endforeach()
