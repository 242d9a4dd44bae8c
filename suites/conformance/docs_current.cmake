# Fails when docs/clauses.md differs from what emm_render_clauses makes of the catalogue.
execute_process(COMMAND "${RENDER}" "${WORK}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "emm_render_clauses failed (${rc})")
endif()
file(READ "${WORK}" rendered)
if(NOT EXISTS "${DOC}")
  message(FATAL_ERROR "${DOC} is missing; build the emm_clauses_doc target and commit it")
endif()
file(READ "${DOC}" committed)
if(NOT rendered STREQUAL committed)
  message(FATAL_ERROR "${DOC} is out of date with conformance/catalogue.tsv; build the "
                      "emm_clauses_doc target and commit the result")
endif()
