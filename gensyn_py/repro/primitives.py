"""IEEE-754 binary32 elementwise primitives, round-to-nearest-even, one torch kernel each.

Every function takes float32 tensors and returns a float32 tensor whose bits are fixed by IEEE-754
(correctly rounded add/sub/mul/div/sqrt) or by the explicit rule in its docstring.  Nothing here is
fused: no addcmul, lerp, addmm, foreach or alpha= arguments, so no device can contract to an FMA.
Constants are passed as 0-dim float32 tensors (``const``) so that no Python double reaches a kernel.

NaN payloads and NaN signs are not defined (any NaN is "a NaN"); everything else is bit-exact.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gensyn_py.repro.fused import fused

F32 = torch.float32
I32 = torch.int32

# exponent range for ldexp: anything outside gives the same float32 result as the clamp bound
_LDEXP_CLAMP = 400


_CONSTS: dict[tuple[float, torch.device | str | None], Tensor] = {}


def const(v: float, device: torch.device | str | None = None) -> Tensor:
    """0-dim float32 tensor holding float32(v) (the double v rounded once, RNE).  Cached: never mutate."""
    key = (v, device)
    t = _CONSTS.get(key)
    if t is None:
        t = torch.tensor(v, dtype=F32, device=device)
        if len(_CONSTS) < 4096:
            _CONSTS[key] = t
    return t


def _f32(x: Tensor) -> Tensor:
    if x.dtype != F32:
        raise TypeError(f"repro primitives take float32 tensors, got {x.dtype}")
    return x


def add(a: Tensor, b: Tensor) -> Tensor:
    return torch.add(_f32(a), _f32(b))


def sub(a: Tensor, b: Tensor) -> Tensor:
    return torch.sub(_f32(a), _f32(b))


def mul(a: Tensor, b: Tensor) -> Tensor:
    return torch.mul(_f32(a), _f32(b))


def div(a: Tensor, b: Tensor) -> Tensor:
    return torch.div(_f32(a), _f32(b))


def sqrt(a: Tensor) -> Tensor:
    """Correctly rounded square root: float32(sqrt(float64(a))).

    torch.sqrt on float32 CPU tensors is NOT correctly rounded in torch 2.13 (about 16% of random inputs
    come out 1 ulp off), and its float64 one is not either (1.3% are 1 float64 ulp off), so the float64
    root is only trusted to within 4 ulps, which is enough: for a float32 x with sqrt(x) in [2**k, 2**(k+1)),
    every float32 rounding midpoint m there has 25 significant bits, so x - m**2 is a nonzero odd multiple
    of 2**(2k-48) (x is a multiple of 2**(2k-23), m**2 an odd one of 2**(2k-48)), hence
    |sqrt(x) - m| = |x - m**2| / (sqrt(x) + m) > 2**(2k-48) / 2**(k+2) = 2**(k-50), four float64 ulps.  A
    float64 value within four ulps of sqrt(x) therefore lies strictly on the same side of every midpoint,
    and its RNE conversion to float32 is the correctly rounded root (exact roots included; zeros keep their
    sign, negatives give NaN, +inf stays +inf).  tests/unit/test_repro_primitives.py checks it against
    NumPy's correctly rounded float32 sqrt on random bit patterns and edges.  On CPU the C module of
    ``repro/fused.py`` computes the same root in one pass.
    """
    y = fused("sqrt", _f32(a))
    return y if y is not None else torch.sqrt(a.to(torch.float64)).to(F32)


def neg(a: Tensor) -> Tensor:
    """Sign flip (exact, also for zeros)."""
    return torch.neg(_f32(a))


def abs_(a: Tensor) -> Tensor:
    """Clear the sign (exact)."""
    return torch.abs(_f32(a))


def _zero_fix(a: Tensor, b: Tensor, r: Tensor, use_and: bool) -> Tensor:
    a, b = torch.broadcast_tensors(a, b)
    ai = a.contiguous().view(I32)
    bi = b.contiguous().view(I32)
    zb = (torch.bitwise_and(ai, bi) if use_and else torch.bitwise_or(ai, bi)).view(F32)
    return torch.where((a == 0) & (b == 0), zb, r)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """max(a, b): NaN if either is NaN; +0 > -0 (max(+0, -0) = +0); otherwise the larger value."""
    return _zero_fix(a, b, torch.maximum(_f32(a), _f32(b)), use_and=True)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    """min(a, b): NaN if either is NaN; -0 < +0 (min(+0, -0) = -0); otherwise the smaller value."""
    return _zero_fix(a, b, torch.minimum(_f32(a), _f32(b)), use_and=False)


def clamp(a: Tensor, lo: float, hi: float) -> Tensor:
    """min(max(a, lo), hi) for nonzero float32 constants lo < hi (so no signed-zero case); NaN -> NaN."""
    if lo == 0 or hi == 0 or not lo < hi:
        raise ValueError("clamp bounds must be nonzero and ordered")
    return torch.clamp(_f32(a), float(const(lo)), float(const(hi)))


# IEEE comparisons: every comparison with a NaN is false except ne; -0 == +0.
def lt(a: Tensor, b: Tensor) -> Tensor:
    return torch.lt(_f32(a), _f32(b))


def le(a: Tensor, b: Tensor) -> Tensor:
    return torch.le(_f32(a), _f32(b))


def gt(a: Tensor, b: Tensor) -> Tensor:
    return torch.gt(_f32(a), _f32(b))


def ge(a: Tensor, b: Tensor) -> Tensor:
    return torch.ge(_f32(a), _f32(b))


def eq(a: Tensor, b: Tensor) -> Tensor:
    return torch.eq(_f32(a), _f32(b))


def isnan(a: Tensor) -> Tensor:
    return torch.isnan(_f32(a))


def where(c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """Select (exact): a where c else b."""
    return torch.where(c, _f32(a), _f32(b))


def floor(a: Tensor) -> Tensor:
    """Largest integer <= a (exact; floor(-0) = -0, floor of inf/NaN is itself)."""
    return torch.floor(_f32(a))


def pow2_f64(n: Tensor) -> Tensor:
    """Exact float64 2**n for integer n in [-1022, 1023], built from the bits."""
    return (torch.add(n, 1023).to(torch.int64) << 52).view(torch.float64)


def ldexp(a: Tensor, n: Tensor) -> Tensor:
    """a * 2**n rounded once to float32 (RNE; overflow gives inf, gradual underflow, no flush).

    Computed as float32 -> float64 (exact), times an exact float64 power of two (exact, the product
    stays normal in float64 since n is clamped to +-400), then float64 -> float32 (one RNE rounding).
    """
    nn = torch.clamp(n.to(torch.int64), -_LDEXP_CLAMP, _LDEXP_CLAMP)
    return torch.mul(_f32(a).to(torch.float64), pow2_f64(nn)).to(F32)


_LDEXP_TABLES: dict[torch.device, Tensor] = {}


def ldexp_f(a: Tensor, n: Tensor) -> Tensor:
    """ldexp with an integral float32 exponent tensor n, |n| <= 400 and no NaN (same single rounding as
    ``ldexp``); the power of two comes from an exact float64 table, which saves kernels."""
    table = _LDEXP_TABLES.get(a.device)
    if table is None:
        table = pow2_f64(torch.arange(-_LDEXP_CLAMP, _LDEXP_CLAMP + 1, device=a.device))
        _LDEXP_TABLES[a.device] = table
    idx = torch.add(n.long(), _LDEXP_CLAMP)
    return torch.mul(_f32(a).double(), table[idx]).float()


def to_int32(a: Tensor) -> Tensor:
    """Truncate toward zero to int32; NaN -> 0; values beyond the int32 range saturate."""
    x = torch.where(torch.isnan(_f32(a)), torch.zeros_like(a), a)
    x = torch.clamp(x, -2147483648.0, 2147483520.0)
    return torch.trunc(x).to(I32)


def from_int(n: Tensor) -> Tensor:
    """Integer (|n| < 2**53) to float32, rounded once (RNE): via float64, which is exact there."""
    return n.double().float()


def to_f64(a: Tensor) -> Tensor:
    """float32 -> float64 (exact)."""
    return _f32(a).to(torch.float64)


def from_f64(a: Tensor) -> Tensor:
    """float64 -> float32, rounded once (RNE, overflow to inf, gradual underflow)."""
    return a.to(F32)


def frexp(a: Tensor) -> tuple[Tensor, Tensor]:
    """Exact split a = m * 2**e with 0.5 <= |m| < 1, e int32, for finite nonzero a (subnormals too).

    For a in {+-0, +-inf, NaN}: m = a and e = 0.  torch.frexp is exact (no rounding is involved, so
    every correct implementation agrees); the special cases are pinned down explicitly.
    """
    x = _f32(a)
    m, e = torch.frexp(x)
    special = (x == 0) | ~torch.isfinite(x)
    return torch.where(special, x, m), torch.where(special, 0, e).to(I32)
