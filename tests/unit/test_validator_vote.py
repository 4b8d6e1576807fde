"""The validator daemon's committee vote: sealed first, its salt kept in the daemon state, so a daemon
restarted between the seal and the reveal reveals the vote it sealed (without replaying again). No chain:
a fake committee applies the contract's commit-reveal rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from gensyn_py.chain.committee import vote_hash
from gensyn_py.errors import ContractRevert
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.proof.replay import Verdict
from gensyn_py.types import Dispute, Seat, Vote

ME = "0x" + "11" * 20
OTHER = "0x" + "22" * 20


class Quiet:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


class FakeCommittee:
    """Dispute 5, round 0, two seats (this node and another); the commit phase ends at t=100."""

    def __init__(self) -> None:
        self.d = Dispute(5, 9, "0x" + "33" * 20, "0x" + "44" * 20, 1, 0, True, False, 10, 1, 2, 100, 200, 0, 0, 0,
                         0, 0, 100, bytes(32), (ME, OTHER))
        self.commitments: dict[str, bytes] = {}
        self.votes: dict[str, bool] = {}
        self.now = 50

    def get_dispute(self, did: int) -> Dispute:
        return self.d

    def seat_of(self, did: int, member: str) -> Seat:
        return Seat(1, 0, member in self.commitments, self.commitments.get(member, bytes(32)))

    def vote_of(self, did: int, member: str) -> Vote:
        v = self.votes.get(member)
        return Vote.NONE if v is None else (Vote.SOLVER_HONEST if v else Vote.SOLVER_FRAUD)

    def commit_vote(self, did: int, h: bytes) -> None:
        if self.now > self.d.commit_deadline:
            raise ContractRevert("VotingClosed", {})
        self.commitments[ME] = h
        self.d = dataclasses.replace(self.d, committed=self.d.committed + 1)

    def reveal_vote(self, did: int, honest: bool, salt: bytes) -> None:
        if self.d.committed < 2 and self.now <= self.d.commit_deadline:
            raise ContractRevert("RevealNotOpen", {})
        assert vote_hash(did, ME, honest, salt) == self.commitments[ME]
        self.votes[ME] = honest


class View:
    def unit(self, unit_id: int) -> Any:
        return object()

    def dispute_of(self, unit_id: int) -> tuple[int, int]:
        return (5, 3)


def daemon(state: DaemonState, committee: FakeCommittee, verdict: Verdict | None) -> ValidatorDaemon:
    v = ValidatorDaemon.__new__(ValidatorDaemon)
    v.state, v.committee, v.view, v.address = state, committee, View(), ME  # type: ignore[assignment]
    v.log = v.metrics = Quiet()  # type: ignore[assignment]

    def replay(unit: Any, segment: int) -> Verdict:
        assert verdict is not None, "a restarted daemon must not replay again: its vote is kept"
        assert segment == 3
        return verdict

    v.replay = replay  # type: ignore[method-assign]
    return v


def test_a_restarted_daemon_reveals_the_vote_it_sealed(tmp_path: Path) -> None:
    chain = FakeCommittee()
    with DaemonState(tmp_path / "s.sqlite") as state:
        daemon(state, chain, Verdict(False, 3, None, "differs"))._vote(chain.d, 9, chain.now)
    assert ME in chain.commitments and ME not in chain.votes  # sealed; the other member has not sealed yet
    chain.now = 101  # the commit phase ended: reveals open
    with DaemonState(tmp_path / "s.sqlite") as state:  # a new process on the same state
        daemon(state, chain, None)._vote(chain.d, 9, chain.now)
    assert chain.votes[ME] is False  # the sealed side, revealed with the kept salt


def test_a_seal_too_late_is_recorded_refused(tmp_path: Path) -> None:
    chain = FakeCommittee()
    chain.now = 150
    with DaemonState(tmp_path / "s.sqlite") as state:
        daemon(state, chain, Verdict(True, 3, None, "ok"))._vote(chain.d, 9, chain.now)
        assert state.is_done(("dcommit", 5, 0))
    assert not chain.commitments
