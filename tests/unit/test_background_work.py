"""Replays off a daemon's cycle (`node/background.py`): results taken once, errors raised to the cycle, crash
markers that count a death inside the work apart from the unit's handler."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gensyn_py.node.audit_budget import AuditBudget
from gensyn_py.node.background import Background
from gensyn_py.node.quarantine import Quarantine
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.proof.replay import Verdict
from gensyn_py.types import Unit
from tests.unit.test_challenger_window import audited

WAIT = 30.0  # seconds a test waits for the worker before it fails (it never sleeps)


class Woken:
    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self) -> None:
        self.event.set()

    def wait(self) -> None:
        assert self.event.wait(WAIT), "the cycle was not woken when the work ended"
        self.event.clear()


def markers(state: DaemonState) -> list[str]:
    return state.keys("working:")


def test_the_work_runs_off_the_cycle_its_result_is_taken_once_and_the_cycle_is_woken(tmp_path: Path) -> None:
    with DaemonState(tmp_path / "s.sqlite") as state:
        woken, release = Woken(), threading.Event()
        bg = Background("t", Quarantine(state), woken)

        def work() -> str:
            assert release.wait(WAIT)
            return "verdict"

        assert bg.result(1, 10, "verdict", "k", work) is None  # submitted: the call does not wait for it
        assert bg.result(1, 10, "verdict", "k", work) is None  # still running
        assert markers(state) == ["working:1:10:verdict"]  # a death now is a death inside this work
        release.set()
        woken.wait()
        assert bg.result(1, 10, "verdict", "k", work) == "verdict"
        assert markers(state) == []
        assert bg.result(1, 10, "verdict", "k", lambda: "again") is None  # taken: the key is free again
        bg.close()


def test_the_works_exception_is_raised_to_the_cycle(tmp_path: Path) -> None:
    with DaemonState(tmp_path / "s.sqlite") as state:
        woken = Woken()
        bg = Background("t", Quarantine(state), woken)

        def work() -> None:
            raise RuntimeError("size mismatch for weight")

        assert bg.result(2, 20, "verdict", "k", work) is None
        woken.wait()
        with pytest.raises(RuntimeError, match="size mismatch"):
            bg.result(2, 20, "verdict", "k", work)
        assert markers(state) == []  # it ended: not a death
        bg.close()


def test_deaths_inside_background_work_count_apart_from_the_handlers(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    for death in (1, 2):
        with DaemonState(db) as state:  # a process that dies while its replay runs leaves the marker behind
            q = Quarantine(state)
            q.mark(3, 30, "verdict")
        with DaemonState(db) as state:  # the next process
            q = Quarantine(state)
            assert q.leftovers() == [(3, 30, death)]
            q.ended_cleanly(3, 30)  # the unit's handler ran cleanly: the replay's count is its own
    with DaemonState(db) as state:
        assert state.get("crashes:3:30:verdict") == 2


def test_a_sweep_clears_the_marker_of_work_ended_but_not_taken_and_close_clears_the_rest(tmp_path: Path) -> None:
    with DaemonState(tmp_path / "s.sqlite") as state:
        woken, release = Woken(), threading.Event()
        bg = Background("t", Quarantine(state), woken)
        bg.result(4, 40, "verdict", "a", lambda: 1)  # its unit moves on: nobody takes it
        woken.wait()
        bg.result(4, 41, "verdict", "b", lambda: release.wait(WAIT))
        bg.sweep()
        assert markers(state) == ["working:4:41:verdict"]  # the running one keeps its marker
        bg.close()  # a clean stop is not a death
        assert markers(state) == []
        release.set()


class Quiet:
    def __getattr__(self, _name: str) -> Any:
        return lambda *_a, **_k: None


def test_a_validator_goes_on_with_its_other_units_while_a_replay_runs(tmp_path: Path) -> None:
    """Unit 11's verdict is kept; unit 12's replay is running: asking for 12's verdict returns at once, and
    11's is there to reveal in the same cycle."""
    with DaemonState(tmp_path / "s.sqlite") as state:
        release = threading.Event()
        v = ValidatorDaemon.__new__(ValidatorDaemon)
        v.state, v.address, v.name = state, "0x" + "ab" * 20, "validator-test"
        v.quarantine = Quarantine(state)
        v.metrics = v.log = Quiet()  # type: ignore[assignment]
        v.wake = lambda: None  # type: ignore[method-assign]
        v.missing = lambda unit, segment: None  # type: ignore[method-assign]

        def replay(unit: Unit, segment: int) -> Verdict:
            assert release.wait(WAIT)
            return Verdict(True, segment, b"\1" * 32, "replays bit for bit")

        v.replay = replay  # type: ignore[method-assign]
        task: dict[str, Any] = {"segment": 2, "seed": "0x" + "cd" * 32, "block": 1}
        units: dict[int, Any] = {i: SimpleNamespace(unit_id=i, job_id=7) for i in (11, 12)}
        state.put("verdict:11:cdcdcdcdcdcdcdcd", {"accept": True, "segment": 2})
        assert v._sealed_verdict(units[12], task, "cdcdcdcdcdcdcdcd") is None  # its replay runs: no wait
        assert v._sealed_verdict(units[11], task, "cdcdcdcdcdcdcdcd") == {"accept": True, "segment": 2}
        release.set()
        assert v.background.idle(WAIT)
        sealed = v._sealed_verdict(units[12], task, "cdcdcdcdcdcdcdcd")
        assert sealed is not None and sealed["accept"] and sealed["transcript"] == "0x" + "01" * 32
        assert state.get("verdict:12:cdcdcdcdcdcdcdcd") == sealed  # kept before anything is sent
        v.background.close()


