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

Implementation: the aligned entries are held in float64 as r = a * u (exact), and every product r_a * r_b is
exact there.  A float64 GEMM returns N exactly, in any summation order, FMA or not, on any BLAS or device,
whenever every partial sum stays below 2**53 units u_a * u_b.  That holds when K <= 32, when the largest L1 norm
of a row of the aligned A (or of a column of the aligned B) is at most 2**29, or by Cauchy–Schwarz when the
largest row sum of squares of A times the largest column sum of squares of B is below 2**106 (exact_chunks.py).
Where the whole K fails that bound, K is cut into the fewest equal chunks (up to 64, of 32 terms or more)
that each pass it: one exact GEMM per chunk, the multiply-adds of one GEMM in all, and the chunks' integers
are added exactly (in float64 when the sum of their largest magnitudes is below 2**53, else in int64) and rounded once
(crt_matmul.round_int: round to odd at 53 bits, then one RNE conversion).  Where even those fail (nearly
all 24 bits of every aligned integer set over a long K), a = a_hi * 2**12 + a_lo with a_hi = floor(a / 2**12)
(|a_hi| <= 2**12) and 0 <= a_lo < 2**12, b kept whole: every product is below 2**36 and every partial sum of
K <= 2**14 of them below 2**50, so the two float64 GEMMs (a_hi @ b, a_lo @ b) are exact, and N = S_hi * 2**12
+ S_lo (|N| <= 2**62) is rounded once: exactly representable when |fl(N)| < 2**53, otherwise through
round-to-odd at 53 bits (TwoSum) and one RNE conversion (see round_parts).  3-D inputs are a batch of
independent products (the rule per leading index).  Large 2-D products on CUDA compute N from its residues
modulo eight small moduli by int8 tensor-core GEMMs instead (crt_matmul.py), same bits.  On CPU, where the C
module was built, native_matmul.py runs the finite case in C passes around the exact GEMM, same bits.  The NumPy
reference (reference.py) computes N with an int64 matmul and rounds with Python integers.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gensyn_py.repro.crt_matmul import crt_matmul, round_int
from gensyn_py.repro.exact_chunks import chunk_count
from gensyn_py.repro.native_matmul import native_matmul, native_module, native_sum
from gensyn_py.repro.opset import MAX_K

F32 = torch.float32
I32 = torch.int32
I64 = torch.int64
F64 = torch.float64

SMALL_K = 32
SMALL_WORK = 2**18  # multiply-adds (M * K * N) below which per-op overhead outweighs passes over data
SLICE_BITS = 12
# Products of at least this many multiply-adds (M * K * N) take the int8 residue path on CUDA, where
# tensor cores run eight int8 GEMMs faster than two float64 ones (crt_matmul.py; measured in
# bench/repro.py).  CPUs keep the float64 path: their int8 GEMM is no faster without VNNI.
CRT_MIN_WORK = 2**24


_SMALL: dict[tuple[str, torch.device], Tensor] = {}


def _scalar(name: str, device: torch.device) -> Tensor:
    """Cached constants (a Python scalar argument would be wrapped into a tensor on every call).  "magic"
    has shape (1,), not (), so that multiplying a float32 tensor by it computes in float64 (dtype
    promotion ignores the dtype of 0-dim tensors, not of dimensioned ones)."""
    key = (name, device)
    t = _SMALL.get(key)
    if t is None:
        values = {"mask": (0x7F800000, I32), "magic": ([1.5 * 2.0**29], F64), "zero": (0.0, F64),
                  "l1": (1.5 * 2.0**23, F64), "c_per_u": (1.5 * 2.0**52, F64), "u_min": (2.0**-149, F64)}
        v, dt = values[name]
        t = _SMALL[key] = torch.tensor(v, dtype=dt, device=device)
    return t


