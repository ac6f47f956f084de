#!/usr/bin/env bash
# `agentperf calibrate engine` against a real engine: llama.cpp's llama-server
# on this machine's CPU with the small random-weight test model
# (scripts/llama-server.sh). Fits the engine costs on some decode
# concurrencies and input lengths, and predicts HELD-OUT concurrencies and
# input lengths with the simulator's vLLM scheduler (llama.cpp, like vLLM V1,
# puts every slot's decode token and prefill chunks into one batch of up to
# n_batch tokens). Every probe is measured REPEATS times; the fit and the
# errors use the medians. Prints the error at each held-out point.
#
#   bench/calibrate-llama-server.sh            # ~3 minutes on 2 cores
#
# One server thread by default: llama.cpp's worker threads meet at a
# spinning barrier after every op, so on a 2-core machine shared with the
# client (and with anything else that runs) a 2-thread server spends its
# time waiting for a descheduled peer: a 4k prefill took 27 to 64 s from
# one repeat to the next. With one thread it is slower but steady.
#
# Environment (defaults in brackets):
#   AGENTPERF            the agentperf binary [build/agentperf]
#   AGENTPERF_PEERS_DIR  llama.cpp peer source for scripts/llama-server.sh [/work/shared/peers]
#   LLAMA_SERVER, LLAMA_MODEL  use an existing build instead (see scripts/llama-server.sh)
#   SLOTS [8] THREADS [1] SLOT_CONTEXT [4096] REPEATS [3]
#   FIT_BATCHES [1,2,4,8]  HELD_BATCHES [3,6]
#   FIT_LENGTHS [256,512,1024]  HELD_LENGTHS [384,768,1536]
#   FIT_COEFFICIENTS [step_s,request_s,weight_read_scale,gemm_scale,attention_scale]
#   SERVER_ARGS [-fa]    extra llama-server flags (flash attention; see below)
#   KEEP=1               keep the work folder (model and hardware specs, profile, server log)
# Exit status: 0 done; 3 no llama-server source; other: a step failed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
AGENTPERF=${AGENTPERF:-$root/build/agentperf}
export AGENTPERF_PEERS_DIR=${AGENTPERF_PEERS_DIR:-/work/shared/peers}
SLOTS=${SLOTS:-8}
THREADS=${THREADS:-1}
SLOT_CONTEXT=${SLOT_CONTEXT:-4096}
REPEATS=${REPEATS:-3}
FIT_BATCHES=${FIT_BATCHES:-1,2,4,8}
HELD_BATCHES=${HELD_BATCHES:-3,6}
FIT_LENGTHS=${FIT_LENGTHS:-256,512,1024}
HELD_LENGTHS=${HELD_LENGTHS:-384,768,1536}
FIT_COEFFICIENTS=${FIT_COEFFICIENTS:-step_s,request_s,weight_read_scale,gemm_scale,attention_scale}

[[ -x "$AGENTPERF" ]] || { echo "calibrate-llama-server: $AGENTPERF is not built (ninja -C build agentperf_cli)" >&2; exit 1; }
set +e
found=$(bash "$root/scripts/llama-server.sh")
rc=$?
set -e
((rc == 0)) || { echo "calibrate-llama-server: scripts/llama-server.sh failed ($rc)" >&2; exit "$rc"; }
eval "$found"

