"""A challenger audits what fits in the challenge window (`node/audit_budget.py`): it replays a segment only while
the window has room for it, in a private random order, logs what it cut, and never challenges on an audit that
ended after the window closed."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from web3 import Web3

from gensyn_py.node.audit_budget import REMEMBERED, SEND_MARGIN_S, AuditBudget
from gensyn_py.node.challenger import ChallengerDaemon
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.quarantine import Quarantine
from gensyn_py.node.state import DaemonState
from gensyn_py.proof.replay import Verdict
from gensyn_py.types import UnitStatus
from tests.unit.test_daemon_cycle import FakeReader

WAIT = 30.0  # seconds a test waits for the worker before it fails (it never sleeps)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Log:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []

    def _record(self, event: str, **fields: Any) -> None:
        self.records.append((event, fields))

    debug = info = warning = error = exception = _record

    def named(self, event: str) -> list[dict[str, Any]]:
        return [f for e, f in self.records if e == event]


class Bar:
    def run(self, fn: Any) -> Any:
        return fn()

    def done(self, _text: str) -> None:
        pass


def challenger(state: DaemonState, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> tuple[ChallengerDaemon, Log]:
    c = ChallengerDaemon.__new__(ChallengerDaemon)
    Daemon.__init__(c, "challenger-test", Web3(), {}, state, reader=FakeReader(state.cursor, []))
    c.device, c.progress = None, None
    c.quarantine = Quarantine(state)
    c.budget, c._audits = AuditBudget(clock), {}
    c._same_class = lambda unit: True  # type: ignore[method-assign]
    c.content = SimpleNamespace(spec=lambda _job: None)  # type: ignore[assignment]
    log = Log()
    c.log = log  # type: ignore[assignment]
    monkeypatch.setattr("gensyn_py.node.challenger.replay_bar", lambda *_a, **_k: Bar())
    return c, log


def audited(c: ChallengerDaemon, units: list[Any], left: int = 3600) -> None:
    """Run the cycle's audit step for `units` (each turn, in this order) until every audit has ended."""
    for _ in range(100):
        for u in units:
            c._audit(u, left)
        if all(c.state.get(c._key(u)) is not None for u in units):
            return
        assert c.background.idle(WAIT)
    raise AssertionError("the audits did not end")


def unit(**kw: Any) -> Any:
    fields = {"unit_id": 30, "job_id": 9, "seed": b"\xcd" * 32, "is_aggregation": False,
              "status": UnitStatus.VERIFIED, "deadline": 1_000}
    return SimpleNamespace(**(fields | kw))


def test_the_budget_lets_a_replay_start_only_while_the_last_one_of_its_kind_still_fits() -> None:
    clock = Clock()
    budget = AuditBudget(clock)
    until = budget.until(6)
    assert until == clock.t + 6 - SEND_MARGIN_S
    assert budget.fits((1, False), until)  # nothing measured yet: one replay is tried
    budget.measured((1, False), 2.0)
    clock.t = until - 2.5
    assert budget.fits((1, False), until)
    clock.t = until - 1.5
    assert not budget.fits((1, False), until)
    assert budget.fits((1, True), until)  # an aggregation is another kind: not measured yet
    assert budget.fits((2, False), until)  # another job too
    clock.t = until
    assert not budget.fits((1, True), until)  # the window has no room left for anything


def test_the_budget_remembers_a_bounded_number_of_kinds() -> None:
    budget = AuditBudget(Clock())
    for job in range(REMEMBERED + 5):
        budget.measured((job, False), 1.0)
    assert budget.estimate((0, False)) is None and budget.estimate((REMEMBERED + 4, False)) == 1.0
    budget.measured((6, False), 3.0)  # measured again: now the newest
    for job in range(1000, 1000 + REMEMBERED - 1):
        budget.measured((job, False), 1.0)
    assert budget.estimate((6, False)) == 3.0 and budget.estimate((7, False)) is None


