"""Layer ops of repro mode: a forward and an explicit backward each, written over a backend.

A layer op is ``forward(be, *inputs, **attrs) -> (output, saved)`` and
``backward(be, saved, grad_output, needs) -> one gradient per input`` (None where ``needs`` is False or
the input is not differentiable).  Both are fixed sequences of backend ops, so they define the bits.
``tape.Tape`` chains them into a whole forward and backward pass (training, traces, the NumPy
reference); ``autograd`` wraps each one as a torch.autograd.Function (inference and ``loss.backward()``).
All tensors a layer sees are 2-D (rows, features) unless stated otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gensyn_py.repro import ops as O
from gensyn_py.repro.backend import Arr, Backend

Grads = tuple[Arr | None, ...]


@dataclass(frozen=True)
class Layer:
    name: str
    forward: Callable[..., tuple[Any, Any]]
    backward: Callable[[Backend, Any, Any, tuple[bool, ...]], Grads]


LAYERS: dict[str, Layer] = {}


def _layer(name: str, backward: Callable[[Backend, Any, Any, tuple[bool, ...]], Grads]) -> Callable[..., Any]:
    def register(forward: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
        LAYERS[name] = Layer(name, forward, backward)
        return forward

    return register


# ---- shape ops (exact) ----


def _reshape_bwd(be: Backend, shape: tuple[int, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (be.reshape(g, shape),)


@_layer("reshape", _reshape_bwd)
def reshape(be: Backend, x: Arr, shape: tuple[int, ...]) -> tuple[Arr, Any]:
    return be.reshape(x, shape), tuple(x.shape)


def _narrow_bwd(be: Backend, saved: tuple[int, int, int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    """The gradient of rows [start, start + length) of an (n, d) tensor: zero rows elsewhere."""
    n, start, length = saved
    parts = [g]
    if start:
        parts.insert(0, be.zeros((start, g.shape[1]), g))
    if n - start - length:
        parts.append(be.zeros((n - start - length, g.shape[1]), g))
    return (be.cat(parts, 0) if len(parts) > 1 else g,)


@_layer("rows", _narrow_bwd)
def rows(be: Backend, x: Arr, start: int, length: int) -> tuple[Arr, Any]:
    """Rows [start, start + length) of a 2-D tensor."""
    return be.narrow(x, 0, start, length), (x.shape[0], start, length)


# ---- elementwise ----


def _add_bwd(be: Backend, broadcast: bool, g: Arr, needs: tuple[bool, ...]) -> Grads:
    """a + b with b of the same shape, or (1, d) broadcast over the rows: gb = sum(g, 0) by the sum rule."""
    return g, (be.sum(g, 0) if broadcast else g) if needs[1] else None


@_layer("add", _add_bwd)
def add(be: Backend, a: Arr, b: Arr) -> tuple[Arr, Any]:
    return be.add(a, b), tuple(b.shape) != tuple(a.shape)


def _relu_bwd(be: Backend, mask: Arr, g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (be.where(mask, g, be.const(0.0, g)),)


@_layer("relu", _relu_bwd)
def relu(be: Backend, x: Arr) -> tuple[Arr, Any]:
    """where(x > 0, x, +0); backward where(x > 0, g, +0) (the mask is kept from the forward pass)."""
    mask = be.gt(x, be.const(0.0, x))
    return be.where(mask, x, be.const(0.0, x)), mask


def _gelu_bwd(be: Backend, saved: tuple[Arr, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    return (O.gelu_grad(be, saved[0], saved[1], g),)


@_layer("gelu", _gelu_bwd)
def gelu(be: Backend, x: Arr) -> tuple[Arr, Any]:
    y, cdf = O.gelu_parts(be, x)
    return y, (x, cdf)


# ---- linear, conv, pooling ----


def _linear_bwd(be: Backend, saved: tuple[Arr, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    x, w = saved
    gx, gw, gb = O.linear_grads(be, x, w, g, need_gx=needs[0])
    return gx, gw, be.reshape(gb, (-1,))


@_layer("linear", _linear_bwd)
def linear(be: Backend, x: Arr, w: Arr, b: Arr) -> tuple[Arr, Any]:
    """y = x @ w.T + b (w: (out, in), b: (out,))."""
    return O.linear(be, x, w, be.reshape(b, (1, -1))), (x, w)


def _conv_bwd(be: Backend, saved: tuple[Any, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    cols, w2, xshape, wshape, pad = saved
    b, c, h, wd = xshape
    o, _, k, _ = wshape
    g2 = be.reshape(be.permute(g, (0, 2, 3, 1)), (-1, o))
    gcols, gw, gb = O.linear_grads(be, cols, w2, g2, need_gx=needs[0])
    gx = None
    if gcols is not None:
        terms = be.take(gcols, be.index_map("col2im", (b, c, h, wd, k, pad), g))
        gx = be.reshape(be.sum(terms, 1), xshape)
    return gx, be.reshape(gw, wshape), be.reshape(gb, (-1,))


@_layer("conv2d", _conv_bwd)
def conv2d(be: Backend, x: Arr, w: Arr, b: Arr, pad: int) -> tuple[Arr, Any]:
    """2-D convolution, stride 1, zero padding `pad`: x (B, C, H, W), w (O, C, k, k), b (O,).
    im2col (a take with -1 for padding) -> cols (B*OH*OW, C*k*k); y = linear(cols, w as (O, C*k*k), b),
    laid out as (B, O, OH, OW).  Backward: the linear layer's backward, then col2im: each input element's
    gradient is the sum (sum rule) of the k*k column entries that read it (absent ones are +0)."""
    bsz, c, h, wd = x.shape
    o, _, k, _ = w.shape
    cols = be.take(x, be.index_map("im2col", (bsz, c, h, wd, k, pad), x))
    w2 = be.reshape(w, (o, -1))
    y2 = O.linear(be, cols, w2, be.reshape(b, (1, -1)))
    oh, ow = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    y = be.permute(be.reshape(y2, (bsz, oh, ow, o)), (0, 3, 1, 2))
    return y, (cols, w2, tuple(x.shape), tuple(w.shape), pad)


def _pool_bwd(be: Backend, saved: tuple[Any, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    win, m, xshape, k = saved
    first = be.first_max(win, m)
    gwin = be.where(first, be.reshape(g, (-1, 1)), be.const(0.0, g))
    return (be.take(gwin, be.index_map("unpool", (*xshape, k), g)),)


@_layer("maxpool2d", _pool_bwd)
def maxpool2d(be: Backend, x: Arr, k: int) -> tuple[Arr, Any]:
    """k x k max pooling, stride k (H, W divisible by k): windows via take, max = rowmax (NaN if any NaN,
    a zero maximum is +0).  Backward: the gradient goes to the first window position (row-major) equal
    to the maximum, or to position 0 if none is (a NaN window)."""
    bsz, c, h, wd = x.shape
    win = be.take(x, be.index_map("pool", (bsz, c, h, wd, k), x))
    m = be.rowmax(win)
    return be.reshape(m, (bsz, c, h // k, wd // k)), (win, m, tuple(x.shape), k)


# ---- transformer pieces ----


def _embedding_bwd(be: Backend, saved: tuple[Arr, int], g: Arr, needs: tuple[bool, ...]) -> Grads:
    idx, n = saved
    return None, be.index_sum(idx, g, n)


@_layer("embedding", _embedding_bwd)
def embedding(be: Backend, idx: Arr, w: Arr) -> tuple[Arr, Any]:
    """Rows of w (V, D) at the token ids idx (any shape) -> (idx.size, D).  Backward: index_sum, i.e.
    onehot(idx).T @ g under the matmul rule."""
    flat = be.reshape(idx, (-1,))
    return be.embed(w, flat), (flat, w.shape[0])


def _ln_bwd(be: Backend, saved: tuple[Arr, Arr, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    xhat, s, w = saved
    gx, gw, gb = O.layer_norm_grad(be, xhat, s, w, g, need_gx=needs[0])
    return gx, be.reshape(gw, (-1,)), be.reshape(gb, (-1,))


@_layer("layer_norm", _ln_bwd)
def layer_norm(be: Backend, x: Arr, w: Arr, b: Arr, eps: float = 1e-5) -> tuple[Arr, Any]:
    w2 = be.reshape(w, (1, -1))
    y, xhat, s = O.layer_norm_parts(be, x, w2, be.reshape(b, (1, -1)), eps)
    return y, (xhat, s, w2)


def _heads(be: Backend, z: Arr, b: int, t: int, h: int) -> Arr:
    """(B*T, D) -> (B*H, T, D/H)."""
    return be.reshape(be.permute(be.reshape(z, (b, t, h, -1)), (0, 2, 1, 3)), (b * h, t, -1))


def _merge(be: Backend, z: Arr, b: int, t: int, h: int) -> Arr:
    """(B*H, T, D/H) -> (B*T, D)."""
    return be.reshape(be.permute(be.reshape(z, (b, h, t, -1)), (0, 2, 1, 3)), (b * t, -1))


def _attention_bwd(be: Backend, saved: tuple[Any, ...], g: Arr, needs: tuple[bool, ...]) -> Grads:
    q, k, v, p, scale, dims = saved
    b, t, h = dims
    gy = _heads(be, g, b, t, h)
    gp = be.matmul(gy, be.t(v))
    gv = be.matmul(be.t(p), gy)
    gs = be.mul(O.softmax_grad(be, p, gp), scale)
    gq = be.matmul(gs, k)
    gk = be.matmul(be.t(gs), q)
    return (be.cat([_merge(be, gq, b, t, h), _merge(be, gk, b, t, h), _merge(be, gv, b, t, h)], 1),)


@_layer("attention", _attention_bwd)
def attention(be: Backend, qkv: Arr, batch: int, heads: int) -> tuple[Arr, Any]:
    """Causal multi-head self-attention core.  qkv (B*T, 3D) holds q | k | v; per head (batched repro
    matmuls): s = (q @ k.T) * float32(1/sqrt(D/H)), p = masked_softmax(s, key <= query), y = p @ v;
    heads merged back to (B*T, D).  Backward: gp = gy @ v.T, gv = p.T @ gy, gs = softmax_grad(p, gp) * scale,
    gq = gs @ k, gk = gs.T @ q, concatenated as q | k | v."""
    d = qkv.shape[1] // 3
    t = qkv.shape[0] // batch
    q, k, v = (_heads(be, be.narrow(qkv, 1, i * d, d), batch, t, heads) for i in range(3))
    scale = be.const(1.0 / math.sqrt(d // heads), qkv)
    s = be.mul(be.matmul(q, be.t(k)), scale)
    p = O.masked_softmax(be, s, be.index_map("causal", (t,), qkv))
    y = _merge(be, be.matmul(p, v), batch, t, heads)
    return y, (q, k, v, p, scale, (batch, t, heads))


# ---- loss ----


def _ce_bwd(be: Backend, saved: tuple[Arr, Arr, Arr, Arr], g: Arr, needs: tuple[bool, ...]) -> Grads:
    logits, labels, e, s = saved
    return O.cross_entropy_grad(be, logits, labels, g, be.div(e, s)), None


@_layer("cross_entropy", _ce_bwd)
def cross_entropy(be: Backend, logits: Arr, labels: Arr) -> tuple[Arr, Any]:
    """Mean over the rows of -log_softmax(logits)[i, labels[i]], shape (1, 1); labels 1-D."""
    d, e, s = O.softmax_parts(be, logits)
    logp = be.sub(d, O.log(be, s))
    loss = be.neg(O.mean_all(be, be.gather(logp, labels)))
    return loss, (logits, labels, e, s)


# The general layers of graph models (``train/graphs``) register themselves in LAYERS on import.
from gensyn_py.repro import graph_layers as _graph_layers  # noqa: E402,F401
