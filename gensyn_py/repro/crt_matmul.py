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
from typing import Any

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


def residues(r: Tensor, u: Tensor) -> Tensor:
    """int8 residues of the aligned integers r / u (r: entries rounded to their block unit u, float64, so
    r / u is an exact integer below 2**24) modulo each modulus, centred into [-128, 127] (any centring
    that fits int8 gives the same products modulo m); shape (len(MODULI), *r.shape).  The moduli are
    Python constants, so a compiled kernel divides by constants (a multiply and a shift), not by tensors."""
    q = torch.div(r, u).to(I32)
    out = []
    for m in MODULI:
        x = torch.remainder(q, m)  # [0, m)
        out.append(torch.where(x > 127, x - m, x).to(I8))
    return torch.stack(out)


def prepare(x: Tensor) -> tuple[Tensor, Tensor]:
    """The rule's alignment of the rows of x (2-D float32, each row one block: matmul._rounded's
    arithmetic) as int8 residues of the aligned integers, shape (len(MODULI), *x.shape), and the block
    units u (rows, 1) in float64.  The block's largest exponent field p = 2**(E - 127) (a float32) gives
    c = 1.5 * 2**29 * p and u = 2**-23 * p (both exact); fl(x + c) - c is x rounded to a multiple of u.
    A block of zeros and subnormals (p = 0) has u = 2**-149; a block holding inf or NaN has u = inf, which
    makes its outputs non-finite (repro_matmul then takes the rule's slow path)."""
    p = torch.amax(torch.bitwise_and(x.view(I32), 0x7F800000), dim=-1, keepdim=True).view(F32).to(F64)
    c = p * (1.5 * 2.0**29)
    u = torch.where(p > 0, p * 2.0**-23, 2.0**-149)
    return residues(torch.sub(torch.add(x.to(F64), c), c), u), u


def _int8_gemm(a: Tensor, bt: Tensor, out: Tensor) -> None:
    """out = a @ bt.T for int8 a (M, K) and bt (N, K) into int32 out, exactly.  Both operands are
    K-contiguous: the layout integer tensor cores take without a copy (cuBLASLt's "TN")."""
    torch._int_mm(a, bt.t(), out=out)


def _padded(x: Tensor, rows: int, cols: int) -> Tensor:
    """x zero-padded at the end of its last two dims to (rows, cols) (zeros add nothing to a product)."""
    pr, pc = rows - x.shape[-2], cols - x.shape[-1]
    return x if pr == 0 and pc == 0 else torch.nn.functional.pad(x, (0, pc, 0, pr))


def residue_products(ra: Tensor, rbt: Tensor) -> Tensor:
    """P[i] = ra[i] @ rbt[i].T (int32, exact) for stacked int8 residues ra (n, M, K) and rbt (n, N, K).

    CUDA's int8 GEMM wants M > 16 and K, N multiples of 8: the operands are zero-padded to that and the
    padding cut from the result."""
    n, m, k = ra.shape
    cols = rbt.shape[1]
    if ra.is_cuda:
        m_p, k_p, n_p = max(m, 17), -(-max(k, 16) // 8) * 8, -(-max(cols, 8) // 8) * 8
    else:
        m_p, k_p, n_p = m, k, cols
    a_p, b_p = _padded(ra, m_p, k_p), _padded(rbt, n_p, k_p)
    out = torch.empty((n, m_p, n_p), dtype=I32, device=ra.device)
    for i in range(n):
        _int8_gemm(a_p[i], b_p[i], out[i])
    return out[:, :m, :cols]


def reconstruct(p: Tensor) -> Tensor:
    """N (int64) from the stacked residue products p (n, M, N) by the CRT of the module docstring (the
    moduli and CRT constants are Python constants: division by constants, in int32 where it fits)."""
    t: Tensor | None = None
    n: Tensor | None = None
    for i, (m, y, cof) in enumerate(zip(MODULI, INVERSES, COFACTORS, strict=True)):
        s = torch.remainder(torch.remainder(p[i], m) * y, m)  # s_i in [0, m_i); (P mod m) * y < 2**16
        ti, ni = s.to(F64) * (1.0 / m), s.to(I64) * cof
        t, n = (ti, ni) if t is None or n is None else (t + ti, n + ni)
    assert t is not None and n is not None
    # T = the nearest integer to sum s_i / m_i; the int64 sum is exact modulo 2**64, and N fits in int64
    return n - torch.round(t).to(I64) * _wrapped(PRODUCT)


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


def _epilogue(p: Tensor, ua: Tensor, ub: Tensor) -> Tensor:
    return round_int(reconstruct(p), ua, ub)


_COMPILED: dict[str, Callable[..., Any]] = {}


def _kernel(name: str, f: Callable[..., Any], cuda: bool) -> Callable[..., Any]:
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

        def guarded(*args: Tensor) -> Any:
            try:
                return compiled(*args)
            except Exception as e:  # any compiler failure: the eager function gives the same bits
                warnings.warn(f"crt_matmul: torch.compile failed ({type(e).__name__}: {e}); running eagerly",
                              RuntimeWarning, stacklevel=2)
                _COMPILED[name] = f
                return f(*args)

        g = _COMPILED[name] = guarded
    return g


def crt_matmul(a: Tensor, b: Tensor) -> Tensor:
    """C = A @ B under the matmul rule (matmul.py) for 2-D float32 a (M, K) and b (K, N), K <= 2**14:
    aligned, reduced to residues, multiplied on int8 units, reconstructed and rounded once."""
    prep = _kernel("prepare", prepare, a.is_cuda)
    xa, ua = prep(a)
    xbt, ubt = prep(b.t().contiguous())  # B's columns as rows: its residues K-contiguous, (n, N, K)
    p = residue_products(xa, xbt)
    return _kernel("epilogue", _epilogue, a.is_cuda)(p, ua, ubt.t())
