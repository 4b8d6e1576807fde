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

from typing import Any

import torch
from torch import Tensor

from gensyn_py.repro.exact_chunks import chunk_count

try:
    from gensyn_py.repro import _matmul_native as _c  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: matmul.py's torch path
    _c = None

F32 = torch.float32
F64 = torch.float64

# Products of at most this many multiply-adds (M * K * N) are one C call with its own GEMM loop; larger ones
# use torch's BLAS between the C passes (bench/repro.py measures both sides of the line).
SMALL_WORK = 2**20
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


def _aligned(x: Tensor, by_rows: bool) -> tuple[Tensor, Tensor, bool, float, float]:
    """(q, units, not finite, largest block L1, largest block sum of squares) of a 3-D float32 operand: q the
    aligned integers (float64, x's shape, contiguous), units the block units (keepdim shape)."""
    bt, r, cols = x.shape
    q = torch.empty((bt, r, cols), dtype=F64)
    units = torch.empty((bt, r, 1) if by_rows else (bt, 1, cols), dtype=F64)
    special, l1, sq = _c.align(_operand(x), bt, by_rows, q.data_ptr(), units.data_ptr())
    return q, units, special, l1, sq


def _large(a: Tensor, b: Tensor) -> Tensor | None:
    from gensyn_py.repro.matmul import rounded_in_chunks

    qa, ua, special, l1_a, sq_a = _aligned(a, by_rows=True)
    if special:
        return None
    qb, ub, special, l1_b, sq_b = _aligned(b, by_rows=False)
    if special:
        return None
    chunks = 1 if _c.one_gemm_exact(a.shape[-1], l1_a, sq_a, l1_b, sq_b) else chunk_count(qa, qb)
    if chunks != 1:
        return rounded_in_chunks(qa, qb, ua, ub, chunks)
    n = torch.bmm(qa, qb)
    out = torch.empty(n.shape, dtype=F32)
    _c.finish(n.data_ptr(), ua.data_ptr(), ub.data_ptr(), out.data_ptr(), *n.shape)
    return out
