"""A solver holding a unit of a phase opened early (pipelined rounds): it works at once, holds the result while
the phase is not armed (the contract would refuse the commit), commits it once armed without working again, and
counts its deadline from the arming when the phase was armed after its claim."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gensyn_py.node.daemon import Daemon
from gensyn_py.node.solver import NOT_ARMED, SolverDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.types import UnitStatus
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import ME, Events, open_unit

UNIT = dataclasses.replace(open_unit(), status=UnitStatus.ASSIGNED, solver=ME, deadline=5_000)
COMMITMENT = SimpleNamespace(checkpoint_root=b"\1" * 32, final_state_hash=b"\2" * 32, manifest_cid="bafkdone")


class Bar:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *_args, **_kw: self.calls.append(name)


class Chain:
    """The pool and view a solver's `_solve` reads: chain time, the unit's `commitBy`, and commits sent."""

    def __init__(self) -> None:
        self.time = 100
        self.commit_by_value = NOT_ARMED
        self.commits: list[tuple[int, bytes, bytes, str]] = []

    def next_time(self) -> int:
        return self.time

    def commit_by(self, _unit_id: int) -> int:
        return self.commit_by_value

    def commit(self, unit_id: int, root: bytes, final: bytes, cid: str) -> None:
        self.commits.append((unit_id, root, final, cid))

    def unit(self, _unit_id: int) -> Any:
        return dataclasses.replace(UNIT, status=UnitStatus.COMMITTED if self.commits else UnitStatus.ASSIGNED)


def _solver(tmp_path: Path) -> tuple[SolverDaemon, Chain, Events, list[int], Bar]:
    state = DaemonState(tmp_path / "state.sqlite")
    daemon = SolverDaemon.__new__(SolverDaemon)
    Daemon.__init__(daemon, "solver-test", None, {}, state, reader=FakeReader(state.cursor, []))  # type: ignore[arg-type]
    daemon.address = ME
    daemon._ready = {}
    chain = Chain()
    daemon.pool = chain  # type: ignore[assignment]
    daemon.view = chain  # type: ignore[assignment]
    events = Events()
    daemon.log = events  # type: ignore[assignment]
    worked: list[int] = []
    bar = Bar()

    def work(unit: Any, _epoch: int) -> Any:
        worked.append(unit.unit_id)
        return COMMITMENT

    daemon._work = work  # type: ignore[method-assign]
    daemon._bar = lambda _unit: bar  # type: ignore[method-assign, assignment, return-value]
    return daemon, chain, events, worked, bar


def test_work_on_an_unarmed_phase_is_held_and_committed_once_armed(tmp_path: Path) -> None:
    daemon, chain, events, worked, bar = _solver(tmp_path)
    daemon._solve(UNIT)
    assert worked == [UNIT.unit_id] and chain.commits == []  # worked at once, not committed: not armed
    assert events.names.count("unit.waiting_for_inputs") == 1 and "waiting" in bar.calls
    daemon._solve(UNIT)  # the next cycle: still unarmed; nothing is worked again or logged again
    assert worked == [UNIT.unit_id] and chain.commits == []
    assert events.names.count("unit.waiting_for_inputs") == 1
    chain.commit_by_value = 5_000  # armed
    daemon._solve(UNIT)
    assert worked == [UNIT.unit_id]  # the held result, not a second run
    assert chain.commits == [(UNIT.unit_id, COMMITMENT.checkpoint_root, COMMITMENT.final_state_hash,
                              COMMITMENT.manifest_cid)]
    assert "unit.committed" in events.names and "committed" in bar.calls
    daemon._solve(UNIT)
    assert len(chain.commits) == 1  # committed once


def test_a_phase_armed_after_the_claim_moves_the_deadline_the_solver_keeps_to(tmp_path: Path) -> None:
    daemon, chain, events, worked, _ = _solver(tmp_path)
    chain.time = UNIT.deadline + 10  # the claim's own deadline has passed...
    chain.commit_by_value = UNIT.deadline + 60  # ...but the phase was armed later: the window runs from then
    daemon._solve(UNIT)
    assert "unit.deadline_missed" not in events.names
    assert worked == [UNIT.unit_id] and len(chain.commits) == 1
    late, late_chain, late_events, late_worked, _ = _solver(tmp_path / "late")
    late_chain.time = UNIT.deadline + 61
    late_chain.commit_by_value = UNIT.deadline + 60
    late._solve(UNIT)
    assert late_events.names == ["unit.deadline_missed"] and late_worked == [] and late_chain.commits == []


def test_work_held_for_a_phase_voided_before_arming_is_dropped(tmp_path: Path) -> None:
    daemon, chain, events, worked, _ = _solver(tmp_path)
    daemon._solve(UNIT)
    assert len(daemon._ready) == 1 and chain.commits == [] and worked == [UNIT.unit_id]
    daemon._advance_mine(dataclasses.replace(UNIT, status=UnitStatus.VOIDED))  # an input was overturned
    assert daemon._ready == {} and chain.commits == [] and "unit.voided" in events.names
