"""Progress a person can see: a bar per unit on a terminal, nothing at all otherwise.

A solver shows one bar per unit it trains (steps done, checkpoints stored,
then "committed"); a validator or challenger one per replay (steps replayed,
segments of the draw done). Bars are drawn on stderr, and only when stderr is
a terminal: piped or redirected (a CI log, the demo's daemons writing to log
files), nothing is drawn and the logs stay one JSON object per line.
`GENSYN_PROGRESS=1` or `=0` overrides the terminal check.

While bars are shown, log lines must not tear them: `configure_logging` sends
the log stream through the board's console (`Board.stream`), which prints each
line whole above the bars.

Progress is decoration: it must never stop or slow the work. Every call a
daemon makes into a bar is guarded; the first failure turns the board off
(logged once) and the daemon goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

if TYPE_CHECKING:
    from gensyn_py.proof.content import JobContent
    from gensyn_py.types import Unit

ENV = "GENSYN_PROGRESS"
KEEP_FINISHED = 4  # finished bars left on screen; older ones are removed

_log = logging.getLogger(__name__)
R = TypeVar("R")


def wanted(file: IO[str] | None = None) -> bool:
    """Bars are wanted when `GENSYN_PROGRESS` says so, else when `file` (stderr) is a terminal."""
    override = os.environ.get(ENV, "").strip().lower()
    if override in ("0", "1", "false", "true", "no", "yes", "off", "on"):
        return override in ("1", "true", "yes", "on")
    stream = file if file is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Board:
    """The bars of one process, on one rich console; a disabled board draws nothing and costs a branch."""

    def __init__(self, console: Console | None = None, enabled: bool | None = None,
                 keep: int = KEEP_FINISHED) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = wanted(self.console.file) if enabled is None else enabled
        self.keep = keep
        self._lock = threading.Lock()
        self._finished: list[TaskID] = []
        self._progress: Progress | None = None

    # -- the guard ---------------------------------------------------------------------------

    def safely(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R | None:
        """`fn(*args, **kwargs)`, unless the board is disabled; a failure turns the board off instead of
        reaching the daemon."""
        if not self.enabled:
            return None
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # INVARIANT: a bar never stops the work it shows
            self.enabled = False
            with contextlib.suppress(Exception):
                self.stop()
            _log.warning("progress.off", extra={"fields": {"error": repr(e)}})
            return None

    # -- bars --------------------------------------------------------------------------------

    def unit(self, unit_id: int, steps: int, checkpoints: int, done: int = 0, label: str = "train") -> UnitBar:
        """A solver's bar for one unit: `steps` to train (from `done`), `checkpoints` to store."""
        return UnitBar(self, self._add(f"unit {unit_id} {label}", steps, done, f"checkpoints 0/{checkpoints}"),
                       checkpoints)

    def replay(self, unit_id: int, segments: list[int], steps: int, label: str = "replay") -> ReplayBar:
        """A validator's bar for the segments of one draw (or audit): `steps` per segment."""
        return ReplayBar(self, self._add(f"unit {unit_id} {label}", steps * max(1, len(segments)), 0,
                                         _segments_detail(0, segments)), segments, steps)

    def _add(self, description: str, total: int, done: int, detail: str) -> TaskID | None:
        return self.safely(self._add_task, description, total, done, detail)

    def _add_task(self, description: str, total: int, done: int, detail: str) -> TaskID:
        with self._lock:
            progress = self._started()
            while len(self._finished) >= self.keep:
                progress.remove_task(self._finished.pop(0))
            return progress.add_task(description, total=max(1, total), completed=done, detail=detail)

    def _started(self) -> Progress:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                console=self.console, refresh_per_second=4, redirect_stdout=False, redirect_stderr=False,
            )
            self._progress.start()
            atexit.register(self.stop)
        return self._progress

    def update(self, task: TaskID | None, **fields: Any) -> None:
        if task is not None:
            self.safely(self._update, task, fields)

    def _update(self, task: TaskID, fields: dict[str, Any]) -> None:
        assert self._progress is not None
        self._progress.update(task, **fields)

    def finish(self, task: TaskID | None, detail: str, complete: bool = True) -> None:
        """Show `detail` (and a full bar if `complete`) and let the bar make way for newer ones."""
        if task is not None:
            self.safely(self._finish, task, detail, complete)

    def _finish(self, task: TaskID, detail: str, complete: bool) -> None:
        assert self._progress is not None
        with self._lock:
            if complete:
                self._progress.update(task, completed=self._progress.tasks[self._index(task)].total or 1)
            self._progress.update(task, detail=detail)
            self._progress.stop_task(task)
            if task not in self._finished:
                self._finished.append(task)

    def _index(self, task: TaskID) -> int:
        assert self._progress is not None
        return next(i for i, t in enumerate(self._progress.tasks) if t.id == task)

    def refresh(self) -> None:
        """Draw the bars now (they are redrawn four times a second anyway)."""
        if self._progress is not None:
            self.safely(self._progress.refresh)

    def stop(self) -> None:
        """Leave the bars as they are on screen and stop redrawing them."""
        progress, self._progress = self._progress, None
        if progress is not None:
            with contextlib.suppress(Exception):  # at exit: nothing to save
                progress.stop()

    # -- logs --------------------------------------------------------------------------------

    def stream(self) -> LogStream:
        """A text stream for log lines that prints them whole above the bars."""
        return LogStream(self)


