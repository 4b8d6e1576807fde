"""NumPy float32 reference interpreter for repro mode, independent of torch (it never imports it).

Elementwise primitives are NumPy float32 ufuncs (IEEE-754 binary32, round-to-nearest-even).  The
matmul rule is implemented separately from ``matmul.py``: aligned integers in int64, the dot product
as one exact int64 matmul (|N| < 2**62), then the single rounding in integer arithmetic.  Composite ops,
layers and training steps are the shared sequences in ``ops``, ``layers`` and ``tape`` run through
``NumpyBackend``; ``run_trace`` re-executes a recorded trace (``trace.Trace``) op by op.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gensyn_py.repro.maps import index_map
from gensyn_py.repro.opset import MAX_K, OP_ARGS

F32 = np.float32
NP = NDArray[Any]


def _bits(x: NP) -> NP:
    return np.ascontiguousarray(x, dtype=F32).view(np.int32).astype(np.int64)


def round_int(n: int, e: int) -> float:
    """float32 value (as a Python float) of RNE(n * 2**e), by integer arithmetic."""
    if n == 0:
        return 0.0
    sign = -1.0 if n < 0 else 1.0
    m = abs(n)
    s = max(m.bit_length() - 24, -149 - e)
    if s > 0:
        q, r = divmod(m, 1 << s)
        half = 1 << (s - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m, e = q, e + s
    if m and m.bit_length() + e > 128:
        return sign * math.inf
    return sign * math.ldexp(m, e)


def round_array(n: NP, e: NP) -> NP:
    """float32 RNE(n * 2**e) elementwise for int64 n (|n| < 2**62) and int64 exponents e (broadcast), in
    integer arithmetic: exact bit length, shift with round-half-even, then an exact float conversion."""
    n, e = np.broadcast_arrays(np.asarray(n, np.int64), np.asarray(e, np.int64))
    neg = n < 0
    m = np.abs(n)
    bl = np.zeros(m.shape, np.int64)
    rem = m.copy()
    for sh in (32, 16, 8, 4, 2, 1):
        big = rem >= (np.int64(1) << sh)
        bl += np.where(big, sh, 0)
        rem = np.where(big, rem >> sh, rem)
    bl += rem > 0
    s = np.maximum(bl - 24, -149 - e)  # bits to drop: keep 24 significant bits, or stop at 2**-149
    sp = np.clip(s, 1, 62)
    q = m >> sp
    r = m - (q << sp)
    half = np.int64(1) << (sp - 1)
    q = q + ((r > half) | ((r == half) & ((q & 1) == 1)))
    q = np.where(s > 62, 0, q)  # m < 2**62 <= half an ulp: rounds to zero
    mant = np.where(s > 0, q, m)
    ex = np.where(s > 0, e + sp, e)
    with np.errstate(over="ignore"):
        val = np.ldexp(mant.astype(np.float64), ex).astype(F32)  # exact unless beyond float32: inf
    return np.where(neg, -val, val).astype(F32)


def aligned(x: NP, axis: int) -> tuple[NP, NP]:
    """(signed aligned integers int64, block exponent) along axis (-1: rows of A, -2: columns of B)."""
    bits = _bits(x)
    ef = (bits >> 23) & 0xFF
    m = np.where(ef > 0, (bits & 0x7FFFFF) + (1 << 23), bits & 0x7FFFFF)
    e = np.maximum(ef, 1)
    blk = np.max(e, axis=axis, keepdims=True)
    s = np.minimum(blk - e, 40)
    p = np.left_shift(np.int64(1), s)
    q = m // p
    r = m - q * p
    half = p // 2
    q = q + ((r > half) | ((r == half) & (s > 0) & (q % 2 == 1)))
    return np.where(bits < 0, -q, q), blk


def matmul(a: NP, b: NP) -> NP:
    """The matmul rule for 2-D float32 arrays, or 3-D (one product per leading index)."""
    a = np.asarray(a, dtype=F32)
    b = np.asarray(b, dtype=F32)
    if a.ndim == 3:
        return np.stack([matmul(a[i], b[i]) for i in range(a.shape[0])]) if a.shape[0] else np.zeros(
            (0, a.shape[1], b.shape[2]), F32)
    if a.shape[1] > MAX_K:
        raise ValueError("K too large")
    fa, fb = np.isfinite(a), np.isfinite(b)
    qa, ea = aligned(np.where(fa, a, F32(0)), 1)
    qb, eb = aligned(np.where(fb, b, F32(0)), 0)
    n = qa @ qb  # exact int64: |n| < 2**48 * K <= 2**62
    out = round_array(n, ea + eb - 300)
    if not (fa.all() and fb.all()):
        bad_rows: NP = np.asarray(~fa.all(axis=1))
        bad_cols: NP = np.asarray(~fb.all(axis=0))
        with np.errstate(all="ignore"):
            for i in range(n.shape[0]):
                for j in range(n.shape[1]):
                    if not (bad_rows[i] or bad_cols[j]):
                        continue
                    prods = a[i, :].astype(np.float64) * b[:, j].astype(np.float64)
                    pos = bool(np.any(prods == math.inf))
                    neg = bool(np.any(prods == -math.inf))
                    if np.isnan(prods).any() or (pos and neg):
                        out[i, j] = F32(math.nan)
                    elif pos or neg:
                        out[i, j] = F32(math.inf if pos else -math.inf)
    return out


def _zfix(a: NP, b: NP, r: NP, use_and: bool) -> NP:
    a, b = np.broadcast_arrays(np.asarray(a, F32), np.asarray(b, F32))
    ai, bi = _bits(a), _bits(b)
    zb = (ai & bi) if use_and else (ai | bi)
    zf = zb.astype(np.int32).view(F32)
    return np.where((a == 0) & (b == 0), zf, r).astype(F32)


class NumpyBackend:
    """Backend interface of ``ops`` in NumPy float32."""

    def const(self, v: float, like: Any) -> Any:
        return F32(v)

    def zeros(self, shape: tuple[int, ...], like: Any) -> Any:
        return np.zeros(shape, F32)

    def index_map(self, kind: str, params: tuple[int, ...], like: Any) -> Any:
        return index_map(kind, tuple(params))

    @staticmethod
    def _e(f: Any, *args: Any) -> Any:
        with np.errstate(all="ignore"):
            return f(*args)

    def add(self, a: Any, b: Any) -> Any:
        return self._e(np.add, a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._e(np.subtract, a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._e(np.multiply, a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self._e(np.divide, a, b)

    def sqrt(self, a: Any) -> Any:
        return self._e(np.sqrt, a)

    def neg(self, a: Any) -> Any:
        return np.negative(a)

    def abs(self, a: Any) -> Any:
        return np.abs(a)

    def maximum(self, a: Any, b: Any) -> Any:
        return _zfix(a, b, self._e(np.maximum, a, b), use_and=True)

    def minimum(self, a: Any, b: Any) -> Any:
        return _zfix(a, b, self._e(np.minimum, a, b), use_and=False)

    def clamp(self, a: Any, lo: float, hi: float) -> Any:
        return self.minimum(self.maximum(a, F32(lo)), F32(hi))

    def lt(self, a: Any, b: Any) -> Any:
        return self._e(np.less, a, b)

    def le(self, a: Any, b: Any) -> Any:
        return self._e(np.less_equal, a, b)

    def gt(self, a: Any, b: Any) -> Any:
        return self._e(np.greater, a, b)

    def ge(self, a: Any, b: Any) -> Any:
        return self._e(np.greater_equal, a, b)

    def eq(self, a: Any, b: Any) -> Any:
        return self._e(np.equal, a, b)

    def isnan(self, a: Any) -> Any:
        return np.isnan(a)

    def where(self, c: Any, a: Any, b: Any) -> Any:
        return np.where(c, a, b).astype(F32)

    def floor(self, a: Any) -> Any:
        return np.floor(a)

    def to_int32(self, a: Any) -> Any:
        x = np.where(np.isnan(a), F32(0), a)
        x = np.clip(x, F32(-2147483648.0), F32(2147483520.0))
        return np.trunc(x).astype(np.int32)

    def from_int(self, n: Any) -> Any:
        return np.asarray(n).astype(np.float64).astype(F32)

    def ldexp(self, a: Any, n: Any) -> Any:
        nn = np.clip(np.asarray(n, dtype=np.int64), -400, 400)
        with np.errstate(all="ignore"):
            return np.ldexp(np.asarray(a, F32).astype(np.float64), nn).astype(F32)

    def ldexp_f(self, a: Any, n: Any) -> Any:
        return self.ldexp(a, np.asarray(n).astype(np.int64))

    def frexp(self, a: Any) -> tuple[Any, Any]:
        a = np.asarray(a, F32)
        with np.errstate(all="ignore"):
            m, e = np.frexp(a)
        special = (a == 0) | ~np.isfinite(a)
        return np.where(special, a, m).astype(F32), np.where(special, 0, e).astype(np.int32)

    def matmul(self, a: Any, b: Any) -> Any:
        return matmul(a, b)

    def sum(self, x: Any, dim: int) -> Any:
        if dim == 1:
            return matmul(x, np.ones((x.shape[1], 1), F32))
        return matmul(np.ones((1, x.shape[0]), F32), x)

    def index_sum(self, idx: Any, g: Any, n: int) -> Any:
        """onehot(idx, n).T @ g under the matmul rule, literally."""
        members = np.asarray(idx, np.int64).reshape(1, -1) == np.arange(n).reshape(-1, 1)
        return matmul(members.astype(F32), g)

    def rowmax(self, x: Any) -> Any:
        return np.add(np.max(x, axis=-1, keepdims=True), F32(0))

    def first_max(self, w: Any, m: Any) -> Any:
        first = np.argmax(np.asarray(w) == np.asarray(m), axis=1)  # first True; 0 if none
        out = np.zeros(np.shape(w), dtype=bool)
        out[np.arange(out.shape[0]), first] = True
        return out

    def t(self, x: Any) -> Any:
        return np.swapaxes(x, -1, -2)

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        return np.reshape(x, tuple(shape))

    def permute(self, x: Any, dims: tuple[int, ...]) -> Any:
        return np.transpose(x, tuple(dims))

    def narrow(self, x: Any, dim: int, start: int, length: int) -> Any:
        sl = [slice(None)] * np.ndim(x)
        sl[dim] = slice(start, start + length)
        return np.asarray(x)[tuple(sl)]

    def cat(self, xs: list[Any], dim: int) -> Any:
        return np.concatenate(xs, axis=dim)

    def append_ones(self, x: Any) -> Any:
        return np.concatenate([x, np.ones((x.shape[0], 1), F32)], axis=1)

    def take(self, x: Any, idx: Any) -> Any:
        """x.flat[idx], -1 giving +0."""
        flat = np.concatenate([np.asarray(x).reshape(-1), np.zeros(1, np.asarray(x).dtype)])
        return flat[np.asarray(idx, np.int64)]

    def embed(self, w: Any, idx: Any) -> Any:
        return np.asarray(w)[np.asarray(idx, np.int64)]

    def gather(self, x: Any, labels: Any) -> Any:
        return np.take_along_axis(x, np.asarray(labels, np.int64).reshape(-1, 1), axis=1)

    def onehot(self, labels: Any, n: int, like: Any) -> Any:
        return np.eye(n, dtype=F32)[np.asarray(labels, np.int64)]


NUMPY = NumpyBackend()


def same_bits(a: Any, b: Any) -> bool:
    """Equal shape, dtype and bits, except that any float NaN equals any NaN (payloads are not defined)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if not np.array_equal(nan_a, nan_b):
        return False
    ints = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64)
    return bool(np.array_equal(ints[~nan_a], b.view(ints.dtype)[~nan_b]))


