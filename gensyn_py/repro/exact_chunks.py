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

The sums of squares are float64 sums of exact squares (|q**2| < 2**48, K <= 2**14 terms, relative error below
2**-39), so the test keeps a margin of 2**-30.
"""

from __future__ import annotations

import torch
from torch import Tensor

# squared bound on every partial sum (2**53 squared), less a margin for the rounding of the sums of squares
LIMIT = 2.0**106 * (1.0 - 2.0**-30)
GROUPS = 64  # the finest split considered: chunk boundaries are multiples of K / 64
MAX_CHUNKS = 16  # beyond this the two-slice GEMMs are cheaper than the chunks' additions


def _groups(k: int) -> int:
    """The largest power of two up to GROUPS that divides K (the chunks are equal)."""
    g = GROUPS
    while k % g:
        g //= 2
    return g


def chunk_count(qa: Tensor, qb: Tensor) -> int | None:
    """The smallest power-of-two number of equal K-chunks (1 = the whole K) in which one float64 GEMM of
    the aligned integers qa (..., M, K) and qb (..., K, N) (float64, exact) is exact, or None when more than
    MAX_CHUNKS would be needed (or an input is not finite: its block turned into NaN, so every comparison
    below is false)."""
    k = qa.shape[-1]
    sa = torch.mul(qa, qa)  # exact: below 2**48
    sb = torch.mul(qb, qb)
    g = _groups(k)
    fa = torch.sum(sa.reshape(*sa.shape[:-1], g, k // g), dim=-1)  # (..., M, g)
    fb = torch.sum(sb.reshape(*sb.shape[:-2], g, k // g, sb.shape[-1]), dim=-2)  # (..., g, N)
    fa = fa.reshape(-1, g)
    fb = fb.transpose(-1, -2).reshape(-1, g)
    c = 1
    while c <= min(g, MAX_CHUNKS):
        ma = torch.amax(torch.sum(fa.reshape(-1, c, g // c), dim=-1), dim=0)  # (c,) largest row, per chunk
        mb = torch.amax(torch.sum(fb.reshape(-1, c, g // c), dim=-1), dim=0)
        if bool(torch.all(torch.le(torch.mul(ma, mb), LIMIT))):
            return c
        c *= 2
    return None