def _rounded(x: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """(r, c): every entry rounded to its block's unit u = 2**(E - 150), RNE, held exactly in float64 (so
    r = a * u with a the aligned integer of the rule), and c = 1.5 * 2**52 * u per block (keepdim).

    With |x| < 2**24 * u, x + c lies in [2**52 u, 2**53 u), where float64's spacing is exactly u, so
    fl(x + c) - c is x rounded to a multiple of u, ties to even (c / u is even), and the subtraction is
    exact.  c comes from the largest exponent field of the block (as 2**(E - 127)), times 1.5 * 2**29.
    A block of zeros and subnormals (E = 0, unit 2**-149 by the rule) gets c = 0, which leaves its
    entries unchanged (they are multiples of 2**-149 already); a block holding inf or NaN gets c = inf,
    which turns the whole block into NaN.
    """
    # the largest exponent field, as the float32 2**(E - 127) (NaN and inf give the all-ones field: +inf)
    p = torch.amax(torch.bitwise_and(x.view(I32), _scalar("mask", x.device)), dim=dim, keepdim=True).view(F32)
    c = torch.mul(p, _scalar("magic", x.device))  # float64 (promotion converts p exactly)
    return torch.sub(torch.add(x, c), c), c  # x is converted to float64 (exactly) inside the add


def _one_gemm_exact(ra: Tensor, ca: Tensor, rb: Tensor, cb: Tensor) -> bool:
    """True when one float64 GEMM of the rounded entries is exact in any order.  With a = r / u, every
    partial sum of |a_ik * b_kj| is below L1(a_i) * 2**24 (|b| < 2**24), so L1(a_i) <= 2**29 for every row
    (or L1(b_j) <= 2**29 for every column) keeps every partial sum below 2**53 units u_a * u_b.  In
    float64, L1(r_i) <= 2**29 u_i reads L1(r_i) * 1.5 * 2**23 <= c_i, all exact (L1 < 2**38 u_i)."""
    scale = _scalar("l1", ra.device)
    if bool(torch.all(torch.le(torch.mul(torch.sum(torch.abs(ra), dim=-1, keepdim=True), scale), ca))):
        return True
    return bool(torch.all(torch.le(torch.mul(torch.sum(torch.abs(rb), dim=-2, keepdim=True), scale), cb)))


def _unit(c: Tensor) -> Tensor:
    """The block unit u = c / (1.5 * 2**52) (exact), and 2**-149 for a zero/subnormal block (c = 0)."""
    return torch.where(c > 0, torch.div(c, _scalar("c_per_u", c.device)), _scalar("u_min", c.device))


def integer_parts(qa: Tensor, qb: Tensor) -> tuple[Tensor, Tensor]:
    """(S_hi, S_lo) float64, exact integers, with N = S_hi * 2**12 + S_lo, from the aligned integers."""
    hi = torch.floor(torch.mul(qa, 2.0**-SLICE_BITS))  # |hi| <= 2**12, exact
    lo = torch.sub(qa, torch.mul(hi, 2.0**SLICE_BITS))  # 0 <= lo < 2**12, exact
    return torch.matmul(hi, qb), torch.matmul(lo, qb)


def round_parts(s_hi: Tensor, s_lo: Tensor, ua: Tensor, ub: Tensor) -> Tensor:
    """float32 RNE of (s_hi * 2**12 + s_lo) * ua * ub, one rounding (ua, ub: the block units, powers of 2).

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
        return torch.mul(torch.mul(torch.add(s, 0.0), ua), ub).to(F32)
    bb = torch.sub(s, a)
    err = torch.add(torch.sub(a, torch.sub(s, bb)), torch.sub(s_lo, bb))
    sb = s.view(I64)
    even = (sb & 1) == 0
    step = torch.sign(torch.mul(err, s)).to(I64)  # +1: |N| > |s|, -1: |N| < |s|, 0: exact
    odd = torch.add(sb, torch.mul(step, even)).view(F64)
    return torch.mul(torch.mul(torch.add(odd, 0.0), ua), ub).to(F32)  # + 0.0: -0 -> +0


def _special(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """(nan mask, inf value or 0) per output element, from exact 0/1 GEMMs (counts)."""

    def f(t: Tensor) -> Tensor:
        return t.to(F64)

    def mm(x: Tensor, y: Tensor) -> Tensor:
        return torch.matmul(f(x), f(y)) > 0

    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    inf_a, inf_b = torch.isinf(a), torch.isinf(b)
    pa, na = a > 0, a < 0
    pb, nb = b > 0, b < 0
    za, zb = a == 0, b == 0
    one_b = torch.ones(b.shape[-2], 1, dtype=F64, device=b.device)
    one_a = torch.ones(1, a.shape[-1], dtype=F64, device=a.device)
    nan = (torch.matmul(f(nan_a), one_b) > 0) | (torch.matmul(one_a, f(nan_b)) > 0)
    nan = nan | mm(inf_a, zb) | mm(za, inf_b)
    pos = mm(inf_a & pa, pb) | mm(inf_a & na, nb) | mm(pa & ~inf_a, inf_b & pb) | mm(na & ~inf_a, inf_b & nb)
    negi = mm(inf_a & pa, nb) | mm(inf_a & na, pb) | mm(pa & ~inf_a, inf_b & nb) | mm(na & ~inf_a, inf_b & pb)
    nan = nan | (pos & negi)
    infv = torch.where(pos, torch.inf, torch.where(negi, -torch.inf, 0.0)).to(F32)
    return nan, infv


def repro_matmul(a: Tensor, b: Tensor) -> Tensor:
    """C = A @ B for 2-D float32 tensors (or 3-D: one independent product per leading index) under the
    rule in the module docstring (any device)."""
    if a.dtype != F32 or b.dtype != F32:
        raise TypeError("repro_matmul takes float32 tensors")
    if a.dim() not in (2, 3) or b.dim() != a.dim() or a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"bad shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    k = a.shape[-1]
    if k > MAX_K:
        raise ValueError(f"repro_matmul supports K <= {MAX_K}, got {k}")
    if k == 0:  # every entry is the empty sum, N = 0: +0 (the passes below take maxima over K)
        return torch.zeros((*a.shape[:-1], b.shape[-1]), dtype=F32, device=a.device)
    if a.is_cpu and b.is_cpu and native_module() is not None:
        n = native_matmul(a, b)
        if n is not None:  # finite inputs (an overflow is the rule's inf, as below)
            return n
    c = _finite_rule(a, b)
    if math.isfinite(torch.sum(c).item()):  # NaN/inf propagate; a float32 overflow only costs the check below
        return c
    # A non-finite input always makes some output non-finite here (its block's c is inf, so the whole
    # row/column becomes NaN), so checking the output is enough to detect them.  Slow path: exact rule 5.
    fin_a, fin_b = torch.isfinite(a), torch.isfinite(b)
    if bool(fin_a.all()) and bool(fin_b.all()):
        return c  # a genuine overflow of finite inputs
    c = _finite_rule(torch.where(fin_a, a, torch.zeros_like(a)), torch.where(fin_b, b, torch.zeros_like(b)))
    nan, infv = _special(a, b)
    c = torch.where(infv != 0, infv, c)
    return torch.where(nan, torch.full_like(c, torch.nan), c)


def _crt_wanted(a: Tensor, b: Tensor) -> bool:
    """Whether the exact product goes through int8 residues (same bits either way; a speed choice)."""
    work = a.shape[0] * a.shape[1] * b.shape[-1]
    return a.is_cuda and a.dim() == 2 and a.shape[1] > SMALL_K and work >= CRT_MIN_WORK


def _finite_rule(a: Tensor, b: Tensor) -> Tensor:
    if _crt_wanted(a, b):
        return crt_matmul(a, b)
    ra, ca = _rounded(a, -1)
    rb, cb = _rounded(b, -2)
    if a.shape[-1] <= SMALL_K:
        return _one_gemm(ra, rb)
    # a small product tries the L1 bound first: a few ops, where the chunk bound takes a few dozen
    small = a.numel() * b.shape[-1] < SMALL_WORK
    if small and _one_gemm_exact(ra, ca, rb, cb):
        return _one_gemm(ra, rb)
    ua, ub = _unit(ca), _unit(cb)
    qa, qb = torch.div(ra, ua), torch.div(rb, ub)  # r / u: the aligned integers, exact
    chunks = chunk_count(qa, qb)
    if chunks == 1 or (not small and _one_gemm_exact(ra, ca, rb, cb)):
        return _one_gemm(ra, rb)
    return rounded_in_chunks(qa, qb, ua, ub, chunks)


def rounded_in_chunks(qa: Tensor, qb: Tensor, ua: Tensor, ub: Tensor, chunks: int | None) -> Tensor:
    """The rule's result from the aligned integers and block units where one GEMM of the whole K is not exact:
    the sum of `chunks` exact K-chunk GEMMs, or where no few chunks are (None) the two 12-bit-slice GEMMs;
    rounded once."""
    if chunks is None:
        return round_parts(*integer_parts(qa, qb), ua, ub)
    parts = chunk_products(qa, qb, chunks)
    if sum(float(torch.amax(torch.abs(p))) for p in parts) < 2.0**53:
        # every partial sum of the parts is an integer below 2**53: their float64 sum is N, in any order
        s = parts[0]
        for p in parts[1:]:
            s.add_(p)
        return torch.mul(torch.mul(s.add_(0.0), ua), ub).to(F32)  # + 0.0: N = 0 gives +0; exact scalings
    return round_int(_added(parts), ua, ub)


def _one_gemm(ra: Tensor, rb: Tensor) -> Tensor:
    """Every product is a_ik * b_kj * u_a * u_b (exact, >= 2**-298) and every partial sum a multiple of
    u_a * u_b below 2**53 of them (K <= 32: |a|, |b| < 2**24; else a bound checked by the caller), so one
    float64 GEMM gives N * 2**(EA + EB - 300) exactly, and the conversion to float32 is the single rounding."""
    mm = torch.mm(ra, rb) if ra.dim() == 2 else torch.matmul(ra, rb)
    return torch.add(mm, _scalar("zero", ra.device)).float()  # + 0.0: N = 0 gives +0


def chunk_products(qa: Tensor, qb: Tensor, chunks: int) -> list[Tensor]:
    """The exact integer products of `chunks` equal K-ranges (exact_chunks.chunk_count says they are)."""
    k = qa.shape[-1] // chunks
    return [torch.matmul(qa[..., i * k:(i + 1) * k], qb[..., i * k:(i + 1) * k, :]) for i in range(chunks)]


def _added(parts: list[Tensor]) -> Tensor:
    """The sum of float64 integers below 2**53 each (exact in int64, whose sum cannot overflow here)."""
    n = parts[0].to(I64)
    for p in parts[1:]:
        n.add_(p.to(I64))
    return n


def exact_integers(qa: Tensor, qb: Tensor) -> Tensor:
    """N = qa @ qb exactly, int64 (|N| < 2**62), from aligned integers held in float64: the exact K-chunk
    products added in int64, or where no few chunks are exact, the two 12-bit-slice GEMMs."""
    chunks = chunk_count(qa, qb)
    if chunks is None:
        s_hi, s_lo = integer_parts(qa, qb)
        return torch.add(torch.mul(s_hi.to(I64), 2**SLICE_BITS), s_lo.to(I64))
    return _added(chunk_products(qa, qb, chunks))


def repro_index_sum(idx: Tensor, g: Tensor, n: int) -> Tensor:
    """C = onehot(idx, n).T @ g under the matmul rule (an embedding's gradient): row v is the exact sum of
    the aligned rows of g at the positions where idx == v, rounded once; column j is aligned to its block
    exponent over all K rows of g.  idx is 1-D (K,), g is (K, D) float32.

    A row of onehot.T holding a token has block exponent 127 and aligned entries 2**23, so
    C[v, j] = RNE(2**23 * S[v, j] * 2**(127 + EB_j - 300)) = RNE(S[v, j] * 2**(EB_j - 150)) with S the integer
    sum; rows without a token give +0.  S * 2**(EB_j - 150) is a float64 sum of rounded entries (integers below
    2**24 units, K <= 2**14 terms), exact in any order, so it is an index_add of the rounded rows (K * D additions
    where a GEMM with the 0/1 matrix would take n * K * D multiply-adds).
    """
    if g.dtype != F32 or g.dim() != 2 or idx.dim() != 1 or idx.shape[0] != g.shape[0]:
        raise ValueError(f"bad index_sum shapes {tuple(idx.shape)}, {tuple(g.shape)}")
    if g.shape[0] > MAX_K:
        raise ValueError(f"index_sum supports at most {MAX_K} rows, got {g.shape[0]}")
    r, _ = _rounded(g, 0)
    sums = torch.zeros((n, g.shape[1]), dtype=F64, device=g.device).index_add_(0, idx.long(), r)
    out = torch.add(sums, _scalar("zero", g.device)).float()
    if not math.isfinite(torch.sum(out).item()):  # a non-finite entry, or overflow: the general rule
        members = torch.eq(idx.view(1, -1), torch.arange(n, device=g.device).view(-1, 1))
        return repro_matmul(members.to(F32), g)
    return out


def repro_sum(x: Tensor, dim: int) -> Tensor:
    """Sum of a 2-D float32 tensor along dim (0 or 1), keepdim.

    Defined as the matmul rule against a ones vector (ones align to 2**23 at block exponent 127, which
    cancels), i.e. align to the block exponent, add the integers exactly, round once.  Computed as a
    float64 sum of the aligned integers: each |q| <= 2**24 and K <= 2**14, so every partial sum is an
    integer below 2**53 and any summation order is exact (the entries are held as multiples of the unit,
    see _rounded).
    """
    if x.dtype != F32 or x.dim() != 2:
        raise TypeError("repro_sum takes a 2-D float32 tensor")
    if x.shape[dim] > MAX_K:
        raise ValueError(f"repro_sum supports at most {MAX_K} terms")
    if x.is_cpu and native_module() is not None:
        n = native_sum(x, dim)
        if n is not None:
            return n
    r, _ = _rounded(x, dim)
    c = torch.add(torch.sum(r, dim=dim, keepdim=True), _scalar("zero", x.device)).float()
    if math.isfinite(torch.sum(c).item()):
        return c
    # non-finite terms (or overflow): the general matmul path implements every case of the rule
    ones_shape = (x.shape[1], 1) if dim == 1 else (1, x.shape[0])
    ones = torch.ones(ones_shape, dtype=F32, device=x.device)
    return repro_matmul(x, ones) if dim == 1 else repro_matmul(ones, x)