def execute(code: str, inputs: list[Any], attrs: tuple[Any, ...]) -> Any:
    """One trace op (``opset.OP_ARGS`` names, plus frexp's two outputs frexp_m and frexp_e) on NumPy."""
    if code in ("frexp_m", "frexp_e"):
        m, e = NUMPY.frexp(inputs[0])
        return np.asarray(m if code == "frexp_m" else e)
    args: list[Any] = []
    tensors = iter(inputs)
    values = iter(attrs)
    for kind in OP_ARGS[code]:
        if kind == "t":
            args.append(next(tensors))
        elif kind == "ts":
            args.append(list(tensors))
        elif kind == "a":
            args.append(next(values))
        else:
            args.append(None)
    return np.asarray(getattr(NUMPY, code)(*args))


def run_trace(codes: list[str], inputs: list[tuple[int, ...]], attrs: list[tuple[Any, ...]],
              recorded: list[Any]) -> int | None:
    """Re-execute a trace from its named inputs alone (ops with code "input" take their recorded value)
    and compare every output with the recorded one; the index of the first op that differs, or None."""
    values: list[Any] = []
    for i, code in enumerate(codes):
        v = recorded[i] if code == "input" else execute(code, [values[j] for j in inputs[i]], attrs[i])
        if not same_bits(v, recorded[i]):
            return i
        values.append(v)
    return None
NUMPY = NumpyBackend()
