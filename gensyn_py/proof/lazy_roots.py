"""A sequence of roots computed on first use and kept: a dispute game asks for about log2(n) of n positions, and
each costs a state hashed (``segment_side.StateRoots``, ``transcript_positions.Positions``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload


class LazyRoots(Sequence[bytes]):
    """Roots 0..n-1; a subclass says how root j is computed (`_compute`)."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._kept: dict[int, bytes] = {}

    def _compute(self, j: int) -> bytes:
        raise NotImplementedError

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        j = range(len(self))[i]
        if j not in self._kept:
            self._kept[j] = self._compute(j)
        return self._kept[j]
