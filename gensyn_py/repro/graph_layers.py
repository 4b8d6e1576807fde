"""Layer ops for models given as graphs (``train/graphs``): the general pieces a registry family writes by
hand, each a fixed sequence of backend ops with an explicit backward, like ``layers``.

Broadcasting is by whole leading dimensions only: a broadcast operand is (1, C) against (R, C), so its
gradient is one repro sum over the rows. The interpreter reshapes to that form, or refuses the node.
"""

from __future__ import annotations

import math
from typing import Any

from gensyn_py.repro import ops as O
from gensyn_py.repro.backend import Arr, Backend
from gensyn_py.repro.layers import Grads, _layer


def _rows(be: Backend, g: Arr) -> Arr:
    """The gradient of a (1, C) operand broadcast over the rows of a (R, C) one."""
    return be.reshape(be.sum(g, 0), (1, -1))


# ---- elementwise with broadcasting ----


def _binary_bwd(be: Backend, saved: tuple[Any, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    op, a, b, y, a_wide, b_wide = saved
    if op == "sub":
        ga, gb = g, be.neg(g)
    elif op == "mul":
        ga = be.mul(g, b) if needs[0] else None
        gb = be.mul(g, a) if needs[1] else None
    else:  # div: ga = g / b, gb = -(g * y) / b
        ga = be.div(g, b) if needs[0] else None
        gb = be.neg(be.div(be.mul(g, y), b)) if needs[1] else None
    ga = None if ga is None or not needs[0] else (_rows(be, ga) if a_wide else ga)
    gb = None if gb is None or not needs[1] else (_rows(be, gb) if b_wide else gb)
    return ga, gb


@_layer("binary", _binary_bwd)
def binary(be: Backend, a: Arr, b: Arr, op: str) -> tuple[Arr, Any]:
    """a op b for op in sub, mul, div (add is ``layers.add``): equal shapes, or one operand (1, C) against a
    (R, C) other, broadcast over the rows."""
    y = {"sub": be.sub, "mul": be.mul, "div": be.div}[op](a, b)
    a_wide = tuple(a.shape) != tuple(y.shape)
    b_wide = tuple(b.shape) != tuple(y.shape)
    return y, (op, a, b, y, a_wide, b_wide)


def _scalar_bwd(be: Backend, saved: tuple[str, float, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    op, c, like = saved
    if op in ("add", "sub"):
        return (g,)
    if op == "rsub":
        return (be.neg(g),)
    if op == "mul":
        return (be.mul(g, be.const(c, like)),)
    return (be.div(g, be.const(c, like)),)


@_layer("scalar", _scalar_bwd)
def scalar(be: Backend, x: Arr, op: str, c: float) -> tuple[Arr, Any]:
    """x op c for a float32 constant c: add, sub (x - c), rsub (c - x), mul, div (x / c)."""
    k = be.const(c, x)
    y = {"add": lambda: be.add(x, k), "sub": lambda: be.sub(x, k), "rsub": lambda: be.sub(k, x),
         "mul": lambda: be.mul(x, k), "div": lambda: be.div(x, k)}[op]()
    return y, (op, c, x)


def _neg_bwd(be: Backend, saved: None, g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (be.neg(g),)


@_layer("neg", _neg_bwd)
def neg(be: Backend, x: Arr) -> tuple[Arr, Any]:
    return be.neg(x), None


def _sigmoid_bwd(be: Backend, y: Arr, g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (be.mul(be.mul(g, y), be.sub(be.const(1.0, y), y)),)


@_layer("sigmoid", _sigmoid_bwd)
def sigmoid(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """1 / (1 + exp(-x)); backward g * y * (1 - y)."""
    one = be.const(1.0, x)
    y = be.div(one, be.add(one, O.exp(be, be.neg(x))))
    return y, y


def _tanh_bwd(be: Backend, y: Arr, g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (be.mul(g, be.sub(be.const(1.0, y), be.mul(y, y))),)


@_layer("tanh", _tanh_bwd)
def tanh(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """``ops.tanh``; backward g * (1 - y * y)."""
    y = O.tanh(be, x)
    return y, y


def _erf_bwd(be: Backend, x: Arr, g: Arr, needs: tuple[bool, ...]) -> Grads:
    pdf = be.mul(O.exp(be, be.neg(be.mul(x, x))), be.const(2.0 / math.sqrt(math.pi), x))
    return (be.mul(g, pdf),)


@_layer("erf", _erf_bwd)
def erf(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """``ops.erf``; backward g * exp(-x * x) * float32(2 / sqrt(pi))."""
    return O.erf(be, x), x


# ---- contractions ----


def _matmul_bwd(be: Backend, saved: tuple[Arr, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    a, b = saved
    ga = be.matmul(g, be.t(b)) if needs[0] else None
    gb = be.matmul(be.t(a), g) if needs[1] else None
    return ga, gb


@_layer("matmul", _matmul_bwd)
def matmul(be: Backend, a: Arr, b: Arr) -> tuple[Arr, Any]:
    """(M, K) @ (K, N), or batched (P, M, K) @ (P, K, N), under the matmul rule; backward ga = g @ b.T,
    gb = a.T @ g."""
    return be.matmul(a, b), (a, b)


# ---- data movement ----


def _permute_bwd(be: Backend, perm: tuple[int, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
    return (be.permute(g, inverse),)


@_layer("permute", _permute_bwd)
def permute(be: Backend, x: Arr, perm: tuple[int, ...]) -> tuple[Arr, Any]:
    return be.permute(x, perm), perm


def _pad_along(be: Backend, g: Arr, dim: int, before: int, after: int) -> Arr:
    """g with `before` and `after` zero slices added along `dim`."""
    parts = [g]
    shape = list(g.shape)
    if before:
        parts.insert(0, be.zeros(tuple([*shape[:dim], before, *shape[dim + 1:]]), g))
    if after:
        parts.append(be.zeros(tuple([*shape[:dim], after, *shape[dim + 1:]]), g))
    return be.cat(parts, dim) if len(parts) > 1 else g


def _narrow_bwd(be: Backend, saved: tuple[int, int, int, int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    dim, start, length, n = saved
    return (_pad_along(be, g, dim, start, n - start - length),)


@_layer("narrow", _narrow_bwd)
def narrow(be: Backend, x: Arr, dim: int, start: int, length: int) -> tuple[Arr, Any]:
    """Entries [start, start + length) along `dim`; backward pads the gradient with zeros."""
    return be.narrow(x, dim, start, length), (dim, start, length, x.shape[dim])


def _concat_bwd(be: Backend, saved: tuple[int, tuple[int, ...]], g: Arr, needs: tuple[bool, ...]) -> Grads:
    dim, sizes = saved
    out: list[Arr | None] = []
    start = 0
    for size, need in zip(sizes, needs, strict=True):
        out.append(be.narrow(g, dim, start, size) if need else None)
        start += size
    return tuple(out)


@_layer("concat", _concat_bwd)
def concat(be: Backend, *xs: Arr, dim: int) -> tuple[Arr, Any]:
    return be.cat(list(xs), dim), (dim, tuple(x.shape[dim] for x in xs))


def _subsample(be: Backend, x: Arr, dim: int, s: int, out: int) -> Arr:
    """Positions 0, s, 2s, ... (`out` of them) along `dim`: pad to out * s, split into (out, s), keep 0."""
    n = x.shape[dim]
    x = _pad_along(be, x, dim, 0, out * s - n)
    shape = list(x.shape)
    x = be.reshape(x, tuple([*shape[:dim], out, s, *shape[dim + 1:]]))
    x = be.narrow(x, dim + 1, 0, 1)
    return be.reshape(x, tuple([*shape[:dim], out, *shape[dim + 1:]]))


def _unsubsample(be: Backend, g: Arr, dim: int, s: int, n: int) -> Arr:
    out = g.shape[dim]
    shape = list(g.shape)
    g = be.reshape(g, tuple([*shape[:dim], out, 1, *shape[dim + 1:]]))
    g = _pad_along(be, g, dim + 1, 0, s - 1)
    g = be.reshape(g, tuple([*shape[:dim], out * s, *shape[dim + 1:]]))
    return be.narrow(g, dim, 0, n)


def _stride_bwd(be: Backend, saved: tuple[int, int, int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    s, h, w = saved
    return (_unsubsample(be, _unsubsample(be, g, 3, s, w), 2, s, h),)


@_layer("stride2d", _stride_bwd)
def stride2d(be: Backend, x: Arr, s: int) -> tuple[Arr, Any]:
    """Every s-th row and column of (B, C, H, W), from the first: a stride-s convolution is the stride-1
    one at these positions (exact data movement; the skipped positions' products are wasted work)."""
    h, w = x.shape[2], x.shape[3]
    y = _subsample(be, _subsample(be, x, 2, s, (h - 1) // s + 1), 3, s, (w - 1) // s + 1)
    return y, (s, h, w)


# ---- softmax and pooling ----


def _softmax_bwd(be: Backend, p: Arr, g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (O.softmax_grad(be, p, g),)


@_layer("softmax", _softmax_bwd)
def softmax(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """Softmax along the last dim (on the 2-D (rows, last) view); backward ``ops.softmax_grad``."""
    n = x.shape[-1]
    p = be.reshape(O.softmax(be, be.reshape(x, (-1, n))), tuple(x.shape))
    return p, p


@_layer("causal_softmax", _softmax_bwd)
def causal_softmax(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """Softmax along the last dim over key positions <= the query position (x (..., T, T)): ``ops.masked_softmax``
    with the causal index map; the masked entries are +0 and get no gradient."""
    t = x.shape[-1]
    p = O.masked_softmax(be, x, be.index_map("causal", (t,), x))
    return p, p


def _mean_bwd(be: Backend, saved: tuple[int, int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    n, length = saved
    share = be.div(be.reshape(g, (n, 1)), be.const(float(length), g))
    return (be.add(be.zeros((n, length), g), share),)


@_layer("mean_rows", _mean_bwd)
def mean_rows(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """The mean of each row of (N, L) as (N, 1): a repro sum, then one division by float32(L)."""
    n, length = x.shape
    return be.div(be.reshape(be.sum(x, 1), (n, 1)), be.const(float(length), x)), (n, length)


def _avgpool_bwd(be: Backend, saved: tuple[tuple[int, ...], int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    xshape, k = saved
    share = be.div(be.reshape(g, (-1, 1)), be.const(float(k * k), g))
    gwin = be.add(be.zeros((share.shape[0], k * k), g), share)
    return (be.take(gwin, be.index_map("unpool", (*xshape, k), g)),)


@_layer("avgpool2d", _avgpool_bwd)
def avgpool2d(be: Backend, x: Arr, k: int) -> tuple[Arr, Any]:
    """k x k average pooling, stride k: each window's repro sum divided by float32(k * k)."""
    bsz, c, h, wd = x.shape
    win = be.take(x, be.index_map("pool", (bsz, c, h, wd, k), x))
    m = be.div(be.reshape(be.sum(win, 1), (-1, 1)), be.const(float(k * k), x))
    return be.reshape(m, (bsz, c, h // k, wd // k)), (tuple(x.shape), k)
