# docs/prediction.md's cliff table is `agentperf results list` of a dry-run
# sweep of RECIPE (every point, no adaptive search). Re-runs it and fails
# when the page's block (between "<!-- BEGIN <MARKER>" and "<!-- END
# <MARKER>") is not what the commands print today; the fresh block goes to OUT.
#   -DAGENTPERF -DSOURCE_DIR -DRECIPE -DWORK -DMARKER -DDOC -DOUT
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
file(WRITE ${OUT} "```\n${fresh}\n```\n")
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
  message(FATAL_ERROR "${DOC} is stale: paste ${OUT} between its ${MARKER} markers")
endif()
message(STATUS "${DOC} matches the dry-run sweep of ${RECIPE}")
