# Makes runs of every kind the report groups, writes the report, and checks
# it in a real browser (headless chromium through playwright-core):
#   pred_c4, pred_c16   sim predict, ISL 1024 OSL 128            (group 1)
#   pred_c8, meas_c8    sim predict and a real-time run of the same point:
#                       a predicted/measured pair                 (group 2)
#   live                a run of the simulator at 10x time scale, 8 warmup requests (group 3, marked)
#   pred_live           its point predicted in virtual time (group 4): pairs with live on the x10 clock
#   sweep/*             sweep --dry-run of the shipped simulator recipe with a
#                       cost block (gpu-price-per-hour 3, gpu-power-watts 1000)  (group 5)
#   cap/c*              a capacity search against the embedded simulator       (group 6)
# GPU telemetry (write_gpu_metrics.mjs, nvidia-smi's CSV): meas_c8 two GPUs
# through --gpu-metrics, live one GPU as its own gpu_metrics.csv. The report
# gets --gpu-price-per-hour (over the recipe's price) and no power flag: power
# comes from the telemetry (meas_c8, live) and the recipe (the sweep points).
# Inputs: AGENTPERF, NODE, SCRIPT, MODULES, WORK, RECIPE.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
function(agentperf what)
  execute_process(COMMAND "${AGENTPERF}" ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()
foreach(c 4 16)
  agentperf("sim predict -c ${c}" sim predict --model-spec qwen3-8b -c ${c} -n 120 --isl 1024 --isl-stddev 200
            --osl 128 --osl-stddev 32 -o "${WORK}/pred_c${c}")
endforeach()
agentperf("sim predict -c 8" sim predict --model-spec qwen3-8b -c 8 -n 60 --isl 512 --osl 64 -o "${WORK}/pred_c8")
agentperf("agentperf run (real time)" run --time-scale 1 -c 8 -n 60 --isl 512 --osl 64 --warmup-request-count 0
          --server-metrics-interval 0.2 -q -o "${WORK}/meas_c8")
# A live run of the embedded simulator, with its server metrics scraped.
agentperf("agentperf run (time scale 10)" run --time-scale 10 -n 60 --warmup-request-count 8 --server-metrics-interval 0.2 -q
          -o "${WORK}/live")
# The virtual-time prediction of the live run's point: pairs with it on
# the x10 clock.
agentperf("sim predict (the live run's point)" sim predict --model-spec qwen3-8b -c 8 -n 60 -o "${WORK}/pred_live")
# A capacity search against the embedded simulator: 2 SLOs, its measured
# points (a capacity folder stands for its points in the report).
agentperf("agentperf capacity" capacity --embedded-sim --time-scale 20 --isl 1024 --osl 32 -n 40
          --slo "ttft_p90<=12ms" --slo "interactivity_p50>=100" --max-concurrency 16 -q -o "${WORK}/cap")
file(GLOB cap_entries LIST_DIRECTORIES true "${WORK}/cap/c*")
set(n_cap 0)
foreach(e IN LISTS cap_entries)
  if(IS_DIRECTORY "${e}")
    math(EXPR n_cap "${n_cap} + 1")
  endif()
endforeach()
file(READ "${RECIPE}" recipe_text)
file(WRITE "${WORK}/recipe-with-cost.yaml" "${recipe_text}\ncost: {gpu-price-per-hour: 3, gpu-power-watts: 1000}\n")
agentperf("sweep --dry-run" sweep "${WORK}/recipe-with-cost.yaml" --dry-run -o "${WORK}/sweep")
get_filename_component(script_dir "${SCRIPT}" DIRECTORY)
foreach(telemetry "meas_c8;${WORK}/meas_c8_gpu.csv;2" "live;${WORK}/live/gpu_metrics.csv;1")
  list(GET telemetry 0 run)
  list(GET telemetry 1 csv)
  list(GET telemetry 2 gpus)
  execute_process(COMMAND "${NODE}" "${script_dir}/write_gpu_metrics.mjs" "${WORK}/${run}" "${csv}" ${gpus} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "writing the GPU metrics of ${run} failed (${rc})")
  endif()
endforeach()
file(GLOB sweep_entries LIST_DIRECTORIES true "${WORK}/sweep/*")
set(sweep_points "")
foreach(e IN LISTS sweep_entries)
  if(IS_DIRECTORY "${e}")
    list(APPEND sweep_points "${e}")
  endif()
endforeach()
list(LENGTH sweep_points n_sweep)
execute_process(COMMAND "${AGENTPERF}" report "${WORK}/pred_c4" "${WORK}/pred_c16" "${WORK}/pred_c8" "${WORK}/meas_c8"
                        "${WORK}/live" "${WORK}/pred_live" ${sweep_points} "${WORK}/cap" -o "${WORK}/report.html" --gpu-price-per-hour 2.5
                        --gpu-metrics "${WORK}/meas_c8=${WORK}/meas_c8_gpu.csv"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "agentperf report failed (${rc})")
endif()
if(NOT EXISTS "${WORK}/report.md")
  message(FATAL_ERROR "agentperf report wrote no report.md beside report.html")
endif()
math(EXPR points "6 + ${n_sweep} + ${n_cap}")
execute_process(COMMAND "${NODE}" "${SCRIPT}" "${MODULES}" "${WORK}/report.html"
                        "{\"points\": ${points}, \"runs\": ${points}, \"groups\": 6, \"pairs\": 2, \"scaled_pairs\": 1, \"scaled_groups\": 2, \"server_runs\": 2, \"gpu_runs\": {\"meas_c8\": 2, \"live\": 1}, \"power_sources\": {\"telemetry\": 2, \"recipe\": ${n_sweep}}, \"priced\": ${points}, \"capacity\": 1}"
                        "${WORK}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the report did not render as expected in chromium (${rc})")
endif()
