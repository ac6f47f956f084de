# docs/inferencex-matrix.md holds `agentperf recipe matrix` output over the
# master-config copies between two markers. Regenerates it and fails when the
# page is stale: a spec, the mapping table or the memory plan changed the
# numbers without the page following.
include(${CMAKE_CURRENT_LIST_DIR}/doc_block.cmake)
execute_process(COMMAND ${AGENTPERF} recipe matrix ${NVIDIA} ${AMD}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE fresh ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf recipe matrix failed (${rc}): ${err}")
endif()
check_doc_block(${DOC} "agentperf recipe matrix" "${fresh}" ${OUT} "agentperf recipe matrix output")
