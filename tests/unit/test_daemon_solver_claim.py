"""The solver logs `unit.claimed` (and follows the unit as its own) only for units it claimed."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web3 import Web3

from gensyn_py.errors import ContractRevert
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.state import DaemonState, action_key
from gensyn_py.types import Unit, UnitStatus
from tests.unit.test_daemon_cycle import FakeReader

ME = Web3.to_checksum_address("0x" + "aa" * 20)
RIVAL = Web3.to_checksum_address("0x" + "bb" * 20)
NOBODY = "0x" + "00" * 20
OPENED_AT = 1_000


def open_unit(unit_id: int = 7) -> Unit:
    return Unit(
        unit_id=unit_id, job_id=1, round=0, shard=0, status=UnitStatus.OPEN, solver=NOBODY, price=0,
        opened_at=OPENED_AT, deadline=0, seed_block=0, commit_deadline=0, reveal_deadline=0, drawn=False,
        committed=0, revealed=0, checkpoint_root=b"\0" * 32, seed=b"\0" * 32, opener=RIVAL, challenger=NOBODY,
        dispute_id=0, validators=(),
    )


class FakeChain:
    """The unit as the chain has it (`view.unit`) and the pool's `claim`, which may land, revert or race."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.claims: list[int] = []
        self.revert: str | None = None  # the claim reverts with this error
        self.rival_wins = False  # another solver's claim lands first, so ours reverts

    def view_unit(self, unit_id: int) -> Unit:
        assert unit_id == self.unit.unit_id
        return self.unit

    def claim(self, unit_id: int) -> str:
        self.claims.append(unit_id)
        if self.rival_wins:
            self.unit = dataclasses.replace(self.unit, status=UnitStatus.ASSIGNED, solver=RIVAL)
            raise ContractRevert("BadUnitStatus")
        if self.revert is not None:
            raise ContractRevert(self.revert)
        self.unit = dataclasses.replace(self.unit, status=UnitStatus.ASSIGNED, solver=ME)
        return "0x" + "cd" * 32


class Events:
    """Stands in for the daemon's EventLogger: records every event name logged."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def _record(self, event: str, **_fields: Any) -> None:
        self.names.append(event)

    debug = info = warning = error = exception = _record


def bare_solver(state: DaemonState, chain: FakeChain) -> tuple[SolverDaemon, Events]:
    """A SolverDaemon without a chain: just what claiming touches."""
    daemon = SolverDaemon.__new__(SolverDaemon)
    Daemon.__init__(daemon, "solver-test", Web3(), {}, state, reader=FakeReader(state.cursor, []))
    daemon.address = ME
    daemon.view = type("View", (), {"unit": staticmethod(chain.view_unit)})()  # type: ignore[assignment]
    daemon.pool = type("Pool", (), {"claim": staticmethod(chain.claim)})()  # type: ignore[assignment]
    events = Events()
    daemon.log = events  # type: ignore[assignment]
    return daemon, events


@pytest.fixture
def state(tmp_path: Path) -> Iterator[DaemonState]:
    with DaemonState(tmp_path / "state.sqlite") as s:
        yield s


def claim_key(unit: Unit) -> tuple[str, int, int]:
    return ("claim", unit.unit_id, unit.opened_at)


def action_key_str(unit: Unit) -> str:
    return action_key(claim_key(unit))


def test_a_claim_that_lands_is_logged_and_followed(state: DaemonState) -> None:
    chain = FakeChain(open_unit())
    solver, events = bare_solver(state, chain)
    solver.follow("open", 7)
    assert solver._claim(chain.unit) is True
    assert events.names.count("unit.claimed") == 1
    assert solver.followed("mine") == [(7, True)] and solver.followed("open") == []
    assert solver.metrics.value("gensyn_actions_total", kind="claim") == 1


def test_a_lost_race_is_a_miss_not_a_claim(state: DaemonState) -> None:
    chain = FakeChain(open_unit())
    chain.rival_wins = True
    solver, events = bare_solver(state, chain)
    assert solver._claim(chain.unit) is False
    assert "unit.claimed" not in events.names and "unit.claim_missed" in events.names
    assert solver.followed("mine") == []
    assert not solver.metrics.value("gensyn_actions_total", kind="claim")


@pytest.mark.parametrize("reason", ["InsufficientFreeStake", "NodeJailed", "PriceTooHigh", "HardwareMismatch"])
def test_a_unit_missed_earlier_is_never_logged_as_claimed(state: DaemonState, reason: str) -> None:
    """The miss is recorded done for the epoch; the unit stays open, so the next cycle asks again."""
    unit = open_unit()
    chain = FakeChain(unit)
    chain.revert = reason
    solver, events = bare_solver(state, chain)
    solver.follow("open", 7)
    assert solver._claim(unit) is False  # the first cycle: the claim reverts
    assert state.is_done(claim_key(unit))
    assert solver._claim(chain.unit) is False  # the next cycle: the unit is still open, the action done
    assert chain.claims == [7]  # not sent twice
    assert "unit.claimed" not in events.names
    assert solver.followed("mine") == [] and solver.followed("open") == []
    assert not solver.metrics.value("gensyn_actions_total", kind="claim")


def test_a_unit_settled_earlier_and_won_by_another_solver_is_not_ours(state: DaemonState) -> None:
    unit = open_unit()
    chain = FakeChain(dataclasses.replace(unit, status=UnitStatus.ASSIGNED, solver=RIVAL))
    state.mark_done(action_key_str(unit), detail="missed: ScoreTooLow")
    solver, events = bare_solver(state, chain)
    assert solver._claim(unit) is False
    assert chain.claims == [] and "unit.claimed" not in events.names
    assert solver.followed("mine") == []


def test_a_pending_claim_is_ours_only_if_the_chain_says_so(state: DaemonState) -> None:
    unit = open_unit()
    # A crash cut our claim off mid-flight and a rival's claim landed: we ask the chain, retry, and miss.
    chain = FakeChain(dataclasses.replace(unit, status=UnitStatus.ASSIGNED, solver=RIVAL))
    chain.revert = "BadUnitStatus"
    state.mark_pending(action_key_str(unit))
    solver, events = bare_solver(state, chain)
    assert solver._claim(unit) is False
    assert "unit.claimed" not in events.names and solver.followed("mine") == []
    # Our claim did land before the crash: recovered from the chain, and honestly ours.
    unit2 = open_unit(8)
    chain2 = FakeChain(dataclasses.replace(unit2, status=UnitStatus.ASSIGNED, solver=ME))
    state.mark_pending(action_key_str(unit2))
    solver2, events2 = bare_solver(state, chain2)
    assert solver2._claim(unit2) is True
    assert chain2.claims == [] and events2.names.count("unit.claimed") == 1
    assert solver2.followed("mine") == [(8, True)]
