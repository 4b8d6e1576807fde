"""Device-independent float32 matmul: an exact integer dot product per element, rounded once.

Rule (the op's definition; docs/repro.md states it for the contract):

1. Every finite float32 x is m * 2**(E - 150) with m the 24-bit significand (hidden bit included,
   0 for subnormals) and E = max(biased exponent field, 1).
2. Row i of A gets the block exponent EA_i = max_k E(A[i,k]); column j of B gets EB_j = max_k E(B[k,j])
   (non-finite entries count as 0 here).  Each entry is aligned to its block:
   a[i,k] = sign * RNE(m / 2**(EA_i - E)) (an integer, |a| <= 2**24; ties to even), same for b[k,j].
3. N[i,j] = sum_k a[i,k] * b[k,j]  (an exact integer, |N| <= 2**48 * K <= 2**62 for K <= MAX_K = 2**14).
4. C[i,j] = RNE_float32(N[i,j] * 2**(EA_i + EB_j - 300)) rounded once (gradual underflow, overflow to
   inf; N = 0 gives +0, a nonzero N that underflows keeps its sign).
5. Non-finite inputs: C[i,j] is NaN if row i of A or column j of B holds a NaN, or some k has
   inf * 0, or the products include both +inf and -inf; else +-inf if some product is +-inf;
   else the finite rule above.

Implementation: a = a_hi * 2**12 + a_lo with a_hi = floor(a / 2**12) (|a_hi| <= 2**12) and
0 <= a_lo < 2**12, b kept whole (|b| <= 2**24), all held in float64.  Every product has |p| <= 2**36
and every partial sum of K <= 2**14 products is an integer of magnitude <= 2**50 < 2**53, so the two
float64 GEMMs (a_hi @ b, a_lo @ b) are exact in any summation order, FMA or not: vendor BLAS on any
device gives the same integers.  N = S_hi * 2**12 + S_lo (|N| <= 2**62) is then rounded once:
exactly representable when |fl(N)| < 2**53, otherwise through round-to-odd at 53 bits (TwoSum) and one
RNE conversion (see round_parts).  K <= 32 uses one GEMM of the whole integers (exact below 2**53).
The NumPy reference (reference.py) computes N with an int64 matmul and rounds with Python integers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gensyn_py.repro.primitives import pow2_f64

F32 = torch.float32
I32 = torch.int32
I64 = torch.int64
F64 = torch.float64

MAX_K = 2**14
SMALL_K = 32
SLICE_BITS = 12


_TABLES: dict[torch.device, tuple[Tensor, Tensor]] = {}


def _pow2_tables(device: torch.device) -> tuple[Tensor, Tensor]:
    """float64 tables indexed by a block exponent field E in [0, 255]: (2**(150 - E), 2**(E - 150)),
    exact.  Index 0 (an all-zero or all-subnormal block) holds the values of E = 1, which is the rule's
    max(E, 1) without a separate clamp kernel."""
    key = device
    t = _TABLES.get(key)
    if t is None:
        e = torch.clamp(torch.arange(256, dtype=I64, device=device), min=1)
        t = (pow2_f64(150 - e), pow2_f64(e - 150))
        _TABLES[key] = t
    return t


def _block_exp(x: Tensor, dim: int) -> Tensor:
    """max over dim of the biased exponent field, keepdim (255 iff a non-finite is present).  The rule's
    max(E, 1) is folded into the tables (index 0 acts as 1)."""
    m = torch.amax(torch.abs(x), dim=dim, keepdim=True)  # NaN propagates: exponent field 255
    return m.view(I32) >> 23


def _aligned(x: Tensor, blk: Tensor) -> Tensor:
    """Signed aligned integers RNE(x / 2**(blk - 150)) held exactly in float64.

    x * 2**(150 - blk) is exact in float64 (a power-of-two scaling that stays normal); torch.round is
    round-half-to-even; the result is an integer with |q| <= 2**24 (the block's maximum has E = blk, so
    its significand m < 2**24 comes out unchanged; others are smaller).
    """
    return torch.round(torch.mul(x.to(F64), _pow2_tables(x.device)[0][blk]))


def integer_parts(a: Tensor, b: Tensor, blk_a: Tensor, blk_b: Tensor) -> tuple[Tensor, Tensor]:
    """(S_hi, S_lo) float64, exact integers, with N = S_hi * 2**12 + S_lo (inputs finite)."""
    qa = _aligned(a, blk_a)
    qb = _aligned(b, blk_b)
    hi = torch.floor(torch.mul(qa, 2.0**-SLICE_BITS))  # |hi| <= 2**12, exact
    lo = torch.sub(qa, torch.mul(hi, 2.0**SLICE_BITS))  # 0 <= lo < 2**12, exact
    return torch.mm(hi, qb), torch.mm(lo, qb)


def round_parts(s_hi: Tensor, s_lo: Tensor, blk_a: Tensor, blk_b: Tensor) -> Tensor:
    """float32 RNE of (s_hi * 2**12 + s_lo) * 2**(blk_a + blk_b - 300), one rounding.

    The exact integer N = a + b (a = s_hi * 2**12, exact) is first rounded to odd at 53 bits: TwoSum
    gives s = fl(a + b) and the exact error; if the error is nonzero and s is even, s moves one ulp toward
    the error.  Rounding to odd at 53 >= 24 + 2 bits followed by RNE to float32 (including the subnormal
    range) equals one RNE rounding of N.  The power-of-two scalings in between are exact in float64
    (results stay >= 2**-298).  N = 0 gives +0.
    """
    a = torch.mul(s_hi, 2.0**SLICE_BITS)
    s = torch.add(a, s_lo)
    if bool(torch.amax(torch.abs(s)) < 2.0**53):
        # rounding is monotone, so |fl(N)| < 2**53 implies |N| < 2**53: s is N exactly
        return _scale_round(torch.add(s, 0.0), blk_a, blk_b)
    bb = torch.sub(s, a)
    err = torch.add(torch.sub(a, torch.sub(s, bb)), torch.sub(s_lo, bb))
    sb = s.view(I64)
    even = (sb & 1) == 0
    step = torch.sign(torch.mul(err, s)).to(I64)  # +1: |N| > |s|, -1: |N| < |s|, 0: exact
    odd = torch.add(sb, torch.mul(step, even)).view(F64)
    return _scale_round(torch.add(odd, 0.0), blk_a, blk_b)  # + 0.0: -0 -> +0


def _scale_round(n: Tensor, blk_a: Tensor, blk_b: Tensor) -> Tensor:
    """float32(n * 2**(blk_a - 150) * 2**(blk_b - 150)): exact float64 scalings, one RNE conversion."""
    up = _pow2_tables(n.device)[1]
    return torch.mul(torch.mul(n, up[blk_a]), up[blk_b]).to(F32)


def _special(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """(nan mask, inf value or 0) per output element, from exact 0/1 GEMMs (counts)."""

    def f(t: Tensor) -> Tensor:
        return t.to(F64)

    def mm(x: Tensor, y: Tensor) -> Tensor:
        return torch.mm(f(x), f(y)) > 0

    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    inf_a, inf_b = torch.isinf(a), torch.isinf(b)
    pa, na = a > 0, a < 0
    pb, nb = b > 0, b < 0
    za, zb = a == 0, b == 0
    one_b = torch.ones(b.shape[0], 1, dtype=F64, device=b.device)
    one_a = torch.ones(1, a.shape[1], dtype=F64, device=a.device)
    nan = (torch.mm(f(nan_a), one_b) > 0) | (torch.mm(one_a, f(nan_b)) > 0)
    nan = nan | mm(inf_a, zb) | mm(za, inf_b)
    pos = mm(inf_a & pa, pb) | mm(inf_a & na, nb) | mm(pa & ~inf_a, inf_b & pb) | mm(na & ~inf_a, inf_b & nb)
    negi = mm(inf_a & pa, nb) | mm(inf_a & na, pb) | mm(pa & ~inf_a, inf_b & nb) | mm(na & ~inf_a, inf_b & pb)
    nan = nan | (pos & negi)
    infv = torch.where(pos, torch.inf, torch.where(negi, -torch.inf, 0.0)).to(F32)
    return nan, infv


def repro_matmul(a: Tensor, b: Tensor) -> Tensor:
    """C = A @ B for 2-D float32 tensors under the rule in the module docstring (any device)."""
    if a.dtype != F32 or b.dtype != F32:
        raise TypeError("repro_matmul takes float32 tensors")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"bad shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    k = a.shape[1]
    if k > MAX_K:
        raise ValueError(f"repro_matmul supports K <= {MAX_K}, got {k}")
    a = a.contiguous()
    b = b.contiguous()
    c = _finite_rule(a, b)
    if bool(torch.isfinite(c).all()):
        return c
    # A non-finite input always makes some output non-finite here (a block exponent of 255 scales
    # every finite entry of that row/column to 0 and keeps inf/NaN, and inf*0 or inf*x follows),
    # so checking the output is enough to detect them.  Slow path: exact rule 5.
    fin_a, fin_b = torch.isfinite(a), torch.isfinite(b)
    if bool(fin_a.all()) and bool(fin_b.all()):
        return c  # a genuine overflow of finite inputs
    c = _finite_rule(torch.where(fin_a, a, torch.zeros_like(a)), torch.where(fin_b, b, torch.zeros_like(b)))
    nan, infv = _special(a, b)
    c = torch.where(infv != 0, infv, c)
    return torch.where(nan, torch.full_like(c, torch.nan), c)


def _finite_rule(a: Tensor, b: Tensor) -> Tensor:
    blk_a = _block_exp(a, 1)
    blk_b = _block_exp(b, 0)
    if a.shape[1] <= SMALL_K:
        # |a| <= 2**24, |b| <= 2**24, K <= 32: every partial sum is an integer below 2**53, so one float64
        # GEMM gives N exactly, and scaling then converting is the single rounding.
        n = torch.mm(_aligned(a, blk_a), _aligned(b, blk_b))
        return _scale_round(torch.add(n, 0.0), blk_a, blk_b)
    s_hi, s_lo = integer_parts(a, b, blk_a, blk_b)
    return round_parts(s_hi, s_lo, blk_a, blk_b)


def repro_sum(x: Tensor, dim: int) -> Tensor:
    """Sum of a 2-D float32 tensor along dim (0 or 1), keepdim.

    Defined as the matmul rule against a ones vector (ones align to 2**23 at block exponent 127, which
    cancels), i.e. align to the block exponent, add the integers exactly, round once.  Computed as a
    float64 sum of the aligned integers: each |q| <= 2**24 and K <= 2**14, so every partial sum is an
    integer below 2**53 and any summation order is exact.
    """
    if x.dtype != F32 or x.dim() != 2:
        raise TypeError("repro_sum takes a 2-D float32 tensor")
    if x.shape[dim] > MAX_K:
        raise ValueError(f"repro_sum supports at most {MAX_K} terms")
    x = x.contiguous()
    blk = _block_exp(x, dim)
    n = torch.sum(_aligned(x, blk), dim=dim, keepdim=True)
    c = torch.mul(torch.add(n, 0.0), _pow2_tables(x.device)[1][blk]).to(F32)
    if bool(torch.isfinite(c).all()):
        return c
    # non-finite terms (or overflow): the general matmul path implements every case of the rule
    ones_shape = (x.shape[1], 1) if dim == 1 else (1, x.shape[0])
    ones = torch.ones(ones_shape, dtype=F32, device=x.device)
    return repro_matmul(x, ones) if dim == 1 else repro_matmul(ones, x)
