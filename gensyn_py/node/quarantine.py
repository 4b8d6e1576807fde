"""Per-job isolation: a job whose content cannot be fetched, parsed, checked or trained is quarantined.

A quarantined job is skipped by every handler of the daemon until its own
backoff is over (5 s doubling to 10 min), so it never delays another job;
the record (reason, unit, attempts, when it may be retried) lives in the
daemon's SQLite state, where `gensyn <role> quarantine list|clear` reads it.

Which errors are the job's and which the network's. A transient chain error,
any other `ChainError` (an unexpected revert may be a deadline or a race) and
a `StorageError` other than `ContentNotFound` (the store is unreachable) say
the *network* is in trouble: they propagate to the cycle's triage as before.
Everything else raised while handling one unit (`ContentNotFound` for a CID
the job named, `SpecError`, `VerificationError`, `TrainingError`, a shape or
label error, a model too big, any unexpected exception) is that job's.

No crash loop. Before a unit's handler runs, a marker `working:<job>:<unit>`
is stored; it is removed when the handler returns or raises. A marker found
at start means the previous process died inside that handler. Once may be an
operator's `kill -9` or a reboot, so the unit is resumed at once (a solver
resumes its training from its record); a second death inside the same unit
(killed for memory, a segfault) quarantines the job instead of running it
again: at most one retry, never a loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gensyn_py.chain.client import is_transient
from gensyn_py.errors import ChainError, ContentNotFound, StorageError
from gensyn_py.node.state import DaemonState

PREFIX = "quarantine:"
MARKER = "working:"
CRASHES = "crashes:"  # deaths inside a unit's handler since it last ended cleanly
CRASHES_BEFORE_QUARANTINE = 2
BASE_BACKOFF = 5.0
MAX_BACKOFF = 600.0

T = TypeVar("T")


def is_network_error(exc: BaseException) -> bool:
    """True for errors that mean the chain or the store is in trouble (cycle-level retry)."""
    if isinstance(exc, ContentNotFound):
        return False
    return isinstance(exc, (ChainError, StorageError)) or is_transient(exc)


@dataclass(frozen=True)
class Entry:
    """One quarantined job."""

    job: int
    unit: int | None
    reason: str
    attempts: int
    since: float
    retry_at: float

    def to_json(self) -> dict[str, Any]:
        return {"job": self.job, "unit": self.unit, "reason": self.reason, "attempts": self.attempts,
                "since": self.since, "retry_at": self.retry_at}


def backoff(attempts: int, base: float = BASE_BACKOFF, cap: float = MAX_BACKOFF) -> float:
    """Seconds before retry number `attempts` + 1: base * 2^(attempts-1), capped."""
    return float(min(cap, base * 2 ** min(max(attempts, 1) - 1, 32)))


class Quarantine:
    """The quarantine records of one daemon, in its state."""

    def __init__(self, state: DaemonState, *, base: float = BASE_BACKOFF, cap: float = MAX_BACKOFF,
                 clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.base = base
        self.cap = cap
        self.clock = clock

    def get(self, job: int) -> Entry | None:
        raw = self.state.get(f"{PREFIX}{job}")
        return None if raw is None else Entry(**raw)

    def put(self, job: int, unit: int | None, reason: str) -> Entry:
        """Quarantine `job` (again): one more attempt, and a doubled wait before the next."""
        previous = self.get(job)
        attempts = 1 if previous is None else previous.attempts + 1
        now = self.clock()
        entry = Entry(job, unit, reason[:500], attempts, previous.since if previous else now,
                      now + backoff(attempts, self.base, self.cap))
        self.state.put(f"{PREFIX}{job}", entry.to_json())
        return entry

    def blocked(self, job: int) -> bool:
        """True while `job` is quarantined and its backoff has not run out."""
        entry = self.get(job)
        return entry is not None and self.clock() < entry.retry_at

    def entries(self) -> list[Entry]:
        return [Entry(**self.state.get(k)) for k in self.state.keys(PREFIX)]

    def clear(self, job: int | None = None) -> int:
        """Release one job (or all); returns how many records were removed."""
        keys = [f"{PREFIX}{job}"] if job is not None else self.state.keys(PREFIX)
        removed = 0
        for key in keys:
            if self.state.get(key) is not None:
                self.state.delete(key)
                removed += 1
        return removed

    # -- crash markers -------------------------------------------------------------------------

    def mark(self, job: int, unit: int, work: str = "") -> str:
        """Note that the unit's handler (or its named background `work`) runs; a marker still there when the
        next process starts is a death inside it. Each work keeps its own count of deaths."""
        key = f"{MARKER}{job}:{unit}{_suffix(work)}"
        self.state.put(key, {"job": job, "unit": unit, "work": work, "since": self.clock()})
        return key

    def unmark(self, key: str) -> None:
        """The work `mark` returned `key` for has ended: not a death inside it."""
        self.state.delete(key)

    def ended_cleanly(self, job: int, unit: int, work: str = "") -> None:
        """The handler (or `work`) returned or raised: its death count starts over."""
        key = f"{CRASHES}{job}:{unit}{_suffix(work)}"
        if self.state.get(key) is not None:
            self.state.delete(key)

    def leftovers(self) -> list[tuple[int, int, int]]:
        """(job, unit, deaths in a row) of handlers a previous process died in; the markers are removed."""
        found = []
        for key in self.state.keys(MARKER):
            raw = self.state.get(key)
            self.state.delete(key)
            if raw is not None:
                job, unit = int(raw["job"]), int(raw["unit"])
                count = f"{CRASHES}{job}:{unit}{_suffix(str(raw.get('work', '')))}"
                deaths = int(self.state.get(count, 0)) + 1
                self.state.put(count, deaths)
                found.append((job, unit, deaths))
        return found


def _suffix(work: str) -> str:
    return f":{work}" if work else ""