def test_an_audit_replays_what_fits_and_cuts_the_rest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock = Clock()
    replayed: list[int] = []

    def check(_content: Any, _unit: Any, segment: int, _device: Any, *, on_step: Any = None) -> Verdict:
        replayed.append(segment)
        clock.t += 2.0  # each replay takes 2 s
        return Verdict(True, segment, b"\1" * 32, "replays bit for bit")

    monkeypatch.setattr("gensyn_py.node.challenger.check_segment", check)
    with DaemonState(tmp_path / "s.sqlite") as state:
        c, log = challenger(state, clock, monkeypatch)
        c.plan = lambda unit: [7, 2, 11, 4]  # type: ignore[method-assign]
        audited(c, [unit()], left=int(5 + SEND_MARGIN_S))
        # 5 s: the first replay measures 2 s; 3 s left fit a second; 1 s left does not fit a third
        assert replayed == [7, 2] and [f["segment"] for f in log.named("audit")] == [7, 2]
        assert [(f["unit"], f["replayed"], f["cut"]) for f in log.named("audit.cut")] == [(30, 2, [11, 4])]
        assert [f["segment"] for f in state.get(c._key(unit()))] == [7, 2]
        replayed.clear()
        audited(c, [unit(unit_id=31)], left=0)  # its window ends sooner than a challenge would land
        assert replayed == [] and state.get(c._key(unit(unit_id=31))) == []
        assert log.named("audit.cut")[-1]["cut"] == [7, 2, 11, 4]
        c.background.close()


def test_units_verified_together_take_turns_on_the_worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock = Clock()
    replayed: list[tuple[int, int]] = []
    gate = threading.Event()  # both audits start (and read the window) before the clock moves

    def check(_content: Any, u: Any, segment: int, _device: Any, *, on_step: Any = None) -> Verdict:
        assert gate.wait(WAIT)
        replayed.append((u.unit_id, segment))
        clock.t += 2.0
        return Verdict(True, segment, b"\1" * 32, "replays bit for bit")

    monkeypatch.setattr("gensyn_py.node.challenger.check_segment", check)
    with DaemonState(tmp_path / "s.sqlite") as state:
        c, log = challenger(state, clock, monkeypatch)
        c.plan = lambda u: [1, 2, 3] if u.unit_id == 30 else [4, 5, 6]  # type: ignore[method-assign]
        both, left = [unit(), unit(unit_id=31)], int(9 + SEND_MARGIN_S)
        for u in both:
            c._audit(u, left)
        gate.set()
        audited(c, both, left)
        # 9 s hold four 2-s replays and the estimate stops a fifth: two for each unit, not four for the first
        assert replayed == [(30, 1), (31, 4), (30, 2), (31, 5)]
        assert [(f["unit"], f["cut"]) for f in log.named("audit.cut")] == [(30, [3]), (31, [6])]
        c.background.close()


def test_segments_are_audited_in_a_random_order_so_a_cut_spares_no_predictable_segment(tmp_path: Path) -> None:
    c = ChallengerDaemon.__new__(ChallengerDaemon)
    c.audit_fraction, c.max_segments, c._rng = 0.5, 4, random.Random(1)
    c.pool = SimpleNamespace(num_segments=lambda _unit: 20)  # type: ignore[assignment]
    plans = [c.plan(unit(drawn=True, validators=("0xv",), seed=bytes([i]) * 32)) for i in range(30)]
    assert all(len(p) == 4 and len(set(p)) == 4 for p in plans)
    assert any(p != sorted(p) for p in plans)
    assert len({p[0] for p in plans}) > 5  # the first segment audited is not always the same one


def test_an_audit_that_ends_after_the_window_is_logged_late_and_never_challenged(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    release = threading.Event()

    def check(_content: Any, _unit: Any, segment: int, _device: Any, *, on_step: Any = None) -> Verdict:
        assert release.wait(WAIT)
        return Verdict(False, segment, b"\2" * 32, "differs")

    monkeypatch.setattr("gensyn_py.node.challenger.check_segment", check)
    chain = {"now": 990}
    u = unit()
    with DaemonState(tmp_path / "s.sqlite") as state:
        c, log = challenger(state, Clock(), monkeypatch)
        c.plan = lambda unit: [3]  # type: ignore[method-assign]
        c.view = SimpleNamespace(unit=lambda _id: u, next_time=lambda: chain["now"])  # type: ignore[assignment]
        c.games = SimpleNamespace(tick=lambda: None)  # type: ignore[assignment]
        c.claim_credit = lambda: 0  # type: ignore[method-assign]
        challenged: list[int] = []
        c._challenge = lambda unit, segment, epoch: challenged.append(segment)  # type: ignore[method-assign]
        c.follow("audit", 30, {"end": u.deadline})
        c.tick()  # 10 s left: the audit starts
        assert c.background.running((c._key(u), 3))
        chain["now"] = u.deadline + 1  # the window closes while it replays
        c.tick()
        assert c.followed("audit") == [(30, {"end": u.deadline})]  # kept until its replay ends
        release.set()
        assert c.background.idle(WAIT)
        c.tick()
        assert challenged == []  # too late to land: not sent
        assert [(f["segment"], f["accept"], f["late"]) for f in log.named("audit")] == [(3, False, True)]
        assert c.followed("audit") == [] and not c.background.ended((c._key(u), 3))
        c.background.close()
