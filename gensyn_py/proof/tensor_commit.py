"""Commitments to single tensors: a Merkle root over 32-byte chunks, and proofs of one element.

A tensor's root binds its dtype, shape and little-endian element bytes; each 32-byte chunk (one EVM
word: 8 float32) is a keccak leaf that carries its index, so one element is proven by its chunk and a
Merkle path (``crypto.merkle``, OpenZeppelin-compatible).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from gensyn_py.crypto import native_merkle
from gensyn_py.crypto.hashing import keccak256, uint256
from gensyn_py.crypto.merkle import hash_pair, levels_proof, merkle_levels, merkle_proof, process_proof
from gensyn_py.errors import VerificationError

CHUNK = 32  # bytes per Merkle leaf: one EVM word (8 float32)
DTYPES = {"float32": 1, "int32": 2, "int64": 3, "bool": 4, "uint8": 5}


def _raw(arr: np.ndarray[Any, Any]) -> bytes:
    a = np.ascontiguousarray(arr)
    if a.dtype.kind in "fi" and a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def _header(arr: np.ndarray[Any, Any]) -> bytes:
    if str(arr.dtype) not in DTYPES:
        raise VerificationError(f"committed tensors are float32, int32, int64, bool or uint8, got {arr.dtype}")
    return uint256(DTYPES[str(arr.dtype)]) + uint256(arr.ndim) + b"".join(uint256(d) for d in arr.shape)


def tensor_leaves(arr: np.ndarray[Any, Any]) -> list[bytes]:
    """keccak256(uint256 chunk index ++ 32 bytes) per 32-byte chunk of the little-endian element bytes,
    the last chunk zero-padded (one zero chunk for an empty tensor)."""
    return native_merkle.chunk_leaves(_padded(_raw(arr)))


def _padded(raw: bytes) -> bytes:
    """Element bytes zero-padded to whole chunks (one zero chunk for none): the data the leaves hold."""
    return raw + bytes(-len(raw) % CHUNK or (CHUNK if not raw else 0))


def _chunk_data(arr: np.ndarray[Any, Any]) -> bytes | memoryview:
    """``_padded(_raw(arr))``, as a view of the array's own memory where that is already whole little-endian chunks:
    a large state is hashed without two copies of it made while holding the GIL."""
    a = np.ascontiguousarray(arr)
    if a.nbytes and a.nbytes % CHUNK == 0 and not (a.dtype.kind in "fi" and a.dtype.byteorder == ">"):
        return a.reshape(-1).view(np.uint8).data
    return _padded(_raw(arr))


# Data roots (the Merkle root of the chunk leaves, before the header) by content key (``_content_key``): whoever
# holds one hashes a tensor's bytes once however many tensors carry them (a reshape's output and its input, a
# state's tensor and the trace input or output that reads or writes it).
DataRoots: TypeAlias = dict[bytes, bytes]
# Threads hashing a batch of trees (``tensor_roots``), and the batch's size from which they pay.
_HASH_WORKERS = min(4, os.cpu_count() or 1)
_PARALLEL_BYTES = 1 << 20


def _content_key(data: bytes | memoryview) -> bytes:
    """Chunks told apart by their BLAKE2b digest and length (BLAKE2b runs at memory speed; the keccak tree costs a
    microsecond per 32 bytes)."""
    return hashlib.blake2b(data, digest_size=32).digest() + len(data).to_bytes(8, "big")


def _data_root(chunks: bytes | memoryview, data: DataRoots | None) -> bytes:
    return native_merkle.chunks_root(chunks) if data is None else _kept_root(chunks, data)


def _kept_root(chunks: bytes | memoryview, data: DataRoots, key: bytes | None = None) -> bytes:
    """The data root of whole chunks, looked up in and kept in `data`.

    A tree of n chunks, n not a power of two, is ``hash_pair`` of the complete tree over its first m chunks (m the
    largest power of two below n) and the tree over the rest (whose odd nodes are promoted as in the whole tree;
    ``crypto.merkle``).  That first subtree is the data root of those m chunks on their own, so it is looked up as
    one: a step's flat parameter vector (and every elementwise update of it) starts with the bytes of its first
    parameter, and their trees share that subtree. `key` is the chunks' content key where the caller has it."""
    key = _content_key(chunks) if key is None else key
    root = data.get(key)
    if root is None:
        n = len(chunks) // CHUNK
        if n & (n - 1) == 0:  # a power of two (one chunk included): one complete tree
            root = native_merkle.chunks_root(chunks)
        else:
            m = 1 << (n.bit_length() - 1)
            root = hash_pair(_kept_root(chunks[:m * CHUNK], data), native_merkle.chunks_root(chunks[m * CHUNK:], m))
        data[key] = root
    return root


