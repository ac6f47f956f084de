# docs/prediction.md's cliff table is `agentperf results list` of a dry-run
# sweep of RECIPE (every point, no adaptive search). Re-runs it and fails
# when the page's block (between "<!-- BEGIN <MARKER>" and "<!-- END
# <MARKER>") is not what the commands print today; the fresh block goes to OUT.
#   -DAGENTPERF -DSOURCE_DIR -DRECIPE -DWORK -DMARKER -DDOC -DOUT
include(${CMAKE_CURRENT_LIST_DIR}/doc_block.cmake)
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${AGENTPERF} sweep ${RECIPE} --dry-run --no-adaptive -q -o ${WORK}
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf sweep ${RECIPE} --dry-run failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${AGENTPERF} results list --store ${WORK}/sweep.sqlite
  OUTPUT_VARIABLE fresh ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf results list failed (${rc}): ${err}")
endif()
string(STRIP "${fresh}" fresh)
check_doc_block(${DOC} "${MARKER}" "```\n${fresh}\n```" ${OUT} "agentperf sweep ${RECIPE} --dry-run; results list")
