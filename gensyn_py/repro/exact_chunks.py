"""How many K-chunks make a float64 GEMM of the aligned integers exact chunk by chunk (Cauchy–Schwarz bound).

The matmul rule (matmul.py) needs N = sum_k a_k * b_k exactly, with aligned integers |a|, |b| <= 2**24.  A
float64 GEMM gives it exactly, in any summation order and with or without FMA, when every partial sum of the
products stays below 2**53 (they are integers).  Every partial sum is at most sum_k |a_k b_k|, and by
Cauchy–Schwarz that is at most sqrt(sum_k a_k**2) * sqrt(sum_k b_k**2).  So a contraction range whose largest
row sum of squares of A times largest column sum of squares of B is below 2**106 is exact in one GEMM.

For typical activations and gradients the whole K passes (|N| grows like sqrt(K), the bound like K), and
otherwise splitting K into a few equal chunks does: each chunk is one exact GEMM, the same multiply-adds as
one GEMM of the whole K, and the chunks' integers are added exactly afterwards (matmul.py).  This replaces two
GEMMs of 12-bit slices (twice the multiply-adds) wherever the data allow, as adaptive Ozaki schemes choose
their slice count from the operands' exponent span.

The sums of squares come from float64 norms (relative error a few units of 2**-53 per term summed, below 2**-39
for K <= 2**14 terms), so the test keeps a margin of 2**-30.
"""

from __future__ import annotations

import torch
from torch import Tensor

# squared bound on every partial sum (2**53 squared), less a margin for the rounding of the sums of squares
LIMIT = 2.0**106 * (1.0 - 2.0**-30)
GROUPS = 64  # the finest split considered: chunk boundaries are multiples of K / 64
MIN_CHUNK = 32  # the shortest chunk: a GEMM of fewer terms runs far below the BLAS's speed


def groups_of(k: int) -> int:
    """The largest power of two up to GROUPS that divides K (the chunks are equal)."""
    g = GROUPS
    while k % g:
        g //= 2
    return g


def _group_squares(x: Tensor, dim: int, g: int) -> Tensor:
    """Sums of squares of x over g equal groups along its contraction dimension `dim` (-1 for A, -2 for B),
    shape (..., L, g) with L the other dimension.  Where that dimension is the memory-contiguous one, a norm
    is one fused reduction (its square is off by a few units of 2**-53); elsewhere torch's norm kernel is
    many times slower than squaring and summing."""
    t = x if dim == -1 else x.transpose(-1, -2)  # (..., L, K), a view
    k = t.shape[-1]
    groups = t.reshape(*t.shape[:-1], g, k // g)
    if t.stride(-1) == 1:
        return torch.square(torch.linalg.vector_norm(groups, dim=-1))
    return torch.sum(torch.square(groups), dim=-1)


def chunk_count(qa: Tensor, qb: Tensor) -> int | None:
    """The smallest power-of-two number of equal K-chunks (1 = the whole K) in which one float64 GEMM of
    the aligned integers qa (..., M, K) and qb (..., K, N) (float64, exact) is exact, or None when chunks
    shorter than MIN_CHUNK (or more than GROUPS) would be needed, or an input is not finite (its block
    turned into NaN, so every comparison below is false)."""
    k = qa.shape[-1]
    g = groups_of(k)
    fa = _group_squares(qa, -1, g).reshape(-1, g)  # a row of A per row
    fb = _group_squares(qb, -2, g).reshape(-1, g)  # a column of B per row
    c = 1
    while c <= min(g, max(1, k // MIN_CHUNK)):
        ma = torch.amax(torch.sum(fa.reshape(-1, c, g // c), dim=-1), dim=0)  # (c,) largest row, per chunk
        mb = torch.amax(torch.sum(fb.reshape(-1, c, g // c), dim=-1), dim=0)
        if bool(torch.all(torch.le(torch.mul(ma, mb), LIMIT))):
            return c
        c *= 2
    return None
