"""Poison jobs on a real market: a spec CID absent from the store and labels beyond the model's classes.

Each is submitted straight to the pool (the typed wrapper, no requester checks), then a good job.
The good job is claimed about as fast as one submitted with no poison ahead of it (measured in the
same test), no daemon exits, nobody honest is slashed, money is conserved, and the solvers list
the poison jobs in their quarantine.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest

from gensyn_py.chain.view import ChainView
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import job_params
from gensyn_py.sim.localnet import LocalNetwork, wait_until
from gensyn_py.sim.market import COLLATERAL, MAX_PRICE, Market, digits_job_spec
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.train.data import Dataset, digits
from gensyn_py.train.spec import canonical_json, parse_spec
from gensyn_py.types import UnitStatus
from tests.integration.market_kit import assert_conservation, protocol, slashes, start_market, submit, wait_job

STEPS = 40
WINDOW = 60


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    net = start_market(tmp_path_factory.mktemp("poison"))
    try:
        yield net
    finally:
        net.stop()


def _time_to_claim(net: LocalNetwork, job: int, since: float, timeout: float = 90) -> float:
    view = ChainView(protocol(net))

    def claimed() -> bool:
        return any(u.status is not UnitStatus.OPEN for u in view.units(job))

    wait_until(claimed, timeout, f"job {job} to be claimed", every=0.2, on_wait=net.check_alive)
    return time.monotonic() - since


def _submit_raw(net: LocalNetwork, spec_cid: str, spec_hash: bytes, spec: dict[str, object]) -> int:
    """`submitJob` with these content ids, the shape taken from `spec`: no requester-side checks."""
    market = Market(net, requester_tokens=0)
    requester = market.requester
    pool = requester.pool
    params = job_params(parse_spec(spec), spec_cid, Offer(MAX_PRICE, COLLATERAL, WINDOW))
    requester.token.approve(pool.address, 2**256 - 1)
    receipt = pool.submit_job(dataclasses.replace(params, spec_hash=spec_hash))
    return int(pool.events(receipt, "JobSubmitted")[0]["jobId"])


def _quarantined(net: LocalNetwork) -> dict[int, str]:
    """Job -> reason, from every solver's `gensyn solver quarantine list`."""
    jobs: dict[int, str] = {}
    for node in net.nodes.values():
        if node.role != "solver":
            continue
        out = subprocess.run([sys.executable, "-m", "gensyn_py.cli", "solver", "quarantine", "list", "--json",
                              "--state-dir", str(node.state_dir)], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            if line.strip():
                entry = json.loads(line)
                jobs[int(entry["job"])] = str(entry["reason"])
    return jobs


def test_poison_jobs_are_quarantined_and_do_not_delay_a_good_job(market: LocalNetwork) -> None:
    net = market
    start = int(net.w3.eth.block_number)
    store = Market(net, requester_tokens=0).requester.store

    warm_up = submit(net, steps=STEPS, seed=1, commit_window=WINDOW)  # the market's first job pays start-up costs
    first = _time_to_claim(net, warm_up, time.monotonic())
    wait_job(net, warm_up)
    began = time.monotonic()
    baseline_job = submit(net, steps=STEPS, seed=2, commit_window=WINDOW)
    baseline = _time_to_claim(net, baseline_job, began)
    wait_job(net, baseline_job)

    # 1. a well-formed spec CID that is not in the store
    good_spec = digits_job_spec(Market(net, requester_tokens=0).put_dataset(digits(image=False)[0]), 1, 1, STEPS, 3)
    absent = canonical_json({**good_spec, "seed": 999})
    missing_job = _submit_raw(net, cid_for_bytes(absent), keccak256(absent), good_spec)
    # 2. labels 10..19 for a 10-class model (a correct spec, a verified dataset)
    train = digits(image=False)[0]
    shifted = Dataset(train.x, (np.asarray(train.y) + 10).astype(np.asarray(train.y).dtype))
    bad_spec = digits_job_spec(Market(net, requester_tokens=0).put_dataset(shifted), 1, 1, STEPS, 4)
    bad_bytes = canonical_json(parse_spec(bad_spec).model_dump(mode="json"))
    labels_job = _submit_raw(net, store.put(bad_bytes), keccak256(bad_bytes), bad_spec)

    began = time.monotonic()
    good_job = submit(net, steps=STEPS, seed=5, commit_window=WINDOW)
    poisoned = _time_to_claim(net, good_job, began)
    wait_job(net, good_job)
    print(f"time to claim: first job {first:.1f} s; {baseline:.1f} s with no poison, "
          f"{poisoned:.1f} s behind two poison jobs")

    assert poisoned <= 2 * baseline + 5, (baseline, poisoned)
    wait_until(lambda: {missing_job, labels_job} <= set(_quarantined(net)), 30, "the poison jobs in quarantine")
    reasons = _quarantined(net)
    assert reasons[missing_job].startswith("ContentNotFound"), reasons
    assert "labels span 10..19" in reasons[labels_job], reasons
    view = ChainView(protocol(net))
    for job in (missing_job, labels_job):
        assert all(u.status is UnitStatus.OPEN for u in view.units(job)), f"job {job} was claimed"
    net.check_alive()
    assert slashes(net, start) == []
    assert_conservation(net)
