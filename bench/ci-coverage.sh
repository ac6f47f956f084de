#!/usr/bin/env bash
# How honest are a replay's 95 % intervals? Runs one replay point REPEATS
# times against `agentperf sim serve` (fast-forwarded by TIME_SCALE), each
# on its own sample of synthetic sessions and seed, and counts how often each
# run's bootstrap interval (profile_export_aiperf.json, confidence_intervals,
# resampled over session trees) covers the mean of the OTHER runs of the
# same metric. A well-calibrated 95 % interval covers it a bit less than
# 95 % of the time (the other runs' mean has its own noise, so the nominal
# rate of "covers a new run's mean" is below 95 %).
#
#   bench/ci-coverage.sh            # REPEATS=10 LANES=16 DURATION=40 TIME_SCALE=20
#
# Each run starts its lanes at turn 0 (--no-warmup) on short synthetic
# traces (MEAN_TURNS turns, idle gaps capped at IDLE_CAP s of wall time), so
# that a run of DURATION wall seconds plays many whole session trees.
#
# LOAD=profile measures a synthetic closed loop instead: `profile` at
# concurrency LANES with fixed prompt and output lengths (ISL, OSL), each run
# its own --random-seed; its units are requests, and its throughput interval
# moves with the mean latency (Little's law, src/metrics/confidence.h).
#
# Environment: AGENTPERF [build/agentperf], REPEATS [10], LANES [16],
# DURATION [40] (wall seconds per run), TIME_SCALE [20], MEAN_TURNS [4],
# IDLE_CAP [0.5], LOAD [replay|profile], ISL [1024], OSL [64], WORK [mktemp -d].
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
AGENTPERF=${AGENTPERF:-$root/build/agentperf}
REPEATS=${REPEATS:-10}
LANES=${LANES:-16}
DURATION=${DURATION:-40}
TIME_SCALE=${TIME_SCALE:-20}
MEAN_TURNS=${MEAN_TURNS:-4}
IDLE_CAP=${IDLE_CAP:-0.5}
LOAD=${LOAD:-replay}
ISL=${ISL:-1024}
OSL=${OSL:-64}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
port=$((20000 + RANDOM % 20000))
"$AGENTPERF" sim serve --port "$port" --time-scale "$TIME_SCALE" > "$WORK/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
for i in $(seq 1 "$REPEATS"); do
  if [ "$LOAD" = profile ]; then
    "$AGENTPERF" profile --url "http://127.0.0.1:$port" --wait-for-server 30 -c "$LANES" -d "$DURATION" \
      --isl "$ISL" --osl "$OSL" --random-seed "$i" -q -o "$WORK/run$i" > /dev/null 2>&1 || true
    continue
  fi
  # Each run plays its own sample of sessions (the population the interval
  # speaks of), with its own prompt contents.
  "$AGENTPERF" traces synth --traces 400 --mean-turns "$MEAN_TURNS" --seed "$i" -o "$WORK/traces$i.jsonl" > /dev/null 2>&1
  "$AGENTPERF" replay --url "http://127.0.0.1:$port" --wait-for-server 30 --traces "$WORK/traces$i.jsonl" \
    --lanes "$LANES" -d "$DURATION" --no-warmup --trace-idle-gap-cap-seconds "$IDLE_CAP" --system-idle-cap "$IDLE_CAP" \
    --random-seed "$i" -q -o "$WORK/run$i" > /dev/null 2>&1 || true
done
python3 - "$WORK" "$REPEATS" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
runs = []
for i in range(1, n + 1):
    try:
        runs.append(json.load(open(f"{work}/run{i}/profile_export_aiperf.json")))
    except Exception as e:
        print(f"run {i}: no aggregate ({e})")
metrics = [("time_to_first_token", "avg"), ("time_to_first_token", "p50"), ("time_to_first_token", "p90"),
           ("inter_token_latency", "avg"), ("request_latency", "avg"), ("output_token_throughput", None)]
total = hits = 0
for m, k in metrics:
    vals, ivs = [], []
    for r in runs:
        ci = r.get("confidence_intervals", {}).get("metrics", {})
        iv = ci.get(m, {}).get(k) if k else ci.get(m)
        v = r.get(m, {}).get(k if k else "avg")
        if iv is None or v is None:
            continue
        vals.append(v); ivs.append(iv)
    c = 0
    for i, (lo, hi) in enumerate(ivs):
        others = [v for j, v in enumerate(vals) if j != i]
        mean = sum(others) / len(others)
        c += lo <= mean <= hi
    total += len(ivs); hits += c
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 if len(vals) > 1 else 0
    hw = sum((hi - lo) / 2 for lo, hi in ivs) / len(ivs)
    units = runs[0]["confidence_intervals"]["units"] if runs else 0
    ratio = hw / (1.96 * sd) if sd > 0 else float("inf")
    print(f"{m}{'.' + k if k else ''}: {c}/{len(ivs)} intervals cover the other runs' mean; run-to-run sd "
          f"{100 * sd / mean:.1f} %, mean interval half-width {100 * hw / mean:.1f} % ({ratio:.2f} x 1.96 sd)")
unit = runs[0]["confidence_intervals"]["unit"] if runs else "unit"
print(f"overall coverage: {hits}/{total} = {100 * hits / max(total, 1):.0f} % ({len(runs)} runs, ~{units} {unit}s each)")
PY