def test_while_a_replay_runs_the_cycle_visits_only_units_it_may_have_to_act_on(tmp_path: Path) -> None:
    with DaemonState(tmp_path / "s.sqlite") as state:
        release = threading.Event()
        v = ValidatorDaemon.__new__(ValidatorDaemon)
        v.state, v.name, v.wake = state, "validator-test", lambda: None  # type: ignore[method-assign]
        v.quarantine = Quarantine(state)
        seed = "0x" + "cd" * 32
        epoch = seed[2:18]
        task = {"segment": 0, "seed": seed, "block": 1}
        v.background.result(7, 20, "verdict", f"verdict:20:{epoch}", lambda: release.wait(WAIT))  # running
        state.put(f"verdict:21:{epoch}", {"accept": True})
        state.mark_done(("vcommit", 21, epoch))  # sealed, not revealed: its reveal may be due
        state.put(f"verdict:22:{epoch}", {"accept": True})
        state.mark_done(("vcommit", 22, epoch))
        state.mark_done(("vreveal", 22, epoch))  # revealed: waits for its challenge window
        state.put(f"verdict:23:{epoch}", {"accept": False, "unavailable": True})
        state.mark_done(("vreveal", 23, epoch))  # reported unavailable: the solver's answer has a deadline
        skipped = {u: v._nothing_to_send(u, task) for u in (20, 21, 22, 23, 24)}  # 24: its replay is to start
        assert skipped == {20: True, 21: False, 22: True, 23: False, 24: False}
        release.set()
        assert v.background.idle(WAIT)
        assert not v.background.busy()
        v.background.close()


def test_a_challenger_audits_off_its_cycle_and_challenges_from_it(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    from gensyn_py.node.challenger import ChallengerDaemon

    release = threading.Event()

    def check(_content: Any, _unit: Any, segment: int, _device: Any, *, on_step: Any = None) -> Verdict:
        if segment == 1:
            assert release.wait(WAIT)
            return Verdict(True, 1, b"\1" * 32, "replays bit for bit")
        return Verdict(False, segment, b"\2" * 32, "differs")

    monkeypatch.setattr("gensyn_py.node.challenger.check_segment", check)
    with DaemonState(tmp_path / "s.sqlite") as state:
        c = ChallengerDaemon.__new__(ChallengerDaemon)
        c.state, c.name, c.device, c.progress = state, "challenger-test", None, None
        c.wake = lambda: None  # type: ignore[method-assign]
        c.quarantine = Quarantine(state)
        c.log = Quiet()  # type: ignore[assignment]
        c.content = SimpleNamespace(spec=lambda _job: None)  # type: ignore[assignment]
        c.plan = lambda unit: [1, 3, 5]  # type: ignore[method-assign]
        c._same_class = lambda unit: True  # type: ignore[method-assign]
        c.budget, c._audits = AuditBudget(), {}
        challenged: list[tuple[int, str]] = []
        c._challenge = lambda unit, segment, epoch: challenged.append(  # type: ignore[method-assign]
            (segment, threading.current_thread().name))
        monkeypatch.setattr("gensyn_py.node.challenger.replay_bar", lambda *_a, **_k: Bar())
        unit: Any = SimpleNamespace(unit_id=30, job_id=9, seed=b"\xcd" * 32, is_aggregation=False)
        c._audit(unit, 3600)  # starts it: the cycle goes on (a game's move would be sent now)
        assert challenged == [] and state.get(f"audited:30:{'cd' * 8}") is None
        release.set()
        audited(c, [unit])  # the cycles after it: one segment replayed at a time
        assert challenged == [(3, threading.current_thread().name)]  # the first failing segment, from the cycle
        assert [f["segment"] for f in state.get(f"audited:30:{'cd' * 8}")] == [1, 3]  # stopped at the failure
        c.background.close()


class Bar:
    def run(self, fn: Any) -> Any:
        return fn()

    def done(self, _text: str) -> None:
        pass
