"""Golden values for tests/common/numpy_random_test.cpp, made by numpy itself.

Prints one JSON object per line; floats go as float.hex() so they cross into
C++ exactly. Needs numpy (Debian: python3-numpy, installed by
scripts/setup.sh); without it prints {"error": ...} and exits 3.

The "aiperf" lines restate ai-dynamo/aiperf's _seed_for_trace,
_seed_for_trace_lane and the t* draw of
TrajectorySource._build_timestamped_trajectory
(src/aiperf/timing/trajectory_source.py at
1d2548494465205c387e5b9d3dfc75dd96c4604a): AIPerf itself is not installed.
"""

import hashlib
import json
import sys

try:
    import numpy as np
except ImportError as e:  # the C++ test fails on this line, with this text
    print(json.dumps({"error": f"numpy is not importable by {sys.executable}: {e}"}))
    sys.exit(3)

SHA_MESSAGE = b"agentperf numpy_random golden"
SEEDS = [
    0,
    1,
    42,
    2**32 + 7,
    2**63,
    2**64 - 1,
    2**64 + 1,
    2**128 + 3,
    int.from_bytes(hashlib.sha256(SHA_MESSAGE).digest(), "big"),
    int.from_bytes(hashlib.sha256(SHA_MESSAGE).digest(), "little"),
]
RANGES = [(0.0, 1.0), (1.0, 3.0), (-5.5, 2.25), (1717000000123.0, 1717000456789.5), (7.0, 7.0)]


def seed_for_trace(base_seed, trace_id):
    h = hashlib.sha256(f"{base_seed}:{trace_id}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def seed_for_trace_lane(base_seed, trace_id, lane_index):
    h = hashlib.sha256(f"{base_seed}:{trace_id}:{lane_index}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def t_star_ms(base_seed, trace_id, lane_index, start_ms, end_ms, min_ratio, max_ratio):
    duration_ms = end_ms - start_ms
    seed = (
        seed_for_trace(base_seed, trace_id)
        if lane_index is None
        else seed_for_trace_lane(base_seed, trace_id, lane_index)
    )
    rng = np.random.default_rng(seed)
    lo = start_ms + min_ratio * duration_ms
    hi = start_ms + max_ratio * duration_ms
    if hi < lo:
        hi = lo
    return seed, float(lo if hi == lo else rng.uniform(lo, hi))


AIPERF_CASES = [
    (0, "trace-0", None, 0.0, 600000.0, 0.25, 0.75),
    (42, "trace-0", None, 1717000000000.0, 1717000900000.0, 0.25, 0.75),
    (42, "trace-0", 0, 1717000000000.0, 1717000900000.0, 0.25, 0.75),
    (42, "trace-0", 7, 1717000000000.0, 1717000900000.0, 0.0, 0.7),
    (123456789, "swe-bench/django__django-11099", None, 12.5, 98765.25, 0.1, 0.9),
    (7, "conv_\u00e9\u4e2d", 3, 0.0, 1.0, 0.0, 1.0),
    (2**64 - 1, "t", None, 100.0, 100.0, 0.25, 0.75),
]

print(json.dumps({"numpy_version": np.__version__, "sha_message": SHA_MESSAGE.decode()}))
for seed in SEEDS:
    draws = np.random.default_rng(seed)
    raw = np.random.default_rng(seed).bit_generator.random_raw(3)
    state = np.random.default_rng(seed).bit_generator.state["state"]
    uniform = []
    for lo, hi in RANGES:
        g = np.random.default_rng(seed)
        uniform.append([lo.hex(), hi.hex(), [float(g.uniform(lo, hi)).hex() for _ in range(3)]])
    print(json.dumps({
        "seed": str(seed),
        "state": str(state["state"]),
        "inc": str(state["inc"]),
        "raw": [str(int(r)) for r in raw],
        "random": [float(draws.random()).hex() for _ in range(5)],
        "uniform": uniform,
    }))
for base_seed, trace_id, lane, start_ms, end_ms, min_r, max_r in AIPERF_CASES:
    seed, t = t_star_ms(base_seed, trace_id, lane, start_ms, end_ms, min_r, max_r)
    print(json.dumps({
        "aiperf": {
            "base_seed": str(base_seed), "trace_id": trace_id, "lane": lane,
            "start_ms": start_ms.hex(), "end_ms": end_ms.hex(),
            "min_ratio": min_r.hex(), "max_ratio": max_r.hex(),
            "seed": str(seed), "t_star_ms": t.hex(),
        }
    }))
