# A docs page block between "<!-- BEGIN <MARKER>" and "<!-- END <MARKER>"
# holds what `agentperf <ARGS> --markdown FILE` writes. Regenerates it and
# fails when the page is stale, writing the fresh block to OUT to paste.
#   -DAGENTPERF=<binary> -DSOURCE_DIR=<tree> -DARGS=<;-list> -DMARKER=<text>
#   -DDOC=<page> -DOUT=<fresh file>
execute_process(COMMAND ${AGENTPERF} ${ARGS} --markdown ${OUT}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "agentperf ${ARGS} failed (${rc}): ${err}")
endif()
file(READ ${OUT} fresh)
file(READ ${DOC} doc)
string(FIND "${doc}" "<!-- BEGIN ${MARKER}" begin)
string(FIND "${doc}" "<!-- END ${MARKER}" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${DOC}: the BEGIN/END ${MARKER} markers are missing")
endif()
math(EXPR len "${end} - ${begin}")
string(SUBSTRING "${doc}" ${begin} ${len} block)
string(FIND "${block}" "\n" eol)
math(EXPR eol "${eol} + 1")
string(SUBSTRING "${block}" ${eol} -1 block)
string(STRIP "${block}" block)
string(STRIP "${fresh}" fresh)
if(NOT block STREQUAL fresh)
  message(FATAL_ERROR "${DOC} is stale: paste ${OUT} (agentperf ${ARGS} --markdown) between its ${MARKER} markers")
endif()
message(STATUS "${DOC} matches agentperf ${ARGS}")
