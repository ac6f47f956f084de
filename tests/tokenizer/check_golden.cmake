# Regenerates the golden encodings with the reference JS tokenizer and fails
# if they differ from the committed file.
execute_process(COMMAND ${NODE} ${SCRIPT} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "node ${SCRIPT} failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${GOLDEN} RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "${GOLDEN} is stale: the reference tokenizer now gives ${OUT}")
endif()
message(STATUS "golden encodings match the reference tokenizer")
