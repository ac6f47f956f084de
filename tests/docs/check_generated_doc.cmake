# A docs page block between "<!-- BEGIN <MARKER>" and "<!-- END <MARKER>"
# holds what `agentperf <ARGS> --markdown FILE` writes. Regenerates it and
# fails when the page is stale, writing the fresh block to OUT to paste.
#   -DAGENTPERF=<binary> -DSOURCE_DIR=<tree> -DARGS=<;-list> -DMARKER=<text>
#   -DDOC=<page> -DOUT=<fresh file>
include(${CMAKE_CURRENT_LIST_DIR}/doc_block.cmake)
execute_process(COMMAND ${AGENTPERF} ${ARGS} --markdown ${OUT}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
# Exit 1 is a validation over a --check limit: the tables are still written.
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "agentperf ${ARGS} failed (${rc}): ${err}")
endif()
file(READ ${OUT} fresh)
check_doc_block(${DOC} "${MARKER}" "${fresh}" ${OUT} "agentperf ${ARGS} --markdown")
