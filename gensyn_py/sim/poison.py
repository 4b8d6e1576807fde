"""Poison jobs: what a hostile requester can put on the pool for gas alone, each sent straight to `submitJob`.

Every kind passes the contract's checks (it is a well-formed `submitJob`), and every kind is one an honest
solver must refuse before it claims: content that cannot be fetched or parsed, content that contradicts the
on-chain shape, a model that does not fit the node, training that cannot finish inside the commit window.
The real-daemon tests (``tests/integration/test_poison_jobs.py``) and ``bench/e2e.py``'s
`poison_delay_ratio` submit them ahead of a good job and measure how long the good one waits.

A kind is a function of a `PoisonKit` (the market's requester, a good spec to corrupt) returning the job id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import job_params
from gensyn_py.sim.market import MAX_PRICE, Market, digits_job_spec
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.train.data import Dataset, digits
from gensyn_py.train.spec import canonical_json, parse_spec
from gensyn_py.types import JobParams


@dataclass
class PoisonKit:
    """Submits raw jobs from the market's requester; `steps`, `window` and `seed` shape the good spec it corrupts."""

    market: Market
    steps: int = 40
    window: int = 60
    seed: int = 900

    def good_spec(self, dataset: Dataset | None = None, seed: int | None = None) -> dict[str, Any]:
        data = dataset if dataset is not None else digits(image=False)[0]
        return digits_job_spec(self.market.put_dataset(data), 1, 1, self.steps, seed if seed is not None else self.seed)

    def store_spec(self, spec: dict[str, Any]) -> tuple[str, bytes]:
        """Store the spec's canonical bytes: (CID, keccak256 of those bytes)."""
        data = canonical_json(parse_spec(spec).model_dump(mode="json"))
        return self.market.requester.store.put(data), keccak256(data)

    def submit_raw(self, spec: dict[str, Any], spec_cid: str, spec_hash: bytes, window: int | None = None,
                   **shape: Any) -> int:
        """`submitJob` with these content ids and the spec's shape, `shape` overriding fields of `JobParams`."""
        requester = self.market.requester
        parsed = parse_spec(spec)
        fields: dict[str, Any] = {"spec_hash": spec_hash, **shape}
        # enough collateral for the pool to accept the job: poison passes every check of the contract
        steps = fields.get("steps_per_unit", parsed.steps_per_unit)
        fields["collateral_per_unit"] = self.market.collateral_for(
            steps // fields.get("checkpoint_interval", parsed.checkpoint_interval))
        offer = Offer(MAX_PRICE, 0, window if window is not None else self.window)
        params: JobParams = dataclasses.replace(job_params(parsed, spec_cid, offer), **fields)
        if requester.token.allowance(requester.address, requester.pool.address) < 2**255:
            requester.token.approve(requester.pool.address, 2**256 - 1)
        receipt = requester.pool.submit_job(params)
        return int(requester.pool.events(receipt, "JobSubmitted")[0]["jobId"])

    def submit_stored(self, spec: dict[str, Any], window: int | None = None, **shape: Any) -> int:
        cid, digest = self.store_spec(spec)
        return self.submit_raw(spec, cid, digest, window, **shape)


def absent_spec(kit: PoisonKit) -> int:
    """A well-formed spec CID whose bytes are in no store."""
    spec = kit.good_spec()
    absent = canonical_json({**spec, "seed": kit.seed + 10_000})
    return kit.submit_raw(spec, cid_for_bytes(absent), keccak256(absent))


def not_a_cid(kit: PoisonKit) -> int:
    """A spec "CID" that is not a CID at all."""
    spec = kit.good_spec()
    return kit.submit_raw(spec, "not-a-cid", keccak256(b"not-a-cid"))


def unparseable_spec(kit: PoisonKit) -> int:
    """Stored spec bytes that are not a JSON job spec (their hash is on-chain, so they verify)."""
    data = b'{"version": 1, "model": '
    return kit.submit_raw(kit.good_spec(), kit.market.requester.store.put(data), keccak256(data))


def labels_out_of_range(kit: PoisonKit) -> int:
    """A correct spec over a verified dataset whose labels are 10..19, for a 10-class model."""
    train = digits(image=False)[0]
    shifted = Dataset(train.x, (np.asarray(train.y) + 10).astype(np.asarray(train.y).dtype))
    return kit.submit_stored(kit.good_spec(shifted))


def missing_dataset(kit: PoisonKit) -> int:
    """A stored spec naming a dataset whose bytes are in no store."""
    spec = kit.good_spec()
    spec["dataset"] = {**spec["dataset"], "cid": cid_for_bytes(b"a dataset nobody stored " + bytes([kit.seed % 256]))}
    return kit.submit_stored(spec)


def huge_model(kit: PoisonKit) -> int:
    """An MLP with 10^12 hidden units: terabytes of weights (mode exact: repro refuses such widths at parse)."""
    spec = kit.good_spec()
    spec["model"] = {"family": "mlp", "sizes": {"hidden": 10**12}}
    spec["mode"] = "exact"
    return kit.submit_stored(spec)


def too_slow_for_window(kit: PoisonKit) -> int:
    """100,000 steps of a wide MLP to be committed within 30 s of the claim."""
    spec = kit.good_spec()
    spec["model"] = {"family": "mlp", "sizes": {"hidden": 4096}}
    spec["steps_per_unit"], spec["checkpoint_interval"] = 100_000, 1000
    return kit.submit_stored(spec, window=30)


def more_rounds_on_chain(kit: PoisonKit) -> int:
    """The pool opens 2 rounds; the spec trains 1."""
    return kit.submit_stored(kit.good_spec(), rounds=2)


def more_shards_on_chain(kit: PoisonKit) -> int:
    """The pool opens 2 shards a round; the spec trains 1."""
    return kit.submit_stored(kit.good_spec(), shards=2)


def more_segments_on_chain(kit: PoisonKit) -> int:
    """The pool counts twice the spec's checkpoint segments (half the interval on-chain)."""
    spec = kit.good_spec()
    return kit.submit_stored(spec, checkpoint_interval=int(spec["checkpoint_interval"]) // 2)


def wrong_step_table(kit: PoisonKit) -> int:
    """A good repro spec whose on-chain step table root is not the spec's: a dispute game would judge the
    steps of an honest solver against another program or batch, and convict it."""
    return kit.submit_stored(kit.good_spec(), steps_root=keccak256(b"another job's step table"))


PoisonKind = Callable[[PoisonKit], int]

KINDS: dict[str, PoisonKind] = {
    "absent_spec": absent_spec,
    "not_a_cid": not_a_cid,
    "unparseable_spec": unparseable_spec,
    "labels_out_of_range": labels_out_of_range,
    "missing_dataset": missing_dataset,
    "huge_model": huge_model,
    "too_slow_for_window": too_slow_for_window,
    "more_rounds_on_chain": more_rounds_on_chain,
    "more_shards_on_chain": more_shards_on_chain,
    "more_segments_on_chain": more_segments_on_chain,
    "wrong_step_table": wrong_step_table,
}

# The bench's five: one of each way a job fails (unfetchable, inconsistent content, does not fit, wrong shape).
BENCH_KINDS = ("absent_spec", "labels_out_of_range", "missing_dataset", "huge_model", "more_rounds_on_chain")
