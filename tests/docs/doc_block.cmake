# check_doc_block(DOC MARKER FRESH OUT HOW): the block of DOC between the
# line "<!-- BEGIN <MARKER>..." and "<!-- END <MARKER>" must be FRESH (both
# stripped); otherwise FRESH is written to OUT and the check fails, naming
# OUT and HOW (what produced it). One rule for every generated docs block.
function(check_doc_block DOC MARKER FRESH OUT HOW)
  file(READ ${DOC} doc)
  string(FIND "${doc}" "<!-- BEGIN ${MARKER}" begin)
  string(FIND "${doc}" "<!-- END ${MARKER}" end)
  if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
    message(FATAL_ERROR "${DOC}: the BEGIN/END ${MARKER} markers are missing")
  endif()
  math(EXPR len "${end} - ${begin}")
  string(SUBSTRING "${doc}" ${begin} ${len} block)
  # Drop the BEGIN marker's own line.
  string(FIND "${block}" "\n" eol)
  math(EXPR eol "${eol} + 1")
  string(SUBSTRING "${block}" ${eol} -1 block)
  string(STRIP "${block}" block)
  string(STRIP "${FRESH}" fresh)
  if(NOT block STREQUAL fresh)
    file(WRITE ${OUT} "${fresh}\n")
    message(FATAL_ERROR "${DOC} is stale: paste ${OUT} (${HOW}) between its ${MARKER} markers")
  endif()
  message(STATUS "${DOC} matches ${HOW}")
endfunction()
