"""The matmul rule's finite case on CPU in one C call (small products) or three (large ones).

``matmul.repro_matmul`` takes this path for float32 CPU tensors where the C module ``_matmul_native.c`` was
built; the torch path in ``matmul.py`` is the same rule in about thirty kernels (every device, and the fallback
for a machine where ``pip install`` found no C compiler). Both give the same bits: the exact integer N is the
same, and so is its one rounding (``tests/unit/test_repro_native_matmul.py`` checks them against each other and
against the NumPy reference).

A small product is aligned, multiplied and rounded in one call. A large one is aligned in C, multiplied exactly
by torch's float64 BLAS (in K-chunks where one GEMM of the whole K would not be exact, ``exact_chunks.py``), and
rounded in C. Returns None where an input is not finite: the general path implements the rule's NaN and inf
cases.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import torch
from torch import Tensor

from gensyn_py.repro.exact_chunks import MIN_CHUNK, groups_of

try:
    from gensyn_py.repro import _matmul_native as _c  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: matmul.py's torch path
    _c = None

F32 = torch.float32
F64 = torch.float64

# Products of at most this many multiply-adds (M * K * N) are one C call with its own GEMM loop; larger ones
# use torch's BLAS between the C passes. Measured here (1 thread, AVX2): the one call took 0.15 ms at 128^3
# against 0.19 ms, 0.51 ms at 512x128x64 against 1.18 ms, 1.8 ms at 256^3 against 2.1 ms; the BLAS side wins
# above that, and with more threads.
SMALL_WORK = 2**22
DONE, NOT_FINITE = 0, 1  # small_matmul's codes (2: one GEMM of the whole K would not be exact)


def native_module() -> Any:
    """The C module, or None where it was not built."""
    return _c


def _operand(x: Tensor) -> tuple[int, ...]:
    """A 2-D or 3-D float32 CPU tensor as the C side reads it: (address, rows, cols, batch stride, row stride,
    col stride)."""
    if x.dim() == 2:
        return (x.data_ptr(), *x.shape, 0, *x.stride())
    return (x.data_ptr(), x.shape[1], x.shape[2], *x.stride())


def native_matmul(a: Tensor, b: Tensor) -> Tensor | None:
    """The rule's result for float32 CPU tensors, 2-D or 3-D (a batch of products), or None where an input is
    not finite."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    c: Tensor | None
    if m * k * n <= SMALL_WORK:
        c = torch.empty((*a.shape[:-1], n), dtype=F32)
        code = _c.small_matmul(_operand(a), _operand(b), c.data_ptr(), a.shape[0] if a.dim() == 3 else 1)
        if code == DONE:
            return c
        if code == NOT_FINITE:
            return None
    a3, b3 = (a, b) if a.dim() == 3 else (a.unsqueeze(0), b.unsqueeze(0))
    c = _large(a3, b3)
    return c if c is None or a.dim() == 3 else c.squeeze(0)


def native_sum(x: Tensor, dim: int) -> Tensor | None:
    """matmul.repro_sum of a 2-D float32 CPU tensor along dim (0 or 1), keepdim, in one C call; None where an
    entry is not finite."""
    out = torch.empty((x.shape[0], 1) if dim == 1 else (1, x.shape[1]), dtype=F32)
    return None if _c.sum_blocks(_operand(x), dim == 1, out.data_ptr()) else out


def _aligned(x: Tensor, by_rows: bool, groups: int) -> tuple[Tensor, Tensor, Tensor, bool, float, float]:
    """(q, units, squares, not finite, largest block L1, largest block sum of squares) of a 3-D float32 operand: q
    the aligned integers (float64 of x's shape; this thread's scratch, valid until its next product), units the
    block units (keepdim shape), squares each block's sums of squares over `groups` equal groups of K (blocks,
    groups). A transposed view (a weight in x @ w.T, or gy.T in a weight's gradient) is aligned in the memory order
    of the tensor it views, its blocks read as that tensor's columns (or rows), and q is the same transposed view of
    the result: no strided copy, and the BLAS takes the transposed q as it is."""
    bt, r, cols = x.shape
    units = torch.empty((bt, r, 1) if by_rows else (bt, 1, cols), dtype=F64)
    squares = torch.empty((bt * (r if by_rows else cols), groups), dtype=F64)
    transposed = r > 1 and cols > 1 and x.stride(1) == 1 and x.stride(2) == r
    if transposed:
        xt = x.transpose(1, 2)
        qt = _scratch(A_SLOT if by_rows else B_SLOT, xt.shape)
        special, l1, sq = _c.align(_operand(xt), bt, not by_rows, qt.data_ptr(), units.data_ptr(),
                                   squares.data_ptr(), groups)
        return qt.transpose(1, 2), units, squares, special, l1, sq
    q = _scratch(A_SLOT if by_rows else B_SLOT, x.shape)
    special, l1, sq = _c.align(_operand(x), bt, by_rows, q.data_ptr(), units.data_ptr(), squares.data_ptr(), groups)
    return q, units, squares, special, l1, sq


