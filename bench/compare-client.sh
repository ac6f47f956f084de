#!/usr/bin/env bash
# The client's ceiling now and at an earlier revision, side by side on the
# same machine: builds agentperf_bench_client of REV in a git worktree
# (REV's own CMake setup, Release) and runs the two binaries alternately,
# ROUNDS times each, so a change in the machine's state hits both.
#   bench/compare-client.sh [REV] [ROUNDS] [SECONDS]
# REV defaults to 06bbeb2 (the first commit with this benchmark). Needs
# this tree's build (scripts/test.sh or cmake --build build) for "now" and
# its npm folders (scripts/setup.sh) for REV's build.
set -euo pipefail
cd "$(dirname "$0")/.."
REV="${1:-06bbeb2}"
ROUNDS="${2:-2}"
SECONDS_PER_SCENARIO="${3:-5}"
NOW_BIN="${NOW_BIN:-build/bench/agentperf_bench_client}"
[[ -x "$NOW_BIN" ]] || { echo "compare-client: $NOW_BIN not built (cmake --build build --target agentperf_bench_client)" >&2; exit 2; }
git rev-parse --verify -q "$REV^{commit}" >/dev/null || { echo "compare-client: '$REV' is not a commit of this repository" >&2; exit 2; }
# REV's binary is kept (build/compare-client/REV) and reused by a later run.
REV_SHA="$(git rev-parse --short "$REV^{commit}")"
OLD_BIN="build/compare-client/$REV_SHA/agentperf_bench_client"
if [[ ! -x "$OLD_BIN" ]]; then
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/agentperf-compare-XXXXXX")"
  trap 'git worktree remove --force "$WORK/tree" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
  git worktree add --detach "$WORK/tree" "$REV" >/dev/null
  # npm's folders are not in git: REV's build embeds the report's chart
  # library from this tree's copy (scripts/setup.sh installs it).
  for nm in tools/report-web/node_modules tools/tokenizer-oracle/node_modules; do
    [[ -d "$nm" && -d "$WORK/tree/$(dirname "$nm")" ]] && ln -s "$PWD/$nm" "$WORK/tree/$nm"
  done
  cmake -S "$WORK/tree" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 ||
    { echo "compare-client: configuring $REV failed: $WORK/cmake.log" >&2; cat "$WORK/cmake.log" >&2; exit 1; }
  echo "building agentperf_bench_client at $REV ..." >&2
  cmake --build "$WORK/build" -j "${JOBS:-2}" --target agentperf_bench_client >"$WORK/build.log" 2>&1 ||
    { echo "compare-client: building $REV failed" >&2; tail -20 "$WORK/build.log" >&2; exit 1; }
  mkdir -p "$(dirname "$OLD_BIN")"
  cp "$WORK/build/bench/agentperf_bench_client" "$OLD_BIN"
fi
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 1; i <= ROUNDS; i++)); do
  echo "== round $i: $REV"
  "$OLD_BIN" --seconds "$SECONDS_PER_SCENARIO" | tail -n +2
  echo "== round $i: now ($(git rev-parse --short HEAD))"
  "$NOW_BIN" --seconds "$SECONDS_PER_SCENARIO" | tail -n +2
done
