"""A dispute game whose tick fails is tried again before this side's clock runs out (node/clock_retry.py), not
after its job's quarantine backoff (5 s, 10 s, 20 s...), which on a 90 s clock could lose an honest side its game."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
from web3 import Web3

from gensyn_py.errors import ChainError, TrainingError
from gensyn_py.node.clock_retry import CAP, ClockRetry
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.game_player import GamePlayer
from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.quarantine import Quarantine
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.types import Unit, UnitStatus
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import ME, Events, open_unit
from tests.unit.test_quarantine import Clock

POLL = 0.3
JOB, UNIT, GAME = 7, 70, 3


def test_waits_double_from_the_poll_and_stay_within_a_quarter_of_the_clock() -> None:
    clock = Clock()
    r = ClockRetry(POLL, clock=clock)
    assert r.due(GAME)
    assert [r.failed(GAME, None) for _ in range(4)] == [0.3, 0.6, 1.2, 2.4]
    assert not r.due(GAME)
    clock.t += 2.4
    assert r.due(GAME)
    assert r.failed(GAME, 8.0) == 2.0  # 4.8 by doubling; a quarter of the 8 s left
    assert r.failed(GAME, 0.4) == POLL  # never below the poll
    for _ in range(20):
        wait = r.failed(GAME, None)
    assert wait == CAP
    r.succeeded(GAME)
    assert r.due(GAME) and r.failed(GAME, None) == POLL


class World:
    """The chain as the game player's tick reads it: one unit, and chain time on the test's clock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def unit(self, unit_id: int) -> Unit:
        return dataclasses.replace(open_unit(unit_id), job_id=JOB, status=UnitStatus.DISPUTED)

    def next_time(self) -> int:
        return int(self.clock.t)


def player(state: DaemonState, clock: Clock, failures: int,
           due_in: int | None = None) -> tuple[GamePlayer, list[float]]:
    """A validator's game player following one game whose first `failures` ticks raise (after reading, where
    `due_in` is set, that its move is due in that many seconds); returns it and the times its tick played."""
    d = ValidatorDaemon.__new__(ValidatorDaemon)
    Daemon.__init__(d, "validator-test", Web3(), {}, state, reader=FakeReader(state.cursor, []), poll_interval=POLL,
                    metrics=DaemonMetrics("validator-test"))
    d.address = ME
    d.view = World(clock)  # type: ignore[assignment]
    d.quarantine = Quarantine(state, clock=clock)
    d.log = Events()  # type: ignore[assignment]
    d.follow("game", GAME, {"unit": UNIT, "segment": 0})
    p = GamePlayer(d)
    p._retry = ClockRetry(POLL, clock=clock)
    played: list[float] = []

    def play(did: int, unit: Unit) -> None:
        played.append(clock.t)
        if due_in is not None:
            p._due[did] = int(clock.t) + due_in
        if len(played) <= failures:
            raise TrainingError("the segment's start checkpoint is being rewritten")

    p._play = play  # type: ignore[method-assign]
    return p, played


def test_a_failing_tick_is_tried_again_within_polls_not_after_the_jobs_backoff(tmp_path: Path) -> None:
    clock = Clock()
    with DaemonState(tmp_path / "s.sqlite") as state:
        p, played = player(state, clock, failures=3)
        for _ in range(40):  # ticks every 0.1 s for 4 s
            p.tick()
            clock.t += 0.1
        # tries at 0, 0.3, 0.9, 2.1 (waits 0.3, 0.6, 1.2); the fourth passes and the game is played every tick on
        assert [round(t - 1_000.0, 1) for t in played[:5]] == [0.0, 0.3, 0.9, 2.1, 2.2]
        assert p._retry.failing(GAME) is None and p.node.quarantine.get(JOB) is None
        assert p.node.log.names.count("game.tick_failed") == 3  # type: ignore[attr-defined]


def test_a_quarantined_job_holds_back_none_of_its_games(tmp_path: Path) -> None:
    clock = Clock()
    with DaemonState(tmp_path / "s.sqlite") as state:
        p, played = player(state, clock, failures=0)
        p.node.quarantine.put(JOB, UNIT + 1, "SpecError: another unit of the job")
        assert p.node.quarantine.blocked(JOB)
        p.tick()
        assert played == [1_000.0]


def test_the_wait_is_cut_to_a_quarter_of_the_time_left_on_the_clock(tmp_path: Path) -> None:
    clock = Clock()
    with DaemonState(tmp_path / "s.sqlite") as state:
        p, played = player(state, clock, failures=6, due_in=4)
        for _ in range(60):
            p.tick()
            clock.t += 0.1
        gaps = [round(b - a, 1) for a, b in itertools.pairwise(played)][:6]
        # 0.3, 0.6, then a quarter of the 4 s the tick read: 1.0 rather than 1.2, 2.4, 4.8
        assert gaps == [0.3, 0.6, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("exc", [ChainError("rpc down"), ConnectionError("refused")])
def test_network_errors_still_go_to_the_cycle(tmp_path: Path, exc: Exception) -> None:
    clock = Clock()
    with DaemonState(tmp_path / "s.sqlite") as state:
        p, _ = player(state, clock, failures=0)

        def down(did: int, unit: Unit) -> Any:
            raise exc

        p._play = down  # type: ignore[method-assign]
        with pytest.raises(type(exc)):
            p.tick()
        assert p._retry.failing(GAME) is None