def _large(a: Tensor, b: Tensor) -> Tensor | None:
    """Align in C, multiply with torch's float64 BLAS (the whole K, or K-chunks summed exactly), round in C; the
    12-bit slices of matmul.py where no few chunks are exact."""
    from gensyn_py.repro.matmul import rounded_in_chunks

    k = a.shape[-1]
    g = groups_of(k)
    qa, ua, fa, special, l1_a, sq_a = _aligned(a, True, g)
    if special:
        return None
    qb, ub, fb, special, l1_b, sq_b = _aligned(b, False, g)
    if special:
        return None
    ends = (g,) if _c.one_gemm_exact(k, l1_a, sq_a, l1_b, sq_b) else _chunk_ends(fa, fb, k, g)
    if ends is None:
        return rounded_in_chunks(qa, qb, ua, ub, None)
    bounds = [0, *(e * (k // g) for e in ends)]  # K-offsets: each group is k // g terms
    batch, m, n = qa.shape[0], qa.shape[1], qb.shape[2]
    out = torch.empty((batch, m, n), dtype=F32)
    rows = ROW_BLOCK if batch == 1 and m * n * 8 > ROW_BLOCK_BYTES else m
    chunks = len(bounds) - 1
    shape = (batch, min(rows, m), n)
    kept = [_scratch(slot, shape) for slot in (FIRST_SLOT, PART_SLOT, SUM_SLOT)[:min(chunks, 3)]]
    for r in range(0, m, rows):
        block = kept if r + rows <= m else [t[:, :m - r] for t in kept]  # the last block may be shorter
        _rows_of_product(qa[:, r:r + rows], qb, ua[:, r:r + rows], ub, out[:, r:r + rows], bounds, block)
    return out


# Where one float64 product matrix would be larger than this, it is made ROW_BLOCK rows of A at a time: the chunks'
# products and their sum are then still in the core's cache when the next pass reads them. Measured here: a
# 1024 x 320 x 1280 product in 4 chunks 23.0 -> 16.1 ms, in 2 chunks 16.6 -> 14.9 ms, in one GEMM 14.0 -> 12.8 ms.
ROW_BLOCK_BYTES = 2**21
ROW_BLOCK = 128


def _rows_of_product(qa: Tensor, qb: Tensor, ua: Tensor, ub: Tensor, out: Tensor, bounds: list[int],
                     kept: list[Tensor]) -> None:
    """out = the rule's rounding of qa @ qb, each K-chunk (bounds) one BLAS call into a kept buffer: one chunk is
    rounded as it is, two as their exact pair sum, more summed in int64 (below 2**59) with the last added as the sum
    is rounded. qa, ua and out may be row slices of a single product (contiguous: batch 1); kept: float64 buffers of
    out's shape, one per chunk up to three."""
    shape = out.shape
    first = kept[0]

    def chunk(i: int, into: Tensor) -> Tensor:
        return torch.bmm(qa[..., bounds[i]:bounds[i + 1]], qb[..., bounds[i]:bounds[i + 1], :], out=into)

    chunk(0, first)
    pointers = (ua.data_ptr(), ub.data_ptr(), out.data_ptr(), *shape)
    if len(bounds) == 2:
        _c.finish(first.data_ptr(), *pointers)
        return
    part = kept[1]
    if len(bounds) == 3:  # N = first + part exactly: the final rounding adds them
        _c.finish_pair(first.data_ptr(), chunk(1, part).data_ptr(), *pointers)
        return
    acc = kept[2].view(torch.int64)  # the chunks' exact sum (below 2**59)
    chunks = len(bounds) - 1
    for i in range(1, chunks - 1):
        _c.add_chunk(chunk(i, part).data_ptr(), acc.data_ptr(), first.data_ptr() if i == 1 else 0, acc.numel())
    # the last chunk is added as the sum is rounded: one pass over acc fewer
    _c.finish_int(acc.data_ptr(), *pointers, chunk(chunks - 1, part).data_ptr())


def _chunk_ends(fa: Tensor, fb: Tensor, k: int, g: int) -> tuple[int, ...] | None:
    """The fewest K-chunks, unequal where that saves one, each an exact GEMM (the C greedy over exact_chunks.py's
    bound): the group index ending each; None where one group alone fails the bound or more chunks than K / MIN_CHUNK
    would be needed (the 12-bit slices instead, as with equal chunks). Equal power-of-two chunks (the torch path's
    `exact_chunks.chunk_count`) took 364 chunks for the 10M LM's 76 large products of a step, these 269."""
    return _c.chunk_ends(fa.data_ptr(), fa.shape[0], fb.data_ptr(), fb.shape[0], g,
                         min(g, max(1, k // MIN_CHUNK)))


_SCRATCH = threading.local()
KEPT_SCRATCH = 2**22  # float64 entries (32 MB) per buffer at most are kept between products
A_SLOT, B_SLOT, FIRST_SLOT, PART_SLOT, SUM_SLOT = range(5)  # aligned A and B, the first chunk, a chunk, their sum


def _scratch(slot: int, shape: torch.Size | tuple[int, ...]) -> Tensor:
    """A float64 buffer of `shape` kept per thread between products (a fresh one of megabytes costs page faults
    that take about as long as the pass that fills it). Larger ones than KEPT_SCRATCH are made afresh each time."""
    held: dict[int, Tensor] = _SCRATCH.__dict__.setdefault("buffers", {})
    n = math.prod(shape)
    if n > KEPT_SCRATCH:
        return torch.empty(shape, dtype=F64)
    t = held.get(slot)
    if t is None or t.numel() < n:
        t = held[slot] = torch.empty(n, dtype=F64)
    return t[:n].view(shape)
