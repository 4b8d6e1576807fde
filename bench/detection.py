"""Detection economics: the cost of verifying one segment vs training it, and what
catching a cheater with 99% probability costs validators.

1. Measures training one segment (with proof generation) and verifying it
   (fetch checkpoint, Merkle proof, replay, hash) -> replay_cost_ratio.
2. A solver fakes a fraction f of an N-segment job; each validator replays the
   segment the sampler assigns it. m validators catch the cheat with
   probability 1 - (1 - f)^m; the compute spent is m * verify / (N * train).
   The sampler's uniformity is checked by simulation with real keccak draws.
Prints one JSON line last.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._trainjob import DEFAULT_INTERVAL, bench_job


def validators_needed(fraction: float, confidence: float = 0.99) -> int:
    return math.ceil(math.log(1 - confidence) / math.log(1 - fraction))


def simulated_catch_rate(fraction: float, num_segments: int, validators: int, trials: int) -> float:
    """Catch rate with real sampler draws against a random set of faked segments."""
    import numpy as np

    from gensyn_py.crypto.hashing import keccak256
    from gensyn_py.proof.sampler import segment_for

    rng = np.random.Generator(np.random.PCG64(0))
    caught = 0
    for trial in range(trials):
        faked = set(rng.choice(num_segments, int(fraction * num_segments), replace=False).tolist())
        seed = keccak256(b"block-randomness-%d" % trial)
        if any(segment_for(seed, i, num_segments) in faked for i in range(validators)):
            caught += 1
    return caught / trials


def measure(reps: int = 5) -> tuple[float, float, float]:
    """Median (train one segment with proofs, verify one, verify/train ratio) over alternating reps."""
    import statistics

    from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.storage.local import LocalStore
    from gensyn_py.train.trainer import Trainer

    segments = 2
    spec, ds = bench_job(segments * DEFAULT_INTERVAL)
    train, verify = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            store = LocalStore(Path(tmp) / str(r))
            start = time.perf_counter()
            c = commit_segments(Trainer(spec, ds, 0, 0, "cpu"), store, job_id=1)
            train.append((time.perf_counter() - start) / segments)
            unit = UnitRef(1, 0, 0, c.checkpoint_root)
            start = time.perf_counter()
            verdict = replay_segment(spec, ds, store, unit, fetch_manifest(store, c.manifest_cid), r % 2)
            verify.append(time.perf_counter() - start)
            assert verdict.accept, verdict.reason
    ratios = [v / t for t, v in zip(train, verify, strict=True)]
    return statistics.median(train), statistics.median(verify), statistics.median(ratios)


def main() -> None:
    train_s, verify_s, ratio = measure()
    table = []
    for n in (100, 1000, 10000):
        for f in (0.01, 0.05, 0.1, 0.25):
            m = validators_needed(f)
            if f * n < 1:
                continue
            table.append({"segments": n, "faked_fraction": f, "validators_99pct": m,
                          "verify_cost_fraction": round(m * ratio / n, 5)})
    m10 = validators_needed(0.10)
    simulated = simulated_catch_rate(0.10, 1000, m10, trials=2000)
    for row in table:
        print(row, file=sys.stderr)
    print(json.dumps({
        "bench": "detection",
        "checkpoint_interval": DEFAULT_INTERVAL,
        "train_segment_s": round(train_s, 4),
        "verify_segment_s": round(verify_s, 4),
        "replay_cost_ratio": round(ratio, 4),
        "validators_for_99pct_at_10pct_of_1000": m10,
        "simulated_catch_rate": simulated,
        "verify_cost_fraction_at_99pct": round(m10 * ratio / 1000, 5),
        "table": table,
    }))


if __name__ == "__main__":
    main()
