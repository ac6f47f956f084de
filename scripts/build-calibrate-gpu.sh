#!/usr/bin/env bash
# Builds agentperf-calibrate-gpu with nvcc alone (no CMake, no Debian
# packages): for GPU machines that have only the CUDA toolkit. With the full
# build, configure with -DAGENTPERF_CUDA=ON instead and use `agentperf calibrate`.
# Usage: scripts/build-calibrate-gpu.sh [OUTPUT] (default build-gpu/agentperf-calibrate-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-gpu/agentperf-calibrate-gpu}"
mkdir -p "$(dirname "$out")"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
# sm_90: Hopper machine code (H100/H200); compute_90 PTX lets newer chips JIT it.
"$NVCC" -std=c++17 -O2 -lineinfo \
  -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90 \
  -Isrc -o "$out" src/calibrate/gpu/*.cu src/calibrate/gpu/calibrate_gpu_main.cpp -lcublasLt
echo "built $out" >&2
