"""The exact integer product N = qa @ qb of the matmul rule, on int8 matrix units (residue number system).

The rule (matmul.py, docs/repro.md section 2) needs N[i,j] = sum_k a[i,k] * b[k,j] exactly, with aligned
integers |a|, |b| < 2**24 and K <= 2**14, so |N| < 2**62.  Integer matrix units (tensor cores' int8 mode,
VNNI on CPUs) multiply int8 matrices into exact int32 sums, so N is recovered from its residues modulo
eight pairwise-coprime moduli of at most 256 (the Ozaki scheme II of exact-emulated GEMMs):

1. Each aligned integer is reduced modulo m and centred into [-128, 127] (an int8).
2. One int8 GEMM per modulus gives an int32 P with P = N (mod m): every product is at most 2**14 in
   magnitude and K <= 2**14 of them sum below 2**28, so nothing overflows whatever the order.
3. The Chinese remainder theorem gives N modulo M = prod(m) > 2**63.5 > 2 * 2**62: with M_i = M / m_i,
   y_i = M_i**-1 (mod m_i) and s_i = P_i * y_i (mod m_i), N = M * (sum_i s_i / m_i - T) for the integer T
   nearest to sum_i s_i / m_i (N lies in (-M/2, M/2), |N| / M < 0.34, so T is the float64 sum rounded,
   with a margin of 0.16 against an error of about 2**-49).  N = sum_i s_i * M_i - T * M is then taken
   in int64, whose wrap-around arithmetic is exact modulo 2**64 and N fits in int64.
4. N is rounded once to float32 at its scale (round to odd at 53 bits, then one RNE conversion), as
   matmul.round_parts does for the float64 path.

Every step is integer arithmetic or exact float64 arithmetic, so the bits equal those of matmul.py's
float64 GEMMs and of reference.py on any device.  Eight int8 GEMMs do the work of two float64 GEMMs; on
processors whose int8 units are many times faster than their float64 ones (GPU tensor cores) that is
the faster path.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor

I8 = torch.int8
I32 = torch.int32
I64 = torch.int64
F32 = torch.float32
F64 = torch.float64

# Pairwise coprime (255 = 3*5*17, 253 = 11*23, 247 = 13*19, the rest prime); product about 2**63.58.
MODULI = (256, 255, 253, 251, 247, 241, 239, 233)
PRODUCT = math.prod(MODULI)
assert PRODUCT > 2 * 2**62 and all(math.gcd(p, q) == 1 for i, p in enumerate(MODULI) for q in MODULI[i + 1:])
COFACTORS = tuple(PRODUCT // m for m in MODULI)  # M_i, each below 2**56
INVERSES = tuple(pow(c % m, -1, m) for c, m in zip(COFACTORS, MODULI, strict=True))  # y_i


def _wrapped(x: int) -> int:
    """x modulo 2**64 as a signed int64 (M itself is above 2**63)."""
    x %= 2**64
    return x - 2**64 if x >= 2**63 else x


def residues(r: Tensor, u: Tensor, mod: Tensor) -> Tensor:
    """int8 residues of the aligned integers r / u (r: entries rounded to their block unit u, float64, so
    r / u is an exact integer below 2**24) modulo each modulus, centred into [-128, 127] (any centring
    that fits int8 gives the same products modulo m); shape (len(MODULI), *r.shape)."""
    q = torch.div(r, u).to(I32).unsqueeze(0)
    x = torch.remainder(q, mod.to(I32))  # [0, m)
    return torch.where(x > 127, x - mod.to(I32), x).to(I8)


def _int8_gemm(a: Tensor, b: Tensor, out: Tensor) -> None:
    """out = a @ b for int8 a (M, K) and b (K, N) into int32 out, exactly."""
    torch._int_mm(a, b, out=out)


def _padded(x: Tensor, rows: int, cols: int) -> Tensor:
    """x zero-padded at the end of its last two dims to (rows, cols) (zeros add nothing to a product)."""
    pr, pc = rows - x.shape[-2], cols - x.shape[-1]
    return x if pr == 0 and pc == 0 else torch.nn.functional.pad(x, (0, pc, 0, pr))


def residue_products(ra: Tensor, rb: Tensor) -> Tensor:
    """P[i] = ra[i] @ rb[i] (int32, exact) for stacked int8 residues ra (n, M, K) and rb (n, K, N).

    CUDA's int8 GEMM wants M > 16 and K, N multiples of 8: the operands are zero-padded to that and the
    padding cut from the result."""
    n, m, k = ra.shape
    cols = rb.shape[-1]
    if ra.is_cuda:
        m_p, k_p, n_p = max(m, 17), -(-max(k, 16) // 8) * 8, -(-max(cols, 8) // 8) * 8
    else:
        m_p, k_p, n_p = m, k, cols
    a_p, b_p = _padded(ra, m_p, k_p), _padded(rb, k_p, n_p)
    out = torch.empty((n, m_p, n_p), dtype=I32, device=ra.device)
    for i in range(n):
        _int8_gemm(a_p[i], b_p[i], out[i])
    return out[:, :m, :cols]


_CONSTS: dict[torch.device, tuple[Tensor, ...]] = {}


def _constants(device: torch.device) -> tuple[Tensor, ...]:
    t = _CONSTS.get(device)
    if t is None:
        shape = (len(MODULI), 1, 1)
        t = _CONSTS[device] = (
            torch.tensor(MODULI, dtype=I64, device=device).view(shape),
            torch.tensor(INVERSES, dtype=I64, device=device).view(shape),
            torch.tensor([1.0 / m for m in MODULI], dtype=F64, device=device).view(shape),
            torch.tensor(COFACTORS, dtype=I64, device=device).view(shape),
            torch.tensor(_wrapped(PRODUCT), dtype=I64, device=device),
        )
    return t


def reconstruct(p: Tensor, mod: Tensor, inv: Tensor, recip: Tensor, cof: Tensor, product: Tensor) -> Tensor:
    """N (int64) from the stacked residue products p (n, M, N) by the CRT of the module docstring."""
    s = torch.remainder(torch.remainder(p.to(I64), mod) * inv, mod)  # s_i in [0, m_i)
    t = torch.round(torch.sum(s.to(F64) * recip, dim=0))  # nearest integer to sum s_i / m_i
    return torch.sum(s * cof, dim=0) - t.to(I64) * product  # exact modulo 2**64, and N fits in int64


def round_int(n: Tensor, ua: Tensor, ub: Tensor) -> Tensor:
    """float32 RNE of the integer n (int64, |n| < 2**62) times ua * ub (powers of two, float64), rounded
    once: n is rounded to odd at 53 bits (an inexact float64 conversion with an even significand moves
    one ulp toward n), then scaled exactly and converted with one RNE.  n = 0 gives +0."""
    s = n.to(F64)  # RNE, |s| <= 2**62
    err = n - s.to(I64)  # exact (s is an integer that fits in int64)
    bits = s.view(I64)
    step = torch.sign(err) * torch.sign(bits) * ((bits & 1) == 0)  # toward n when inexact and even
    odd = (bits + step).view(F64)
    return ((odd + 0.0) * ua * ub).to(F32)  # + 0.0: -0 -> +0; the scalings are exact in float64


def _epilogue(p: Tensor, ua: Tensor, ub: Tensor, *consts: Tensor) -> Tensor:
    return round_int(reconstruct(p, *consts), ua, ub)


_COMPILED: dict[str, Callable[..., Tensor]] = {}


def _kernel(name: str, f: Callable[..., Tensor], cuda: bool) -> Callable[..., Tensor]:
    """f as one fused kernel on CUDA (torch.compile: the residues and the epilogue are a dozen
    elementwise passes over eight matrices each, which unfused cost more than the GEMMs), eager
    elsewhere.  Compilation changes no result: every operation in them is integer arithmetic, exact
    float64 arithmetic, or (T) robust to rounding.  Where compilation fails (no compiler for the
    generated kernels), the eager f runs instead, with a warning, once."""
    if not cuda:
        return f
    g = _COMPILED.get(name)
    if g is None:
        compiled = torch.compile(f, dynamic=True)

        def guarded(*args: Tensor) -> Tensor:
            try:
                return compiled(*args)
            except Exception as e:  # any compiler failure: the eager function gives the same bits
                warnings.warn(f"crt_matmul: torch.compile failed ({type(e).__name__}: {e}); running eagerly",
                              RuntimeWarning, stacklevel=2)
                _COMPILED[name] = f
                return f(*args)

        g = _COMPILED[name] = guarded
    return g


def crt_matmul(ra: Tensor, ua: Tensor, rb: Tensor, ub: Tensor) -> Tensor:
    """float32 RNE(N * ua * ub) with N = (ra / ua) @ (rb / ub) exactly, for 2-D entries rounded to their
    block units (float64; ra (M, K) with units ua (M, 1), rb (K, N) with ub (1, N); the aligned integers
    below 2**24, K <= 2**14)."""
    consts = _constants(ra.device)
    prep = _kernel("residues", residues, ra.is_cuda)
    p = residue_products(prep(ra, ua, consts[0]), prep(rb, ub, consts[0]))
    return _kernel("epilogue", _epilogue, ra.is_cuda)(p, ua, ub, *consts)
