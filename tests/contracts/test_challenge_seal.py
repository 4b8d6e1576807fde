"""Issue 11, attack 5: a copied challenge front-ran the honest challenger's reward.

Challenges are sealed (`commitChallenge`) and revealed (`challenge`) in a later block, the seal binding the
challenger's address. A copier that sees the honest reveal in the mempool can neither send it as its own (its
address is not in the seal) nor seal and reveal its own copy before the honest reveal is mined. Played with
automine off, so the copier's transactions really race the honest one in the same pending pool."""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount

from gensyn_py.chain.pool import challenge_hash
from tests.contracts.flows import commit_verdicts, reveal
from tests.contracts.helpers import CHALLENGER, DISPUTED, GAS, VERIFIED, Protocol
from tests.contracts.test_fair_slashing import _commit_until, _faked, _holdings
from tests.contracts.test_registry import expect


def _send(p: Protocol, acct: LocalAccount, fn: Any, tip: int) -> bytes:
    """Sign and send without waiting (automine is off): `tip` orders the block."""
    tx = fn.build_transaction({"from": acct.address, "gas": GAS, "nonce": p.w3.eth.get_transaction_count(
        acct.address, "pending"), "maxFeePerGas": 10**12, "maxPriorityFeePerGas": tip})
    return bytes(p.w3.eth.send_raw_transaction(acct.sign_transaction(tx).raw_transaction))


def _mine_one(p: Protocol) -> None:
    p.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def test_a_copied_challenge_cannot_front_run_the_sealed_one(proto: Protocol) -> None:
    p = proto
    solver, honest, copier = p.accounts[2], p.accounts[8], p.accounts[9]
    p.node(copier, CHALLENGER)
    p.submit(p.accounts[1])
    faked = 3
    work = _faked({faked})
    segs = _commit_until(p, solver, work, lambda s: faked not in s)  # the validators miss the fake
    truth = {v: (True, work.segments[segs[i]][2]) for i, v in enumerate(p.unit(1)["validators"])}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, work)
    assert p.unit(1)["status"] == VERIFIED
    copier_before = _holdings(p, copier.address)
    salt = b"\x11" * 32
    p.tx(honest, p.pool.functions.commitChallenge(1, challenge_hash(1, honest.address, faked, salt)))

    p.mine(1)  # the seal is in an earlier block: the honest reveal would pass now
    # Copy 1: the honest reveal's exact arguments, sent by the copier: its address is not in the seal.
    err = expect(p, "ChallengeNotSealed", copier, p.pool.functions.challenge(1, faked, salt))
    assert err.error_args["challenger"] == copier.address

    # Copy 2: the honest reveal waits in the mempool; the copier, having read its segment there, seals the same
    # segment and reveals it, both ordered before the honest reveal in the same block (the copier's best case,
    # as a block builder would order a higher tip): a seal from the same block does not count.
    p.w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        mine = b"\x22" * 32
        h_seal = _send(p, copier, p.pool.functions.commitChallenge(1, challenge_hash(1, copier.address, faked, mine)),
                       tip=10**9)
        h_copy = _send(p, copier, p.pool.functions.challenge(1, faked, mine), tip=10**9)
        h_honest = _send(p, honest, p.pool.functions.challenge(1, faked, salt), tip=1)
        _mine_one(p)
    finally:
        p.w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    receipts = {h: p.w3.eth.get_transaction_receipt(h) for h in (h_honest, h_seal, h_copy)}
    assert len({r["blockNumber"] for r in receipts.values()}) == 1  # one block, the copier's first
    assert receipts[h_seal]["status"] == 1 and receipts[h_copy]["status"] == 0 and receipts[h_honest]["status"] == 1
    assert receipts[h_copy]["transactionIndex"] < receipts[h_honest]["transactionIndex"]  # it did front-run
    unit = p.unit(1)
    assert unit["status"] == DISPUTED and unit["challenger"] == honest.address

    # Copy 3: revealing its own seal in a later block is too late: the unit is already disputed.
    expect(p, "BadUnitStatus", copier, p.pool.functions.challenge(1, faked, mine))
    assert _holdings(p, copier.address) == copier_before  # it lost nothing but gas, and gained nothing
    p.check_conservation()