def tensor_root(arr: np.ndarray[Any, Any], data: DataRoots | None = None) -> bytes:
    """keccak256(uint256 dtype code ++ uint256 ndim ++ uint256 dims... ++ Merkle root of the chunk leaves); the
    data root is looked up in (and added to) `data` when given."""
    header = _header(arr)
    return keccak256(header + _data_root(_chunk_data(arr), data))


def tensor_roots(arrs: Sequence[np.ndarray[Any, Any]], data: DataRoots | None = None,
                 workers: int | None = None) -> list[bytes]:
    """``tensor_root`` of each array; arrays with the same bytes (a reshape's output and its input, a copy) share
    one data tree, hashed once, in `data` when given (kept for later calls) or else for this call.

    The distinct trees not in `data` are hashed on every core when they are large enough to pay for the threads:
    the native trees release the GIL, and a step's trace or a state of a large model is hundreds of megabytes of
    chunks (two threads halve a side's hashing on two cores). `workers` caps the threads: a checkpoint hashed beside
    training takes only the cores the training leaves (`proof/unit.py`)."""
    data = {} if data is None else data
    workers = _HASH_WORKERS if workers is None else max(1, workers)
    chunks = [_chunk_data(arr) for arr in arrs]
    keys = [_content_key(c) for c in chunks]
    todo = {k: c for k, c in zip(keys, chunks, strict=True) if k not in data}
    if workers > 1 and sum(map(len, todo.values())) >= _PARALLEL_BYTES:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda kc: _kept_root(kc[1], data, kc[0]), todo.items()))
    return [keccak256(_header(arr) + _kept_root(c, data, k)) for arr, c, k in zip(arrs, chunks, keys, strict=True)]


def chunk_of(arr: np.ndarray[Any, Any], index: int) -> bytes:
    """The 32-byte chunk `index` of the tensor's element bytes (zero-padded past the end): leaf `index`'s data."""
    raw = _raw(arr)
    return (raw[index * CHUNK:(index + 1) * CHUNK] + bytes(CHUNK))[:CHUNK]


@dataclass(frozen=True)
class ElementProof:
    """One element's 32-byte chunk and its Merkle proof up to the tensor's data root."""

    chunk_index: int
    chunk: bytes
    proof: tuple[bytes, ...]


def tensor_levels(arr: np.ndarray[Any, Any]) -> list[list[bytes]]:
    """Every level of the tensor's data tree, leaves first (``crypto.merkle.merkle_levels``)."""
    return merkle_levels(tensor_leaves(arr))


def prove_element(arr: np.ndarray[Any, Any], element: int, levels: list[list[bytes]] | None = None) -> ElementProof:
    """Element `element`'s chunk and path; `levels`, when given, are the tensor's (``tensor_levels``), read rather
    than rebuilt."""
    c = element * arr.dtype.itemsize // CHUNK
    raw = _raw(arr) + bytes(CHUNK)
    proof = merkle_proof(tensor_leaves(arr), c) if levels is None else levels_proof(levels, c)
    return ElementProof(c, raw[c * CHUNK:(c + 1) * CHUNK], tuple(proof))


def verify_element(root: bytes, shape: tuple[int, ...], dtype: str, element: int, value: np.ndarray[Any, Any],
                   proof: ElementProof) -> bool:
    """Does the tensor with `root` (of `shape` and `dtype`) hold `value` at flat position `element`?"""
    item = np.dtype(dtype).itemsize
    if proof.chunk_index != element * item // CHUNK:
        return False
    off = element * item % CHUNK
    if proof.chunk[off:off + item] != _raw(np.asarray(value, dtype=dtype).reshape(1)):
        return False
    leaf = keccak256(uint256(proof.chunk_index) + proof.chunk)
    header = _header(np.empty(shape, dtype=dtype))
    return keccak256(header + process_proof(leaf, list(proof.proof))) == root
