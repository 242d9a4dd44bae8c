# Certifies the reference plugin on the fake backend with --html and --json, builds the index of
# that JSON report, and renders both pages in headless Chromium (html_render_check.py): every
# plugin clause has its row, and the screenshots are not blank.
include("${CLAUSE_IDS}")
string(REPLACE ";" "," clauses "${EMM_PLUGIN_CLAUSE_IDS}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND "${CERTIFY}" --plugin "${PLUGIN}" --backend fake
                        --html "${WORK}/certificate.html" --json "${WORK}/certificate.json"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "emm-certify exited ${rc}: ${err}")
endif()
execute_process(COMMAND "${CERTIFY}" report "${WORK}/certificate.json" --html "${WORK}/index.html"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "emm-certify report exited ${rc}: ${err}")
endif()
foreach(page certificate index)
  execute_process(COMMAND "${PYTHON}" "${CHECK}" --html "${WORK}/${page}.html"
                          --expect-clauses "${clauses}" --work "${WORK}/${page}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${page}: ${out}")
  if(rc EQUAL 77)
    message(STATUS "SKIP: ${out}")
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${page}.html: ${out}${err}")
  endif()
endforeach()
