# Makes two runs with the simulator, writes the report, and checks it in a
# real browser (headless chromium through playwright-core).
# Inputs: AGENTPERF, NODE, SCRIPT, MODULES, WORK.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
foreach(c 4 16)
  execute_process(COMMAND "${AGENTPERF}" sim predict --model-spec qwen3-8b -c ${c} -n 120 --isl 1024 --isl-stddev 200
                          --osl 128 --osl-stddev 32 -o "${WORK}/c${c}"
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sim predict -c ${c} failed (${rc})")
  endif()
endforeach()
# A live run of the embedded simulator, with its server metrics scraped.
execute_process(COMMAND "${AGENTPERF}" run --time-scale 10 -n 60 --warmup-request-count 0 --server-metrics-interval 0.2 -q
                        -o "${WORK}/live" RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf run failed (${rc})")
endif()
execute_process(COMMAND "${AGENTPERF}" report "${WORK}/c4" "${WORK}/c16" "${WORK}/live" -o "${WORK}/report.html"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf report failed (${rc})")
endif()
execute_process(COMMAND "${NODE}" "${SCRIPT}" "${MODULES}" "${WORK}/report.html" 3 3 11 "${WORK}/report.png"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the report did not render as expected in chromium (${rc})")
endif()
