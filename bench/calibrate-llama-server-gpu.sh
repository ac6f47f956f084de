#!/usr/bin/env bash
# `agentperf calibrate engine` against a GPU engine: llama.cpp's llama-server
# built with CUDA, serving a random-weight model of Qwen3-8B's shape in F16
# (bench/make_gqa_gguf.py) on one NVIDIA GPU. Fits the engine costs on some
# decode batches and input lengths, predicts HELD-OUT batches and lengths
# with the simulator's vLLM scheduler and the shipped hardware spec, and
# prints the error at each held-out probe. The CPU twin is
# bench/calibrate-llama-server.sh.
#
#   LLAMA_TARBALL=llama.cpp-<commit>-server.tar.xz bench/calibrate-llama-server-gpu.sh [build|run|all]
#
# build: the CUDA llama-server and the model into $WORK (kept: run again
# reuses them); run: serve and calibrate; all (default): both.
#
# Environment (defaults in brackets):
#   AGENTPERF [build/agentperf]   WORK [/root/agentperf-gpu]   CUDA_ARCH [90]
#   HARDWARE [h200] (the simulator's spec of the GPU)   SLOTS [64]
#   SLOT_CONTEXT [9216]   REPEATS [2]   JOBS [nproc]
#   FIT_BATCHES [1,4,16,64]  HELD_BATCHES [8,32]
#   FIT_LENGTHS [1024,4096]  HELD_LENGTHS [2048,8192]
#   FIT_COEFFICIENTS [step_s,request_s,weight_read_scale,gemm_scale,attention_scale]
#   OUT_DIR: where to copy the profile and the server log [$WORK]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
AGENTPERF=${AGENTPERF:-$root/build/agentperf}
WORK=${WORK:-/root/agentperf-gpu}
CUDA_ARCH=${CUDA_ARCH:-90}
HARDWARE=${HARDWARE:-h200}
SLOTS=${SLOTS:-64}
SLOT_CONTEXT=${SLOT_CONTEXT:-9216}
REPEATS=${REPEATS:-2}
JOBS=${JOBS:-$(nproc)}
FIT_BATCHES=${FIT_BATCHES:-1,4,16,64}
HELD_BATCHES=${HELD_BATCHES:-8,32}
FIT_LENGTHS=${FIT_LENGTHS:-1024,4096}
HELD_LENGTHS=${HELD_LENGTHS:-2048,8192}
FIT_COEFFICIENTS=${FIT_COEFFICIENTS:-step_s,request_s,weight_read_scale,gemm_scale,attention_scale}
OUT_DIR=${OUT_DIR:-$WORK}
phase=${1:-all}
mkdir -p "$WORK" "$OUT_DIR"
server=$WORK/build/bin/llama-server
model=$WORK/qwen3-8b-shape-f16.gguf

build() {
  if [[ ! -x "$server" ]]; then
    [[ -f "${LLAMA_TARBALL:-}" ]] || { echo "calibrate-llama-server-gpu: set LLAMA_TARBALL to a llama.cpp source tarball" >&2; exit 3; }
    rm -rf "$WORK/src" && mkdir -p "$WORK/src"
    tar -xJf "$LLAMA_TARBALL" -C "$WORK/src"
    cmake -S "$WORK/src/llama.cpp" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_SERVER=ON >"$WORK/cmake.log" 2>&1 || { tail -30 "$WORK/cmake.log" >&2; exit 1; }
    local t0=$SECONDS
    cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 ||
      { grep -m20 -B2 -A8 "error" "$WORK/build.log" >&2; exit 1; }
    echo "llama-server (CUDA, sm_$CUDA_ARCH) built in $((SECONDS - t0)) s"
  fi
  if [[ ! -s "$model" ]]; then
    local t0=$SECONDS
    python3 "$root/bench/make_gqa_gguf.py" "$WORK/src/llama.cpp/gguf-py" "$model.partial" qwen3-8b && mv "$model.partial" "$model"
    echo "model written in $((SECONDS - t0)) s: $(du -h "$model" | cut -f1)"
  fi
}

