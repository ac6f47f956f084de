#!/usr/bin/env bash
# Installs dependencies, builds everything (the tests too), and runs the
# whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --with-tests
# Everything setup.sh leaves out: the test suite and the benchmarks.
cmake --build build -j "${JOBS:-2}"
# Two at a time, as the build: the suite's long tests (the simulator's fits
# and validation doc checks, minutes each) then share the two cores instead
# of running one after the other.
ctest --test-dir build --output-on-failure -j "${JOBS:-2}"
