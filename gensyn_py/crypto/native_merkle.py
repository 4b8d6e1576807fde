"""Whole keccak Merkle trees in one call: the C module ``_merkle_native.c`` when it was built, else the same trees
hashed one node at a time in Python.

Why: a dispute's side hashes every tensor of a traced step and the states its positions ask for, tens of
thousands of 64-byte keccaks; from Python each costs about a microsecond of call overhead around a few hundred
nanoseconds of hashing. The C module builds a tree (chunk leaves included) in one call, several times faster.
Both paths give the same bytes (``tests/unit/test_native_merkle.py`` checks them on random inputs); the
fallback exists for a machine where ``pip install`` found no C compiler.
"""

from __future__ import annotations

from typing import Any

from gensyn_py.crypto.hashing import keccak_256

try:
    from gensyn_py.crypto import _merkle_native as _c  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the Python trees below
    _c = None

WORD = 32


def native_module() -> Any:
    """The C module, or None where it was not built (its `use_simd` lets the tests run both permutations)."""
    return _c


def _split(level: bytes) -> list[bytes]:
    return [level[k:k + WORD] for k in range(0, len(level), WORD)]


def _check(data: bytes, what: str) -> None:
    if not data or len(data) % WORD:
        raise ValueError(f"{what}: a positive multiple of 32 bytes, got {len(data)}")


def py_chunk_leaves(data: bytes, first: int = 0) -> bytes:
    """keccak256(uint256(first + k) ++ chunk k) for each 32-byte chunk k of `data`, end to end (the fallback)."""
    _check(data, "chunk_leaves")
    return b"".join(keccak_256((first + k // WORD).to_bytes(WORD, "big") + data[k:k + WORD]).digest()
                    for k in range(0, len(data), WORD))


def py_levels(leaves: bytes) -> list[bytes]:
    """Every level of the commutative tree over 32-byte `leaves` (end to end), leaves first (the fallback)."""
    _check(leaves, "levels")
    levels = [leaves]
    while len(levels[-1]) > WORD:
        cur = _split(levels[-1])
        nxt = [keccak_256(a + b if a < b else b + a).digest() for a, b in zip(cur[0::2], cur[1::2], strict=False)]
        if len(cur) % 2:
            nxt.append(cur[-1])  # an odd last node is promoted
        levels.append(b"".join(nxt))
    return levels


def chunk_leaves(data: bytes, first: int = 0) -> list[bytes]:
    """The leaves of the 32-byte chunks of `data`, chunk k being the tensor's chunk `first` + k."""
    return _split(_c.chunk_leaves(data, first) if _c is not None else py_chunk_leaves(data, first))


def levels(leaves: bytes) -> list[list[bytes]]:
    """Every level of the tree over 32-byte `leaves` given end to end, leaves first (an odd last node promoted)."""
    return [_split(level) for level in (_c.levels(leaves) if _c is not None else py_levels(leaves))]


def root(leaves: bytes) -> bytes:
    """The root of the tree over 32-byte `leaves` given end to end."""
    if _c is not None:
        return bytes(_c.root(leaves))
    return py_levels(leaves)[-1]


def chunks_root(data: bytes | memoryview, first: int = 0) -> bytes:
    """``root`` of the chunk leaves of `data` (chunk k being chunk `first` + k), the leaves never leaving C."""
    if _c is not None:
        return bytes(_c.chunks_root(data, first))
    return py_levels(py_chunk_leaves(bytes(data), first))[-1]