run() {
  [[ -x "$server" && -s "$model" ]] || { echo "calibrate-llama-server-gpu: run 'build' first" >&2; exit 1; }
  # The simulator's view of the served model: Qwen3-8B's shapes with
  # llama.cpp's F16 KV cache (the shipped qwen3-8b spec has SGLang's fp8 KV).
  # Weights streamed per step: every layer (36 x (4096 x (4096 + 2 x 1024 +
  # 4096) + 3 x 4096 x 12288) = 6.95 G parameters) + the output matrix (151936
  # x 4096 = 0.62 G) = 7.57 G x 2 B = 15.14 GB; the embedding table (1.24 GB)
  # is only indexed.
  cat >"$WORK/model.json" <<JSON
{
  "name": "qwen3-8b-shape-f16kv",
  "served_model_name": "random-gqa-qwen3-8b",
  "notes": "bench/make_gqa_gguf.py qwen3-8b: Qwen3-8B's shapes, F16 weights and KV (llama.cpp default)",
  "layers_full_attention": 36,
  "hidden_size": 4096,
  "q_heads": 32,
  "kv_heads": 8,
  "head_dim": 128,
  "kv_dtype_bytes": 2,
  "dense_weight_bytes": 15.14e9,
  "other_weight_bytes": 1.24e9,
  "active_params": 7.57e9,
  "compute_dtype": "bf16",
  "max_context": $SLOT_CONTEXT
}
JSON
  # One step is one llama_decode of up to n_batch tokens: n_ubatch = n_batch
  # (2048) so it is one forward, as the simulator's vLLM step is; flash
  # attention; every layer on the GPU. Slot similarity 0.1 sends a cached-
  # prefix probe to the slot that holds its prefix (bench/calibrate-llama-server.sh).
  "$server" -m "$model" --host 127.0.0.1 --port 0 -c $((SLOTS * SLOT_CONTEXT)) -np "$SLOTS" -ngl 999 -fa \
    -b 2048 -ub 2048 --slot-prompt-similarity 0.1 --metrics --no-warmup >"$WORK/server.log" 2>&1 &
  server_pid=$!  # global: the EXIT trap runs after this function's locals are gone
  trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; cp "$WORK/server.log" "$OUT_DIR/" 2>/dev/null || true' EXIT
  local port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*HTTP server is listening, hostname: 127.0.0.1, port: \([0-9]*\).*/\1/p' "$WORK/server.log" | head -1)
    [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 $server_pid 2>/dev/null || { tail -20 "$WORK/server.log" >&2; exit 1; }
    sleep 0.5
  done
  [[ -n "$port" ]] || { echo "calibrate-llama-server-gpu: llama-server did not start" >&2; exit 1; }
  grep -m3 -i "CUDA0\|offloaded" "$WORK/server.log" || true
  local engine=(--model-spec "$WORK/model.json" --hardware "$HARDWARE" --scheduler vllm
                --max-num-batched-tokens 2048 --max-running-requests "$SLOTS")
  local t0=$SECONDS
  "$AGENTPERF" calibrate engine --url "http://127.0.0.1:$port" "${engine[@]}" \
    --batches "$FIT_BATCHES,$HELD_BATCHES" --input-lengths "$FIT_LENGTHS,$HELD_LENGTHS" \
    --hold-out "$HELD_BATCHES,$HELD_LENGTHS,prefix" --repeats "$REPEATS" \
    --fit-coefficients "$FIT_COEFFICIENTS" -o "$OUT_DIR/llama-gpu-profile.json"
  echo "calibrate engine took $((SECONDS - t0)) s"
  python3 - "$OUT_DIR/llama-gpu-profile.json" <<'PY'
import json, sys
probes = json.load(open(sys.argv[1]))["fit"]["probes"]
held = [p for p in probes if p["held_out"]]
print("\nheld-out probes (not fitted; measured = median of the repeats):")
print("%-16s %-14s %10s %10s %8s" % ("probe", "metric", "measured", "predicted", "error %"))
for p in held:
    print("%-16s %-14s %10.3f %10.3f %+8.1f" % (p["label"], p["metric"], p["measured"], p["predicted"], 100 * p["residual"]))
if held:
    print("held-out MAPE %.1f %% over %d probes" % (100 * sum(abs(p["residual"]) for p in held) / len(held), len(held)))
PY
}

case "$phase" in
  build) build ;;
  run) run ;;
  all) build; run ;;
  *) echo "usage: $0 [build|run|all]" >&2; exit 2 ;;
esac