work=$(mktemp -d /tmp/agentperf-calibrate-llama.XXXXXX)
server_pid=""
cleanup() {
  local rc=$?
  # (this llama-server commit may abort while exiting on SIGTERM: its status is not ours)
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [[ "${KEEP:-0}" == 1 ]]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT

# The model of scripts/llama-server.sh (peers' make_random_gguf.py): llama
# architecture, 384 embedding, 6 layers, 6 heads of 64 (n_head = n_embd /
# 64, as many KV heads), FFN 1152, vocabulary 4096, F32 weights, F16 KV
# cache (llama-server's default). Weights read per token: 6 x (4 x 384^2 +
# 3 x 384 x 1152) + the 4096 x 384 output matrix = 13.07 M parameters,
# 52.3 MB in F32 (the 6.3 MB embedding table is only indexed). The context
# is the server's per-slot context (-c / -np).
cat >"$work/model.json" <<EOF
{
  "name": "rand-llama-384x6",
  "notes": "random-weight llama test model of scripts/llama-server.sh (make_random_gguf.py 384 6 1152 4096 16384), F32",
  "layers_full_attention": 6,
  "hidden_size": 384,
  "q_heads": 6,
  "kv_heads": 6,
  "head_dim": 64,
  "kv_dtype_bytes": 2,
  "dense_weight_bytes": 52.3e6,
  "other_weight_bytes": 6.3e6,
  "active_params": 13.07e6,
  "compute_dtype": "bf16",
  "max_context": $SLOT_CONTEXT
}
EOF

# This machine's CPU as a "GPU" spec. All figures EST, stated rather than
# measured: the fit's scales carry the truth (gemm_scale on the GEMM rate,
# weight_read_scale on the weight stream, attention_scale on attention).
# peak_flops is the loader's minimum (1e12); the efficiencies bring it to
# 100 GFLOP/s of GEMM and attention (a round figure for a few AVX-512 cores;
# one core reaches ~40: gemm_scale ~2.5). Memory: 10 GB/s of streaming reads
# (the model's 52 MB do not fit the 32 MB L3).
# No launch overheads or interconnect: step_s holds the per-step work.
cat >"$work/cpu.json" <<EOF
{
  "name": "cpu-${THREADS}core",
  "notes": "this machine's CPU ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $THREADS threads), EST figures: 1e12 FLOP/s peak (loader minimum) x 0.1 efficiency, 20 GB/s x 0.5 memory stream",
  "hbm_bytes": 8e9,
  "hbm_bandwidth": 20e9,
  "peak_flops": {"bf16": 1e12},
  "nvlink_bandwidth_one_way": 1e9,
  "host_link_bandwidth": 1e10,
  "efficiency": {"hbm": 0.5, "gemm": 0.1, "attention": 0.1, "nvlink": 1.0, "host_link": 1.0},
  "allreduce_alpha_s": 0,
  "launch_overhead_s": {"cuda_graph": 0, "eager": 0, "per_step_cpu": 0}
}
EOF

# llama-server: SLOTS parallel slots with continuous batching (its default),
# n_batch 2048 (default), port chosen by the server and read from its log.
# A request goes to the slot whose cached prompt it shares the most with only
# when that share passes --slot-prompt-similarity (default 0.5), else to the
# least recently used slot, whose cache it then overwrites: at the default a
# cached-prefix probe of 384 tokens (128 cached + 256 new) never meets its
# prefix. 0.1 sends every such probe to its prefix (random prompts share
# nothing, so the other probes still spread over free slots).
# Flash attention (-fa): without it llama.cpp's CPU attention multiplies
# every query of a batch with every cached key and masks afterwards, so an
# uncached prompt pays the full square where the simulator (and a GPU
# engine's causal kernels) pay half; the flash kernel skips masked keys.
"$LLAMA_SERVER" -m "$LLAMA_MODEL" --host 127.0.0.1 --port 0 -c $((SLOTS * SLOT_CONTEXT)) -np "$SLOTS" \
  -t "$THREADS" -tb "$THREADS" --slot-prompt-similarity 0.1 ${SERVER_ARGS--fa} --metrics --no-warmup \
  >"$work/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*HTTP server is listening, hostname: 127.0.0.1, port: \([0-9]*\).*/\1/p' "$work/server.log" | head -1)
  [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/server.log" >&2; exit 1; }
  sleep 0.2
done
[[ -n "$port" ]] || { echo "calibrate-llama-server: llama-server did not start" >&2; tail -20 "$work/server.log" >&2; exit 1; }
url="http://127.0.0.1:$port"
echo "llama-server $LLAMA_SERVER_COMMIT at $url: $SLOTS slots x $SLOT_CONTEXT tokens, $THREADS threads"

engine=(--model-spec "$work/model.json" --hardware "$work/cpu.json" --scheduler vllm
        --max-num-batched-tokens 2048 --max-running-requests "$SLOTS")
start=$(date +%s)
"$AGENTPERF" calibrate engine --url "$url" "${engine[@]}" \
  --batches "$FIT_BATCHES,$HELD_BATCHES" --input-lengths "$FIT_LENGTHS,$HELD_LENGTHS" \
  --hold-out "$HELD_BATCHES,$HELD_LENGTHS" --prefill-requests 2 --repeats "$REPEATS" \
  --fit-coefficients "$FIT_COEFFICIENTS" -o "$work/llama-cpu-profile.json"
echo "calibrate engine took $(($(date +%s) - start)) s"

echo
echo "held-out points (not fitted), measured = median of $REPEATS repeats, predicted with --scheduler vllm:"
jq -r '.fit.probes[] | select(.held_out) |
  [.label, .metric, (.measured * 1000 | round / 1000), (.predicted * 1000 | round / 1000),
   ((.residual * 1000 | round) / 10), (.measured_repeats | map(. * 100 | round / 100) | join(" "))] | @tsv' \
  "$work/llama-cpu-profile.json" |
  awk -F'\t' 'BEGIN { printf "%-14s %-14s %10s %10s %8s  %s\n", "point", "metric", "measured", "predicted", "error %", "repeats (ms)" }
              { printf "%-14s %-14s %10.3f %10.3f %+8.1f  %s\n", $1, $2, $3, $4, $5, $6; s += ($5 < 0 ? -$5 : $5); n++ }
              END { if (n) printf "held-out MAPE %.1f %% over %d points\n", s / n, n }'

# The profile is an ordinary engine profile: `sim predict` takes it.
b=${HELD_BATCHES%%,*}
echo
echo "sim predict --engine-profile at held-out concurrency $b (128 in, 128 out):"
"$AGENTPERF" sim predict "${engine[@]}" --engine-profile "$work/llama-cpu-profile.json" \
  -c "$b" -n $((2 * b)) --isl 128 --osl 128 --prompt-format token-ids | grep -E '^(ITL|TTFT) '
