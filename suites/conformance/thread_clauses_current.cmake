# The clauses cmake/EmmCertificationTest.cmake certifies a ThreadSanitizer build on (its
# `--only` list) must be the plugin clauses with the catalogue's trait `threads`
# (EMM_THREAD_CLAUSE_IDS, generated from conformance/catalogue.tsv by the build).
include("${CLAUSE_IDS}")
if(NOT EMM_THREAD_CLAUSE_IDS)
  message(FATAL_ERROR "no plugin clause has the trait threads in ${CLAUSE_IDS}")
endif()
set(wanted_list ${EMM_THREAD_CLAUSE_IDS})
list(SORT wanted_list)
string(REPLACE ";" "," wanted "${wanted_list}")
file(READ "${SCRIPT}" text)
if(NOT text MATCHES "list\\(PREPEND _extra --only ([A-Z0-9,-]+)\\)")
  message(FATAL_ERROR "${SCRIPT}: no `list(PREPEND _extra --only ...)` line found")
endif()
string(REPLACE "," ";" given_list "${CMAKE_MATCH_1}")
list(SORT given_list)
string(REPLACE ";" "," given "${given_list}")
if(NOT given STREQUAL wanted)
  message(FATAL_ERROR "${SCRIPT} certifies a ThreadSanitizer build on --only ${given}, "
                      "but the catalogue's clauses with the trait threads are ${wanted}: make "
                      "the two agree")
endif()
message(STATUS "the ThreadSanitizer run certifies ${wanted}, the catalogue's thread clauses")
