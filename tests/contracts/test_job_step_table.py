"""A repro job commits its step table (`JobParams.stepsRoot`, `gensyn_py/proof/step_table.py`): the pool keeps
the root and the steps per segment for the dispute game, and refuses one on an exact job."""

from __future__ import annotations

from eth_utils import keccak

from tests.contracts.helpers import Protocol
from tests.contracts.test_registry import expect

REPRO, EXACT = 0, 1


def test_a_repro_job_keeps_its_step_table_and_steps_per_segment(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    root = keccak(b"the job's step table")
    with_table = p.submit(a[1], verification=REPRO, stepsRoot=root, stepsPerUnit=12, checkpointInterval=3)
    without = p.submit(a[1], verification=REPRO)
    assert p.pool.functions.stepTable(with_table).call() == [root, 3]
    assert p.pool.functions.stepTable(without).call() == [bytes(32), 0]  # no table: disputes go to the committee
    p.check_conservation()


def test_an_exact_job_with_a_step_table_is_refused(proto: Protocol) -> None:
    p, a = proto, proto.accounts
    before = p.pool.functions.nextJobId().call()
    err = expect(p, "InvalidJobParams", a[1],
                 p.pool.functions.submitJob(p.job_params(verification=EXACT, stepsRoot=keccak(b"table"))))
    assert err.error_args["field"] == "stepsRoot"
    assert p.pool.functions.nextJobId().call() == before  # nothing stored, nothing escrowed
