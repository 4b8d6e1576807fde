"""Gas of the data-availability paths (contracts/libraries/DataAvailability.sol), for `bench/gas.py`.

Three units on the bench's deployment: a validator reports its segment unavailable and the solver answers (the
validator then reveals its accept); the requester claims a verified unit's model unavailable and the solver
answers; a solver withholds and is slashed by `closeVerdicts`. The last one jails the solver: play it last.
"""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from gensyn_py.chain.pool import encode_answer
from gensyn_py.types import REQUESTER_SLOT, UNAVAILABLE_MARK, SegmentLeaf
from tests.contracts.helpers import Protocol, Work, transcript_commit

ZERO = bytes(32)


def _leaf(work: Work, j: int) -> SegmentLeaf:
    start, end, th = work.segments[j]
    return SegmentLeaf(j, start, end, transcript_commit(th), tuple(work.proof(j)))


def _committed(p: Protocol, requester: LocalAccount, solver: LocalAccount, keeper: LocalAccount, work: Work) -> int:
    unit_id = int(p.pool.functions.nextUnitId().call())
    p.submit(requester)
    p.advance(p.params["claimWindow"])
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.tx(solver, p.pool.functions.commit(unit_id, work.root, work.final_hash, "bafymanifest"))
    p.mine(2)
    p.tx(keeper, p.pool.functions.drawValidators(unit_id))
    return unit_id


def _seal(p: Protocol, unit_id: int, v: str, accept: bool, th: bytes) -> bytes:
    salt = keccak(b"salt" + bytes.fromhex(v[2:]))
    p.tx(p.by_address(v), p.pool.functions.commitVerdict(unit_id, p.verdict_hash(unit_id, v, accept, th, salt)))
    return salt


def _reveal(p: Protocol, unit_id: int, v: str, slot: int, work: Work, salt: bytes) -> None:
    seg = p.segment_of(unit_id, slot)
    start, end, th = work.segments[seg]
    p.tx(p.by_address(v), p.pool.functions.revealVerdict(
        unit_id, True, th, salt, start, end, transcript_commit(th), work.proof(seg)))


def _answer(p: Protocol, solver: LocalAccount, unit_id: int, slot: int, work: Work) -> None:
    n = len(work.segments)
    seg = n - 1 if slot == REQUESTER_SLOT else p.segment_of(unit_id, slot)
    data = encode_answer(_leaf(work, seg), _leaf(work, n - 1), '{"manifest": "bafymanifest"}')
    p.tx(solver, p.pool.functions.answerUnavailable(unit_id, slot, data))


def _last(p: Any, name: str) -> int:
    return int(next(g for n, g in reversed(p.log) if n == name))


def play_availability(p: Any, requester: LocalAccount, solver: LocalAccount, keeper: LocalAccount) -> dict[str, int]:
    """{action: gas} of report, answer, requester claim, claim answer and the slash of an unanswered report."""
    out: dict[str, int] = {}
    work = Work.honest(4)
    # 1. slot 0 reports unavailable, the solver answers, slot 0 reveals its accept; slot 1 accepts
    uid = _committed(p, requester, solver, keeper, work)
    v0, v1 = p.unit(uid)["validators"][:2]
    s0 = _seal(p, uid, v0, False, UNAVAILABLE_MARK)
    s1 = _seal(p, uid, v1, True, work.segments[p.segment_of(uid, 1)][2])
    p.tx(p.by_address(v0), p.pool.functions.revealVerdict(uid, False, UNAVAILABLE_MARK, s0, ZERO, ZERO, ZERO, []))
    out["revealVerdict(unavailable report)"] = _last(p, "revealVerdict")
    _answer(p, solver, uid, 0, work)
    out["answerUnavailable(validator slot)"] = _last(p, "answerUnavailable")
    _reveal(p, uid, v1, 1, work, s1)
    _reveal(p, uid, v0, 0, work, ZERO)
    out["revealVerdict(after answer, verifies)"] = _last(p, "revealVerdict")
    # 2. the requester claims the verified model missing; the solver answers; the unit finalizes
    p.tx(requester, p.pool.functions.claimUnavailable(uid))
    out["claimUnavailable"] = _last(p, "claimUnavailable")
    _answer(p, solver, uid, REQUESTER_SLOT, work)
    out["answerUnavailable(requester claim)"] = _last(p, "answerUnavailable")
    p.advance(p.pool.functions.getUnit(uid).call()[7] - p.now() + 1)
    p.tx(keeper, p.pool.functions.finalize(uid))
    # 3. both validators report, nobody answers: closeVerdicts slashes the solver and reopens the unit
    uid = _committed(p, requester, solver, keeper, work)
    validators = p.unit(uid)["validators"]
    salts = [_seal(p, uid, v, False, UNAVAILABLE_MARK) for v in validators]
    for v, salt in zip(validators, salts, strict=True):
        p.tx(p.by_address(v), p.pool.functions.revealVerdict(uid, False, UNAVAILABLE_MARK, salt, ZERO, ZERO, ZERO, []))
    until = max(p.pool.functions.availability(uid).call()[0], p.unit(uid)["revealDeadline"])
    p.advance(until - p.now() + 1)
    p.tx(keeper, p.pool.functions.closeVerdicts(uid))
    out["closeVerdicts(unanswered: slash + reopen)"] = _last(p, "closeVerdicts")
    p.check_conservation()
    return out
