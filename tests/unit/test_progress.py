"""Progress bars: a unit's bar advances per step, checkpoint stored and commit; a replay's per step and segment;
log lines print whole above the bars; with no terminal nothing but JSON lines is written; a failing bar turns
itself off instead of stopping the daemon."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from gensyn_py.node import progress
from gensyn_py.node.audit_budget import AuditBudget
from gensyn_py.node.challenger import ChallengerDaemon
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.logs import EventLogger, configure_logging
from gensyn_py.node.progress import Board, LogStream
from gensyn_py.node.quarantine import Quarantine
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.proof.replay import Verdict
from gensyn_py.types import UnitPartial, UnitStatus
from tests.unit.test_challenger_window import audited
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import ME, Events, open_unit
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def terminal() -> tuple[Board, io.StringIO]:
    """A board drawing on a recorded terminal (a StringIO the console treats as a TTY)."""
    out = io.StringIO()
    return Board(Console(file=out, force_terminal=True, color_system=None, width=120), enabled=True), out


def screen(board: Board, out: io.StringIO) -> str:
    """What the terminal shows now, escape codes dropped."""
    board.refresh()
    return ANSI.sub("", out.getvalue())


class Recorded(Board):
    """A real board that also keeps every update the daemon made (to check their order)."""

    def __init__(self, console: Console, enabled: bool | None = None) -> None:
        super().__init__(console, enabled)
        self.updates: list[dict[str, Any]] = []
        self.finished: list[str] = []

    def update(self, task: Any, **fields: Any) -> None:
        self.updates.append(fields)
        super().update(task, **fields)

    def finish(self, task: Any, detail: str, complete: bool = True) -> None:
        self.finished.append(detail)
        super().finish(task, detail, complete)


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No GENSYN_PROGRESS from the environment; the root logger as it was after each test."""
    monkeypatch.delenv(progress.ENV, raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for added in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(added)
        added.close()
    root.handlers, root.level = handlers, level


# -- the module ------------------------------------------------------------------------------


def test_a_unit_bar_advances_per_step_checkpoint_and_commit() -> None:
    board, out = terminal()
    bar = board.unit(7, steps=8, checkpoints=5)
    assert "unit 7 train" in screen(board, out) and "0/8" in screen(board, out)
    for step in range(1, 5):
        bar.step(step, stored=1 + step // 2)
    shown = screen(board, out)
    assert "4/8" in shown and "checkpoints 3/5" in shown
    for step in range(5, 9):
        bar.step(step, stored=3)
    bar.committing()
    assert "checkpoints 5/5, committing" in screen(board, out)
    bar.committed()
    shown = screen(board, out)
    assert "8/8" in shown and "checkpoints 5/5, committed" in shown
    board.stop()


def test_a_stopped_unit_keeps_its_bar_where_it_got_to() -> None:
    board, out = terminal()
    bar = board.unit(5, steps=8, checkpoints=5)
    bar.step(3, stored=2)
    bar.failed("stopped: Interrupted")
    shown = screen(board, out)
    assert "3/8" in shown and "stopped: Interrupted" in shown and "8/8" not in shown
    board.stop()


def test_a_replay_bar_counts_steps_and_segments_of_the_draw() -> None:
    board, out = terminal()
    bar = board.replay(9, [1, 4], steps=3, label="audit")
    for _ in range(3):
        bar.step()
    bar.segment_done()
    bar.step()
    bar.step()
    shown = screen(board, out)
    assert "unit 9 audit" in shown and "5/6" in shown and "segments 1/2 [1,4]" in shown
    bar.segment_done()
    bar.done("all accepted")
    assert "6/6" in screen(board, out) and "segments 2/2 [1,4], all accepted" in screen(board, out)
    board.stop()


def test_finished_bars_make_way_for_new_ones() -> None:
    board, _ = terminal()
    board.keep = 2
    for unit_id in range(5):
        board.unit(unit_id, 1, 1).committed()
    assert board._progress is not None and len(board._progress.tasks) <= 3
    board.stop()


def test_log_lines_print_whole_above_the_bars() -> None:
    board, out = terminal()
    board.console.width = 60  # narrower than the line: it must not be wrapped
    configure_logging("solver-x", stream=board.stream())  # type: ignore[arg-type]
    bar = board.unit(3, 4, 3)
    bar.step(1, 1)
    EventLogger("solver-x").info("unit.progress", unit=3, step=1, note="x" * 100)
    bar.step(2, 2)
    board.stop()
    lines = [ANSI.sub("", line).split("\r")[-1] for line in out.getvalue().split("\n")]
    logged = [json.loads(line) for line in lines if line.startswith("{")]
    assert [e["event"] for e in logged] == ["unit.progress"] and logged[0]["fields"]["note"] == "x" * 100


def test_not_a_terminal_draws_nothing() -> None:
    out = io.StringIO()
    board = Board(Console(file=out))  # a pipe, a file, a CI log
    assert not board.enabled
    bar = board.unit(1, 4, 3)
    for step in range(1, 5):
        bar.step(step, 2)
    bar.committed()
    replay = board.replay(1, [0], 2)
    replay.step()
    replay.done("accept")
    assert out.getvalue() == "" and board._progress is None


def test_the_environment_overrides_the_terminal_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress.ENV, "1")
    assert progress.wanted(io.StringIO())
    monkeypatch.setattr(progress, "_board", None)
    handler = configure_logging("solver-x")
    assert isinstance(handler, logging.StreamHandler) and isinstance(handler.stream, LogStream)
    monkeypatch.setenv(progress.ENV, "0")
    monkeypatch.setattr(progress, "_board", None)
    handler = configure_logging("solver-x")
    assert isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr
    progress.board().stop()


class Broken(io.StringIO):
    def write(self, _text: str) -> int:
        raise OSError("the terminal went away")


def test_a_failing_bar_turns_itself_off_and_the_work_goes_on() -> None:
    board = Board(Console(file=Broken(), force_terminal=True), enabled=True)
    bar = board.unit(1, 4, 3)  # drawing fails here: no exception reaches the caller
    assert not board.enabled
    bar.step(1, 1)
    bar.committed()
    board.replay(1, [0], 2).done("accept")


# -- the daemons -----------------------------------------------------------------------------

SPEC = tiny_spec()  # 8 steps, a checkpoint every 2: 4 segments, 5 checkpoints
UNIT = dataclasses.replace(open_unit(), status=UnitStatus.ASSIGNED, solver=ME, deadline=5_000)


def solver(tmp_path: Path, state: DaemonState, board: Board) -> tuple[SolverDaemon, list[str]]:
    """A SolverDaemon without a chain: the pool takes the commit, the unit's content is a tiny spec."""
    daemon = SolverDaemon.__new__(SolverDaemon)
    Daemon.__init__(daemon, "solver-test", None, {}, state, reader=FakeReader(state.cursor, []))  # type: ignore[arg-type]
    daemon.address, daemon.store, daemon.progress = ME, store_at(tmp_path / "store"), board
    daemon.records_dir, daemon.device, daemon.partial_every = tmp_path, None, 0
    daemon._ready = {}
    daemon.content = SimpleNamespace(timeout=0.1, spec=lambda _job: SPEC,  # type: ignore[assignment]
                                     dataset=lambda _job: digits_flat(),
                                     start_weights=lambda _job, _round, _shard: None)
    commits: list[str] = []

    def commit(_unit_id: int, _root: bytes, _final: bytes, manifest: str) -> str:
        commits.append(manifest)
        return "0x" + "cd" * 32

    daemon.pool = SimpleNamespace(commit=commit,  # type: ignore[assignment]
                                  partial_of=lambda _unit_id: UnitPartial("0x" + "00" * 20, b"\0" * 32, 0),
                                  commit_by=lambda _unit_id: UNIT.deadline)  # its phase is armed
    daemon.view = SimpleNamespace(now=lambda: 0, next_time=lambda: 0, unit=lambda _unit_id: UNIT)  # type: ignore[assignment]
    return daemon, commits


def test_the_solver_shows_steps_checkpoints_and_the_commit(tmp_path: Path) -> None:
    out = io.StringIO()
    board = Recorded(Console(file=out, force_terminal=True, color_system=None, width=120), enabled=True)
    with DaemonState(tmp_path / "state.sqlite") as state:
        daemon, commits = solver(tmp_path, state, board)
        daemon.log = Events()  # type: ignore[assignment]
        daemon._solve(UNIT)
    board.stop()
    assert len(commits) == 1
    steps = [u["completed"] for u in board.updates if "completed" in u]
    assert steps == list(range(1, SPEC.steps_per_unit + 1))  # every step, in order
    stored = [int(m.group(1)) for u in board.updates if (m := re.match(r"checkpoints (\d)/5", u.get("detail", "")))]
    # Stored behind the training (how far behind depends on timing), never backwards, all of them by the commit.
    assert stored == sorted(stored) and stored[-1] == 5
    assert board.finished == ["checkpoints 5/5, committed"]
    assert "8/8" in ANSI.sub("", out.getvalue())


def test_with_no_terminal_the_solver_writes_only_json_lines(tmp_path: Path) -> None:
    out = io.StringIO()
    board = Board(Console(file=out))  # stderr piped: no bar
    configure_logging("solver-test", "debug", stream=out)
    with DaemonState(tmp_path / "state.sqlite") as state:
        daemon, commits = solver(tmp_path, state, board)
        daemon.log = EventLogger("solver-test")
        daemon._solve(UNIT)
    assert len(commits) == 1 and not board.enabled
    lines = out.getvalue().splitlines()
    events = [json.loads(line)["event"] for line in lines]  # every line is one JSON object
    assert "unit.training" in events and "unit.committed" in events


def test_a_solver_stops_training_a_unit_voided_under_it(tmp_path: Path) -> None:
    """Pipelined rounds: the unit a solver trains from is overturned, voiding its own; it stops at the next
    progress check instead of training to the end, and commits nothing."""
    out = io.StringIO()
    board = Recorded(Console(file=out, force_terminal=True, color_system=None, width=120), enabled=True)
    with DaemonState(tmp_path / "state.sqlite") as state:
        daemon, commits = solver(tmp_path, state, board)
        daemon.log = Events()  # type: ignore[assignment]
        voided = dataclasses.replace(UNIT, status=UnitStatus.VOIDED)
        daemon.view = SimpleNamespace(now=lambda: 0, next_time=lambda: 0, unit=lambda _unit_id: voided)  # type: ignore[assignment]
        daemon._solve(UNIT)
        assert state.is_done(("commit", UNIT.unit_id, UNIT.deadline))  # never tried again
    board.stop()
    assert commits == []
    steps = [u["completed"] for u in board.updates if "completed" in u]
    assert steps and max(steps) < SPEC.steps_per_unit
    assert board.finished == ["voided"]
    assert "unit.voided" in daemon.log.names  # type: ignore[attr-defined]


def verdict_after(steps: int, accept: bool = True) -> Any:
    """Stands in for `check_segment`: replays `steps` steps through the hook, then judges."""

    def check(_content: Any, _unit: Any, segment: int, _device: Any, *, on_step: Any = None) -> Verdict:
        for step in range(1, steps + 1):
            on_step(step, steps, 0.5)
        return Verdict(accept, segment, b"\1" * 32, "fake")

    return check


def test_a_validator_shows_its_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    board, out = terminal()
    monkeypatch.setattr("gensyn_py.node.validator.check_segment", verdict_after(SPEC.checkpoint_interval))
    v = ValidatorDaemon.__new__(ValidatorDaemon)
    v.device, v.progress = None, board
    v.content = SimpleNamespace(spec=lambda _job: SPEC)  # type: ignore[assignment]
    assert v.replay(dataclasses.replace(UNIT, unit_id=12), 3).accept
    shown = screen(board, out)
    assert "unit 12 replay" in shown and "2/2" in shown and "segments 1/1 [3], accept" in shown
    board.stop()


def test_a_challenger_shows_its_audit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    board, out = terminal()
    monkeypatch.setattr("gensyn_py.node.challenger.check_segment", verdict_after(SPEC.checkpoint_interval))
    c = ChallengerDaemon.__new__(ChallengerDaemon)
    with DaemonState(tmp_path / "state.sqlite") as state:
        c.device, c.progress, c.state = None, board, state
        c.log = Events()  # type: ignore[assignment]
        c.content = SimpleNamespace(spec=lambda _job: SPEC)  # type: ignore[assignment]
        c.plan = lambda unit: [0, 2]  # type: ignore[method-assign]
        c._same_class = lambda unit: True  # type: ignore[method-assign]
        c.name, c.quarantine, c.wake = "challenger-test", Quarantine(state), lambda: None  # type: ignore[method-assign]
        c.budget, c._audits = AuditBudget(), {}
        audited(c, [dataclasses.replace(UNIT, unit_id=13, status=UnitStatus.VERIFIED)])
        c.background.close()
    shown = screen(board, out)
    assert "unit 13 audit" in shown and "4/4" in shown and "segments 2/2 [0,2], all accepted" in shown
    board.stop()
