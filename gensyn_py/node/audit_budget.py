"""How much of an audit fits in its challenge window.

A challenge counts only if it lands inside the unit's challenge window. A replay still running when the window
closes has spent a core for nothing: it cannot be acted on, and on a machine that runs other roles too (the local
market runs every role on one) it slows the work that moves jobs on, such as the next unit's training or the
validators' replays. Worse, an audit that overruns holds the worker, so the audits queued behind it start late
and overrun in turn.

So the challenger replays a segment only while the time left before the window ends, less the time a challenge
takes to land (`SEND_MARGIN_S`), covers what its last replay of a segment of the same kind took: a training
segment of the same job, or an aggregation. With no measurement yet, it tries one: the first replay measures the
kind. Segments are audited in a private random order, so the ones cut are not predictable either.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

SEND_MARGIN_S = 1.0  # a challenge sent this long before the window ends still lands inside it (whole-second blocks)
REMEMBERED = 256  # jobs whose replay times are kept; the oldest goes first

Kind = tuple[int, bool]  # (job, is the unit an aggregation)


class AuditBudget:
    """Replay times per kind of segment, and the test of whether one more replay ends inside the window."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seconds: OrderedDict[Kind, float] = OrderedDict()

    def until(self, chain_seconds_left: float) -> float:
        """The time on `clock` by which a replay must have ended for its challenge to land in the window, given
        the chain seconds left in it (its end less the time a transaction sent now is checked against)."""
        return self.clock() + chain_seconds_left - SEND_MARGIN_S

    def estimate(self, kind: Kind) -> float | None:
        """Seconds the last replay of `kind` took; None before the first."""
        return self._seconds.get(kind)

    def fits(self, kind: Kind, until: float) -> bool:
        """Whether a replay of `kind` started now ends by `until` (as far as the last one tells)."""
        left = until - self.clock()
        estimate = self._seconds.get(kind)
        return left > 0 and (estimate is None or estimate <= left)

    def measured(self, kind: Kind, seconds: float) -> None:
        self._seconds[kind] = seconds
        self._seconds.move_to_end(kind)
        while len(self._seconds) > REMEMBERED:
            self._seconds.popitem(last=False)