class UnitBar:
    """A solver's unit: `step(n)` per training step, `stored(n)` per checkpoint, then `committed()`."""

    def __init__(self, board: Board, task: TaskID | None, checkpoints: int) -> None:
        self.board = board
        self.task = task
        self.checkpoints = checkpoints
        self._stored = 0

    def step(self, step: int, stored: int | None = None) -> None:
        """Training reached `step`; `stored` checkpoints are in the store (None: unchanged)."""
        if stored is not None and stored != self._stored:
            self._stored = stored
            self.board.update(self.task, completed=step, detail=f"checkpoints {stored}/{self.checkpoints}")
        else:
            self.board.update(self.task, completed=step)

    def committing(self) -> None:
        self._stored = self.checkpoints
        self.board.update(self.task, detail=f"checkpoints {self.checkpoints}/{self.checkpoints}, committing")

    def waiting(self, why: str) -> None:
        """Trained; the commit waits for `why`."""
        self.board.update(self.task, detail=f"checkpoints {self.checkpoints}/{self.checkpoints}, waiting: {why}")

    def committed(self) -> None:
        self.board.finish(self.task, f"checkpoints {self.checkpoints}/{self.checkpoints}, committed")

    def failed(self, why: str) -> None:
        """Training or the commit stopped (the bar stays where it got to)."""
        self.board.finish(self.task, why, complete=False)


class ReplayBar:
    """A validator's draw: `step()` per replayed step, `segment_done(j)` per segment, then `done(verdict)`."""

    def __init__(self, board: Board, task: TaskID | None, segments: list[int], steps: int) -> None:
        self.board = board
        self.task = task
        self.segments = list(segments)
        self.steps = max(1, steps)
        self._done = 0
        self._step = 0

    def step(self, _step: int = 0, _total: int = 0, _loss: float = 0.0) -> None:
        """One step replayed (a `StepCallback`: pass it as a trainer's `on_step`)."""
        self._step = min(self._step + 1, self.steps)
        self.board.update(self.task, completed=self._done * self.steps + self._step)

    def segment_done(self) -> None:
        self._done += 1
        self._step = 0
        self.board.update(self.task, completed=self._done * self.steps,
                          detail=_segments_detail(self._done, self.segments))

    def run(self, replay: Callable[..., R]) -> R:
        """`replay(on_step=...)` with this bar following its steps; one that raises leaves the bar stopped."""
        try:
            result = replay(on_step=self.step)
        except BaseException as e:
            self.done(f"stopped: {type(e).__name__}", complete=False)
            raise
        self.segment_done()
        return result

    def done(self, outcome: str, complete: bool = True) -> None:
        """The draw is judged (`complete`), or the replay stopped where the bar got to."""
        self.board.finish(self.task, f"{_segments_detail(self._done, self.segments)}, {outcome}", complete)


def replay_bar(bars: Board, content: JobContent, unit: Unit, segments: list[int], label: str = "replay") -> ReplayBar:
    """A bar for replaying `segments` of `unit` (a segment is the spec's checkpoint interval; an aggregation
    one step). Nothing to replay, a disabled board, or a spec not to be had: a bar that draws nothing."""
    if not bars.enabled or not segments:
        return ReplayBar(bars, None, segments, 1)
    try:
        steps = 1 if unit.is_aggregation else content.spec(unit.job_id).checkpoint_interval
    except Exception:  # the replay itself meets (and reports) the same trouble
        return ReplayBar(bars, None, segments, 1)
    return bars.replay(unit.unit_id, segments, steps, label)


def _segments_detail(done: int, segments: list[int]) -> str:
    named = ",".join(str(j) for j in segments[:6]) + ("…" if len(segments) > 6 else "")
    return f"segments {done}/{len(segments)} [{named}]"


class LogStream:
    """A write-only text stream that prints whole lines through the board's console (above any bars).

    A line is printed as is: no markup, no highlighting, no wrapping, so a JSON log line stays one line.
    """

    def __init__(self, board: Board) -> None:
        self.board = board
        self._buffer: list[str] = []

    def write(self, text: str) -> int:
        head, newline, rest = text.rpartition("\n")
        if not newline:
            self._buffer.append(text)
            return len(text)
        lines = "".join(self._buffer) + head
        self._buffer = [rest] if rest else []
        self.board.console.print(Text(lines), soft_wrap=True, markup=False, highlight=False, emoji=False)
        return len(text)

    def flush(self) -> None:
        if self._buffer:
            pending, self._buffer = "".join(self._buffer), []
            self.board.console.print(Text(pending), soft_wrap=True, markup=False, highlight=False, emoji=False)

    def isatty(self) -> bool:
        return self.board.console.is_terminal


_board: Board | None = None


def board() -> Board:
    """The process's board: on stderr, enabled when stderr is a terminal (or `GENSYN_PROGRESS=1`)."""
    global _board
    if _board is None:
        _board = Board()
    return _board
