# One emm-certify --python run: the exit status and a piece of its output must be as expected.
#   cmake -DCERTIFY=... -DMODULES=... -DTARGET=M:A -DEXPECT_STATUS=2 -DEXPECT="text"
#         [-DEXTRA="--capabilities;ipc"] -P certify_python.cmake
set(ENV{PYTHONPATH} "${MODULES}")
execute_process(COMMAND "${CERTIFY}" --python "${TARGET}" ${EXTRA} --timeout-s 120
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status STREQUAL "${EXPECT_STATUS}")
  message(FATAL_ERROR "emm-certify --python ${TARGET}: exit status ${status}, expected "
                      "${EXPECT_STATUS}\nstdout:\n${out}\nstderr:\n${err}")
endif()
string(FIND "${out}${err}" "${EXPECT}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "emm-certify --python ${TARGET}: the output does not contain\n  ${EXPECT}\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
