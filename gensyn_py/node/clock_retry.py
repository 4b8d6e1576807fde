"""Retries of work on a chess clock: a dispute game whose tick fails is tried again well before its clock runs out.

Job quarantine (`quarantine.py`) backs a failing job off for 5 s, doubling to 10 min, so that one broken job never
delays another. A game is different: while this side waits, its clock runs, and a clock that runs out loses the game
and the stake behind it for sure. So a game is not held back by its job's quarantine, and a game tick that raises
(anything but a network error, which goes to the daemon's cycle triage as before) is tried again after the daemon's
poll interval, doubling with each failure in a row, but never later than a quarter of the time left on this side's
clock (where the failed tick read it), nor later than `cap`. A failure that always recurs thus costs a tick now and
then, not the game by default; a passing hiccup (a store that timed out, a file that was being replaced) costs
seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

CLOCK_SHARE = 0.25  # of the time left on this side's clock, the longest wait before the next try
CAP = 30.0  # seconds: the longest wait where the failed tick did not read this side's clock


@dataclass(frozen=True)
class Failing:
    failures: int  # in a row
    retry_at: float  # on `ClockRetry.clock`


class ClockRetry:
    """When each failing game may be tried again; a game not listed may be tried now."""

    def __init__(self, base: float, cap: float = CAP, clock: Callable[[], float] = time.monotonic) -> None:
        self.base = base
        self.cap = cap
        self.clock = clock
        self._failing: dict[Hashable, Failing] = {}

    def due(self, key: Hashable) -> bool:
        f = self._failing.get(key)
        return f is None or self.clock() >= f.retry_at

    def failed(self, key: Hashable, time_left: float | None) -> float:
        """Note one more failure of `key`, whose side has `time_left` seconds on its clock (None: unknown, or not
        its move); returns the wait before the next try."""
        previous = self._failing.get(key)
        failures = 1 if previous is None else previous.failures + 1
        wait = min(self.cap, self.base * 2 ** min(failures - 1, 32))
        if time_left is not None:
            wait = min(wait, max(self.base, CLOCK_SHARE * time_left))
        self._failing[key] = Failing(failures, self.clock() + wait)
        return wait

    def succeeded(self, key: Hashable) -> None:
        self._failing.pop(key, None)

    def failing(self, key: Hashable) -> Failing | None:
        return self._failing.get(key)
