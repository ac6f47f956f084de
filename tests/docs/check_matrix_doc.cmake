# docs/inferencex-matrix.md holds `agentperf recipe matrix` output over the
# master-config copies between two markers. Regenerates it and fails when the
# page is stale: a spec, the mapping table or the memory plan changed the
# numbers without the page following.
execute_process(COMMAND ${AGENTPERF} recipe matrix ${NVIDIA} ${AMD}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE fresh ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf recipe matrix failed (${rc}): ${err}")
endif()
file(READ ${DOC} doc)
string(FIND "${doc}" "<!-- BEGIN agentperf recipe matrix" begin)
string(FIND "${doc}" "<!-- END agentperf recipe matrix" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${DOC}: the BEGIN/END agentperf recipe matrix markers are missing")
endif()
math(EXPR len "${end} - ${begin}")
string(SUBSTRING "${doc}" ${begin} ${len} block)
# Drop the BEGIN marker's own line.
string(FIND "${block}" "\n" eol)
math(EXPR eol "${eol} + 1")
string(SUBSTRING "${block}" ${eol} -1 block)
string(STRIP "${block}" block)
string(STRIP "${fresh}" fresh)
if(NOT block STREQUAL fresh)
  file(WRITE ${OUT} "${fresh}\n")
  message(FATAL_ERROR "${DOC} is stale: paste ${OUT} (agentperf recipe matrix output) between its markers")
endif()
message(STATUS "docs/inferencex-matrix.md matches agentperf recipe matrix")
