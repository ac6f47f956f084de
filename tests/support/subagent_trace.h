// A hand-made Weka trace with three subagents whose recorded entries,
// durations and calls make AIPerf's subagent rules visible (offsets from the
// entry's t, joins by the recorded end, per-subagent barrier scopes); the
// session-tree and scheduler tests derive their expected schedules from it.
#pragma once

namespace agentperf::test_support {

//   root r0 t=0 (2 s), r1 t=6 (1 s), r2 t=8 (1 s)
//   A: entry 3, duration 4000 ms, calls at 4 and 5 (0.5 s each)
//   B: entry 3.5, duration 1000 ms, call at 3.6 (0.5 s)
//   C: entry 3.2, duration 500 ms, call at 3.3 (0.2 s)
inline constexpr const char* kSubagentTrace = R"({"id":"J","block_size":4,"requests":[
    {"type":"n","t":0,"in":4,"out":1,"hash_ids":[0],"api_time":2},
    {"type":"subagent","t":3,"agent_id":"A","duration_ms":4000,"requests":[
      {"type":"n","t":4,"in":8,"out":1,"hash_ids":[0,5],"api_time":0.5},
      {"type":"n","t":5,"in":12,"out":1,"hash_ids":[0,5,6],"api_time":0.5}]},
    {"type":"subagent","t":3.5,"agent_id":"B","duration_ms":1000,"requests":[
      {"type":"n","t":3.6,"in":8,"out":1,"hash_ids":[0,7],"api_time":0.5}]},
    {"type":"subagent","t":3.2,"agent_id":"C","duration_ms":500,"requests":[
      {"type":"n","t":3.3,"in":8,"out":1,"hash_ids":[0,8],"api_time":0.2}]},
    {"type":"n","t":6,"in":8,"out":1,"hash_ids":[0,1],"api_time":1},
    {"type":"n","t":8,"in":12,"out":1,"hash_ids":[0,1,2],"api_time":1}]})";

}  // namespace agentperf::test_support
