// One profile_export.jsonl line per request, written straight into a string.
//
// This is the one definition of a record line's shape (AIPerf's
// profile_export.jsonl: {"metadata": {...}, "metrics": {tag: {value, unit}},
// "error": ...}; github.com/ai-dynamo/aiperf,
// docs/tutorials/working-with-profile-exports.md @ e51cbbaf65a6). It used to
// be built as an nlohmann DOM and dumped: about 37 us per 150-token record,
// a third of the client's CPU in a fast run (the background writer thread
// competes with the workers for the same cores). Writing the text directly
// takes a few microseconds and produces the same bytes: numbers go through
// nlohmann's own shortest round-trip formatter (detail::to_chars), strings
// through the same escaping (the fast path covers plain printable ASCII; any
// other string is escaped by nlohmann itself, including the replacement of
// bytes that are not UTF-8). A test holds every line equal to nlohmann's dump
// of its own parse, so the text stays what the DOM would have written.
//
// record_to_json (metrics/export.h) parses this line back for the few
// callers that want a DOM (tests, tools), so the shape lives here only.
#pragma once
#include <string>

#include "common/record.h"

namespace agentperf {

// Appends r's line, without the trailing newline, to `out`.
void append_record_json_line(std::string& out, const RequestRecord& r);

}  // namespace agentperf
