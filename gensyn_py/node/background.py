"""Long work off a daemon's cycle: one worker thread, so the cycle keeps sending cheap transactions meanwhile.

A validator drawn on two units replays them one after the other. Were the replays run inside the cycle, the
first unit's reveal (one transaction, due the moment the last validator has sealed) would wait for the second
replay to end: every unit's verification would pay for every other replay its validators are busy with.

Only the work itself runs on the worker. What it yields is taken by the cycle, on the daemon's own thread,
which keeps it in the daemon's state before sending anything: the rule "kept before anything is sent" holds,
and every transaction still goes out from one thread, in order. A crash marker covers each work while it
runs (`node/quarantine.py`): a replay that kills the process counts as a death inside its unit, and a second
one quarantines the job, as when the replay ran inside the unit's handler.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from gensyn_py.node.quarantine import Quarantine

T = TypeVar("T")


@dataclass
class _Work:
    future: Future[Any]
    job: int
    unit: int
    name: str
    marker: str
    marked: bool = True  # the crash marker is still in the state


class Background:
    """Work keyed by what it computes, run one at a time in submission order; each result is taken once."""

    def __init__(self, name: str, quarantine: Quarantine, on_done: Callable[[], None]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._quarantine = quarantine
        self._on_done = on_done  # wakes the cycle: what the work yields is sent now, not a poll later
        self._work: dict[Hashable, _Work] = {}

    def result(self, job: int, unit: int, name: str, key: Hashable, work: Callable[[], T]) -> T | None:
        """`work`'s result once it has ended on the worker (its exception raised here, so the caller's
        triage sees it); None while it waits or runs. The first call submits it."""
        found = self._work.get(key)
        if found is None:
            marker = self._quarantine.mark(job, unit, name)
            future = self._pool.submit(work)
            self._work[key] = _Work(future, job, unit, name, marker)
            future.add_done_callback(lambda _: self._on_done())
            return None
        if not found.future.done():
            return None
        self._unmark(found)
        del self._work[key]
        result: T = found.future.result(timeout=0)
        return result

    def running(self, key: Hashable) -> bool:
        """Submitted and not ended: nothing to do for it yet."""
        found = self._work.get(key)
        return found is not None and not found.future.done()

    def ended(self, key: Hashable) -> bool:
        """Submitted, ended and not taken yet: `result` hands it over now."""
        found = self._work.get(key)
        return found is not None and found.future.done()

    def busy(self) -> bool:
        return any(not w.future.done() for w in self._work.values())

    def idle(self, timeout: float) -> bool:
        """Wait until every work submitted so far has ended (False if `timeout` passed first)."""
        try:
            self._pool.submit(lambda: None).result(timeout)
        except TimeoutError:
            return False
        return True

    def sweep(self) -> None:
        """Clear the crash markers of works that ended, taken or not (a unit may have moved on without them)."""
        for w in self._work.values():
            if w.future.done():
                self._unmark(w)

    def close(self) -> None:
        """Drop the works not started; the one running ends on its own, its result not taken. A clean stop is
        not a death: every marker goes."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        for w in self._work.values():
            self._unmark(w)
        self._work.clear()

    def _unmark(self, w: _Work) -> None:
        if not w.marked:
            return
        w.marked = False
        self._quarantine.unmark(w.marker)
        self._quarantine.ended_cleanly(w.job, w.unit, w.name)
