# A docs page block between "<!-- BEGIN <MARKER>" and "<!-- END <MARKER>"
# quotes, in a ``` fence, the console lines of `agentperf <ARGS>` that match
# LINES (a regex). Re-runs the command and fails when the page is stale,
# writing the fresh block to OUT to paste.
#   -DAGENTPERF=<binary> -DSOURCE_DIR=<tree> -DARGS=<;-list> -DLINES=<regex>
#   -DMARKER=<text> -DDOC=<page> -DOUT=<fresh file>
include(${CMAKE_CURRENT_LIST_DIR}/doc_block.cmake)
execute_process(COMMAND ${AGENTPERF} ${ARGS}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
  message(FATAL_ERROR "agentperf ${ARGS} failed (${rc}): ${err}")
endif()
string(REPLACE ";" "\\;" out "${out}")
string(REPLACE "\n" ";" out_lines "${out}")
set(kept "")
foreach(line IN LISTS out_lines)
  if(line MATCHES "${LINES}")
    string(APPEND kept "${line}\n")
  endif()
endforeach()
if(kept STREQUAL "")
  message(FATAL_ERROR "agentperf ${ARGS} printed no line matching ${LINES}")
endif()
check_doc_block(${DOC} "${MARKER}" "```\n${kept}```" ${OUT} "agentperf ${ARGS}, lines matching ${LINES}")
