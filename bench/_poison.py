"""`poison_delay_ratio` for bench/e2e.py: how long a good job waits to be claimed behind poison jobs.

Each repetition submits a good 1 x 1 job with nothing ahead of it, waits for it to complete, then submits
5 fresh poison jobs of different kinds (`gensyn_py.sim.poison.BENCH_KINDS`: a spec CID in no store,
out-of-range labels, a dataset in no store, a model of 10^12 hidden units, more rounds on-chain than in
the spec) straight to `submitJob` and the same good job right after them. Time to claim = submission to
the appearance of the block holding the first `UnitClaimed` of the good job (the `BlockClock`).
The ratio is the median poisoned time over the median clean time, measured in the same run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench._market import BlockClock, Market
from gensyn_py.sim.localnet import wait_until
from gensyn_py.sim.poison import BENCH_KINDS, KINDS, PoisonKit


def _time_to_claim(market: Market, clock: BlockClock, job: int, t0: float) -> float:
    units = [int(e["args"]["unitId"]) for e in market.pool_logs("UnitOpened", jobId=job)]

    def claimed() -> int | None:
        logs = [e for u in units for e in market.pool_logs("UnitClaimed", unitId=u)]
        return min(int(e["blockNumber"]) for e in logs) if logs else None

    block = wait_until(claimed, 120, f"job {job} to be claimed", every=0.1, on_wait=market.check_alive)
    seen = clock.at(block)
    return (seen if seen is not None else float(market.block_time(block))) - t0


def poison_delay(market: Market, clock: BlockClock, good_spec: Callable[[int], dict[str, Any]], reps: int,
                 report: Callable[[str], None]) -> dict[str, Any]:
    kit = PoisonKit(market, steps=40, window=60)
    clean: list[float] = []
    poisoned: list[float] = []
    poison_jobs: dict[str, list[int]] = {k: [] for k in BENCH_KINDS}
    for rep in range(reps):
        job, t0 = market.submit_timed(good_spec(2000 + 2 * rep), commit_window=60)
        clean.append(_time_to_claim(market, clock, job, t0))
        market.wait_jobs([job], 180)
        kit.seed = 3000 + rep  # fresh poison each time: a solver remembers what it quarantined
        for kind in BENCH_KINDS:
            poison_jobs[kind].append(KINDS[kind](kit))
        job, t0 = market.submit_timed(good_spec(2001 + 2 * rep), commit_window=60)
        poisoned.append(_time_to_claim(market, clock, job, t0))
        market.wait_jobs([job], 180)
        report(f"poison: repetition {rep + 1}/{reps}: claimed after {clean[-1]:.2f} s clean, "
               f"{poisoned[-1]:.2f} s behind {len(BENCH_KINDS)} poison jobs")
    ratio = statistics.median(poisoned) / statistics.median(clean)
    return {"poison_delay_ratio": round(ratio, 3),
            "claim_s_clean": [round(t, 2) for t in clean], "claim_s_poisoned": [round(t, 2) for t in poisoned],
            "poison_kinds": list(BENCH_KINDS), "poison_jobs": poison_jobs}
