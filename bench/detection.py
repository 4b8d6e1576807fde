"""Detection economics: the cost of verifying one segment vs training it, and what
catching a cheater with 99% probability costs validators.

1. Measures training one segment (with proof generation) and verifying it
   (fetch checkpoint, Merkle proof, replay, hash) -> replay_cost_ratio.
2. A solver fakes a fraction f of an N-segment job; each validator replays the
   segment the sampler assigns it, without replacement (`Segments.segmentIndex`,
   stratified). m validators catch the cheat with probability
   1 - C(N - fN, m) / C(N, m) (at least 1 - (1 - f)^m, the with-replacement
   figure); the compute spent is m * verify / (N * train). The sampler is checked
   by simulation with real keccak draws.
3. The economics the pool enforces (`Units.minCollateral`): one faked segment of
   N is caught by the V = validatorsPerUnit validators alone with probability
   min(V, N) / N, so faking does not pay when
   collateral >= price * (N - min(V, N)) / min(V, N). Printed for the defaults.
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


def catch_probability(fraction: float, num_segments: int, validators: int) -> float:
    """Exact: m distinct segments sampled, at least one of the f * N faked ones among them."""
    faked = round(fraction * num_segments)
    m = min(validators, num_segments)
    return 1 - math.comb(num_segments - faked, m) / math.comb(num_segments, m)


def validators_needed(fraction: float, num_segments: int, confidence: float = 0.99) -> int:
    return next(m for m in range(1, num_segments + 1) if catch_probability(fraction, num_segments, m) >= confidence)


def simulated_catch_rate(fraction: float, num_segments: int, validators: int, trials: int) -> float:
    """Catch rate with real sampler draws against a random set of faked segments."""
    import numpy as np

    from gensyn_py.crypto.hashing import keccak256
    from gensyn_py.proof.sampler import segments_for

    rng = np.random.Generator(np.random.PCG64(0))
    caught = 0
    for trial in range(trials):
        faked = set(rng.choice(num_segments, int(fraction * num_segments), replace=False).tolist())
        seed = keccak256(b"block-randomness-%d" % trial)
        if any(j in faked for j in segments_for(seed, validators, num_segments)):
            caught += 1
    return caught / trials


def economics() -> dict[str, object]:
    """The least collateral per unit, as a multiple of the price, for the default validators per unit."""
    from gensyn_py.devnet.deploy import DEFAULT_PARAMS
    from gensyn_py.proof.sampler import min_collateral

    v = int(DEFAULT_PARAMS["validatorsPerUnit"])
    price = 10**18
    rows = {n: round(min_collateral(price, n, v) / price, 3) for n in (1, 2, 4, 5, 10, 30, 100, 1000, 4096)}
    return {"validators_per_unit": v, "formula": "collateral >= price * (N - min(V, N)) / min(V, N)",
            "min_collateral_over_price_by_segments": rows}


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
            if f * n < 1:
                continue
            m = validators_needed(f, n)
            table.append({"segments": n, "faked_fraction": f, "validators_99pct": m,
                          "verify_cost_fraction": round(m * ratio / n, 5)})
    m10 = validators_needed(0.10, 1000)
    simulated = simulated_catch_rate(0.10, 1000, m10, trials=2000)
    for row in table:
        print(row, file=sys.stderr)
    econ = economics()
    print(f"economics: {econ}", file=sys.stderr)
    print(json.dumps({
        "bench": "detection",
        "checkpoint_interval": DEFAULT_INTERVAL,
        "train_segment_s": round(train_s, 4),
        "verify_segment_s": round(verify_s, 4),
        "replay_cost_ratio": round(ratio, 4),
        "validators_for_99pct_at_10pct_of_1000": m10,
        "exact_catch_rate": round(catch_probability(0.10, 1000, m10), 4),
        "simulated_catch_rate": simulated,
        "verify_cost_fraction_at_99pct": round(m10 * ratio / 1000, 5),
        "economics": econ,
        "table": table,
    }))


if __name__ == "__main__":
    main()
