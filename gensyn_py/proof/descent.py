"""The descent into a disputed op's output (``StepGame.descend`` .. ``revealChunk``), from one side's tensor.

The output's data tree is ``tensor_commit``'s: 32-byte chunk leaves, OpenZeppelin hashing, an odd last node
promoted.  Each move posts the mover's children of the node both sides stand on; the first child that differs
from the other side's is where both go next, through any promoted node, down to one chunk, which the claimant
reveals (with its move, when its move reached it).  The counter then opens elements of that chunk with the
siblings the claimant posted on the way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gensyn_py.crypto.merkle import merkle_levels
from gensyn_py.proof.op_prefix import ZERO
from gensyn_py.proof.tensor_commit import chunk_of, tensor_leaves


def width(chunks: int, level: int) -> int:
    """`StepGame._width`: nodes at height `level` of a tree of `chunks` leaves."""
    return (chunks + (1 << level) - 1) >> level


def pass_promoted(chunks: int, level: int, index: int) -> tuple[int, int]:
    """Down through promoted nodes (a node with one child is that child), as ``descend`` does."""
    while level > 0 and 2 * index + 1 >= width(chunks, level - 1):
        level, index = level - 1, index * 2
    return level, index


class DataTree:
    """One side's output tensor as the descent sees it."""

    def __init__(self, arr: np.ndarray[Any, Any]) -> None:
        self.arr = arr
        self.levels = merkle_levels(tensor_leaves(arr))

    @property
    def chunks(self) -> int:
        return len(self.levels[0])

    @property
    def root(self) -> bytes:
        return self.levels[-1][0]

    def children(self, level: int, index: int) -> tuple[bytes, bytes]:
        """The two children of node (level, index); zeros at a chunk."""
        if level == 0:
            return ZERO, ZERO
        below = self.levels[level - 1]
        return below[2 * index], below[2 * index + 1]

    def move(self, level: int, index: int, pending: tuple[bytes, bytes]) -> tuple[bytes, bytes, bytes, bytes]:
        """``descend``'s arguments: this side's children here and of the child where they first differ (zeros at
        a tree of one chunk, where the contract goes straight to the chunk). Where that child is a chunk, the
        third is this side's chunk there: a claimant's move reveals it with the move (a counter's is ignored)."""
        if level == 0:
            return ZERO, ZERO, ZERO, ZERO
        mine = self.children(level, index)
        right = mine[0] == pending[0]
        level, index = pass_promoted(self.chunks, level - 1, 2 * index + int(right))
        if level == 0:
            return (*mine, chunk_of(self.arr, index), ZERO)
        return (*mine, *self.children(level, index))


@dataclass(frozen=True)
class RevealedChunk:
    """The chunk the descent ended on, as the claimant revealed it, with its path in the claimant's data tree."""

    index: int
    chunk: bytes
    siblings: tuple[bytes, ...]


def sibling_path(posted: Mapping[tuple[int, int], tuple[bytes, bytes]], chunk: int, chunks: int) -> tuple[bytes, ...]:
    """The path from leaf `chunk` up, from the claimant's posted children (keyed by the parent's (level, index));
    promoted levels add nothing (as ``merkle_proof``)."""
    path: list[bytes] = []
    level, index = 0, chunk
    while width(chunks, level) > 1:
        parent = index // 2
        if 2 * parent + 1 < width(chunks, level):
            left, right = posted[(level + 1, parent)]
            path.append(left if index % 2 else right)
        level, index = level + 1, parent
    return tuple(path)
