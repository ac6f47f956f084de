#!/usr/bin/env bash
# Installs dependencies, builds everything (the tests too), and runs the
# whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --with-tests
# Everything setup.sh leaves out: the test suite and the benchmarks.
cmake --build build -j "${JOBS:-2}"
ctest --test-dir build --output-on-failure
