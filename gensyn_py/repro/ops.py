"""Composite repro ops, written once over a backend so torch and the NumPy reference run the same sequence.

Every composite is a fixed sequence of primitives (see ``primitives``) and repro matmuls/sums; the
sequence itself is the definition.  ``TorchBackend`` runs it with torch; ``reference.NumpyBackend``
runs the identical sequence with NumPy float32.  Also here: torch autograd functions (linear,
relu, cross-entropy) whose backward passes use the same composites, a tiny MLP training step, and
SGD-momentum / AdamW updates built from primitives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, cast

import torch
from torch import Tensor

from gensyn_py.repro import primitives as P
from gensyn_py.repro.matmul import repro_matmul, repro_sum

Arr = Any  # torch.Tensor or numpy.ndarray, depending on the backend


class Backend(Protocol):
    def const(self, v: float, like: Arr) -> Arr: ...
    def add(self, a: Arr, b: Arr) -> Arr: ...
    def sub(self, a: Arr, b: Arr) -> Arr: ...
    def mul(self, a: Arr, b: Arr) -> Arr: ...
    def div(self, a: Arr, b: Arr) -> Arr: ...
    def sqrt(self, a: Arr) -> Arr: ...
    def neg(self, a: Arr) -> Arr: ...
    def abs(self, a: Arr) -> Arr: ...
    def maximum(self, a: Arr, b: Arr) -> Arr: ...
    def minimum(self, a: Arr, b: Arr) -> Arr: ...
    def clamp(self, a: Arr, lo: float, hi: float) -> Arr: ...
    def lt(self, a: Arr, b: Arr) -> Arr: ...
    def gt(self, a: Arr, b: Arr) -> Arr: ...
    def eq(self, a: Arr, b: Arr) -> Arr: ...
    def isnan(self, a: Arr) -> Arr: ...
    def where(self, c: Arr, a: Arr, b: Arr) -> Arr: ...
    def floor(self, a: Arr) -> Arr: ...
    def to_int32(self, a: Arr) -> Arr: ...
    def from_int(self, n: Arr) -> Arr: ...
    def ldexp(self, a: Arr, n: Arr) -> Arr: ...
    def ldexp_f(self, a: Arr, n: Arr) -> Arr: ...
    def frexp(self, a: Arr) -> tuple[Arr, Arr]: ...
    def matmul(self, a: Arr, b: Arr) -> Arr: ...
    def sum(self, x: Arr, dim: int) -> Arr: ...
    def rowmax(self, x: Arr) -> Arr: ...
    def t(self, x: Arr) -> Arr: ...
    def append_ones(self, x: Arr) -> Arr: ...
    def gather(self, x: Arr, labels: Arr) -> Arr: ...
    def onehot(self, labels: Arr, n: int, like: Arr) -> Arr: ...


class TorchBackend:
    """The torch implementation of the backend interface (any device)."""

    def const(self, v: float, like: Tensor) -> Tensor:
        return P.const(v, like.device)

    # Plain torch kernels are the primitives themselves (the P.* versions add a dtype check only);
    # binding them directly keeps the per-op Python overhead down.
    add = staticmethod(torch.add)
    sub = staticmethod(torch.sub)
    mul = staticmethod(torch.mul)
    div = staticmethod(torch.div)
    sqrt = staticmethod(P.sqrt)  # not torch.sqrt: see primitives.sqrt
    neg = staticmethod(torch.neg)
    abs = staticmethod(torch.abs)
    maximum = staticmethod(P.maximum)
    minimum = staticmethod(P.minimum)
    clamp = staticmethod(P.clamp)
    lt = staticmethod(torch.lt)
    gt = staticmethod(torch.gt)
    eq = staticmethod(torch.eq)
    isnan = staticmethod(torch.isnan)
    where = staticmethod(torch.where)
    floor = staticmethod(torch.floor)
    to_int32 = staticmethod(P.to_int32)
    from_int = staticmethod(P.from_int)
    ldexp = staticmethod(P.ldexp)
    ldexp_f = staticmethod(P.ldexp_f)
    frexp = staticmethod(P.frexp)
    matmul = staticmethod(repro_matmul)

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return repro_sum(x, dim)

    def rowmax(self, x: Tensor) -> Tensor:
        """Max along dim 1, keepdim, then + 0.0: NaN if any NaN; a zero maximum is returned as +0.
        (A set maximum is order-free except for the sign of zero, which the + 0.0 removes.)"""
        return torch.add(torch.amax(x, dim=1, keepdim=True), P.const(0.0, x.device))

    def t(self, x: Tensor) -> Tensor:
        return x.t().contiguous()

    def append_ones(self, x: Tensor) -> Tensor:
        return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)], dim=1)

    def gather(self, x: Tensor, labels: Tensor) -> Tensor:
        return torch.gather(x, 1, labels.view(-1, 1).to(torch.int64))

    def onehot(self, labels: Tensor, n: int, like: Tensor) -> Tensor:
        z = torch.zeros(labels.shape[0], n, dtype=torch.float32, device=like.device)
        return z.scatter_(1, labels.view(-1, 1).to(torch.int64), 1.0)


TORCH: Backend = cast(Backend, TorchBackend())  # torch kernels bound directly; see above

# ---- constants (float32 values of these doubles) ----
LOG2E = 1.4426950408889634
LN2_HI = 0.693145751953125  # 0x3F317200: 15 significant bits, n * LN2_HI exact for |n| < 512
LN2_LO = 1.4286067653301870e-06  # float32(ln 2 - LN2_HI)
EXP_COEF = [1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0]  # Horner, deg 7
LOG_COEF = [2.0 / 9.0, 2.0 / 7.0, 2.0 / 5.0, 2.0 / 3.0, 2.0]  # in z = s*s, Horner
TANH_COEF = [  # tanh x = x + x*z*(c3 + z*(c5 + ...)), z = x*x, Taylor to x**17, used for |x| < 0.5
    6404582.0 / 10854718875.0,
    -929569.0 / 638512875.0,
    21844.0 / 6081075.0,
    -1382.0 / 155925.0,
    62.0 / 2835.0,
    -17.0 / 315.0,
    2.0 / 15.0,
    -1.0 / 3.0,
]
SQRT_HALF = 0.70710678118654752


def _horner(be: Backend, coefs: list[float], x: Arr) -> Arr:
    p = be.const(coefs[0], x)
    for c in coefs[1:]:
        p = be.add(be.mul(p, x), be.const(c, x))
    return p


def exp(be: Backend, x: Arr) -> Arr:
    """exp: clamp to [-104, 89] (NaN -> 0 there), n = floor(x*log2e + 1/2),
    r = (x - n*LN2_HI) - n*LN2_LO, exp = ldexp(poly7(r), n) with Taylor coefficients; NaN -> NaN."""
    nan = be.isnan(x)
    xc = be.where(nan, be.const(0.0, x), be.clamp(x, -104.0, 89.0))
    n = be.floor(be.add(be.mul(xc, be.const(LOG2E, x)), be.const(0.5, x)))
    r = be.sub(be.sub(xc, be.mul(n, be.const(LN2_HI, x))), be.mul(n, be.const(LN2_LO, x)))
    p = _horner(be, EXP_COEF, r)
    y = be.ldexp_f(p, n)
    return be.where(nan, x, y)


def log(be: Backend, x: Arr) -> Arr:
    """log: x = m*2**e (frexp), m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1),
    log = e*LN2_HI + (s*poly(s*s) + e*LN2_LO); log(0) = -inf, log(<0) = NaN, log(inf) = inf."""
    m, e = be.frexp(x)
    ef = be.from_int(e)
    small = be.lt(m, be.const(SQRT_HALF, x))
    m = be.where(small, be.add(m, m), m)
    ef = be.where(small, be.sub(ef, be.const(1.0, x)), ef)
    f = be.sub(m, be.const(1.0, x))
    s = be.div(f, be.add(m, be.const(1.0, x)))
    z = be.mul(s, s)
    lm = be.mul(s, _horner(be, LOG_COEF, z))
    y = be.add(be.mul(ef, be.const(LN2_HI, x)), be.add(lm, be.mul(ef, be.const(LN2_LO, x))))
    zero = be.const(0.0, x)
    y = be.where(be.eq(x, zero), be.const(-float("inf"), x), y)
    y = be.where(be.lt(x, zero), be.const(float("nan"), x), y)
    y = be.where(be.eq(x, be.const(float("inf"), x)), x, y)
    return be.where(be.isnan(x), x, y)


def tanh(be: Backend, x: Arr) -> Arr:
    """tanh: |x| < 0.5: odd Taylor polynomial to x**17; else t = exp(-2|x|), (1-t)/(1+t) with x's sign."""
    a = be.abs(x)
    z = be.mul(x, x)
    small = be.add(x, be.mul(be.mul(x, z), _horner(be, TANH_COEF, z)))
    t = exp(be, be.mul(a, be.const(-2.0, x)))
    one = be.const(1.0, x)
    big = be.div(be.sub(one, t), be.add(one, t))
    big = be.where(be.lt(x, be.const(0.0, x)), be.neg(big), big)
    y = be.where(be.lt(a, be.const(0.5, x)), small, big)
    return be.where(be.isnan(x), x, y)


def relu(be: Backend, x: Arr) -> Arr:
    """x if x > 0 else +0 (NaN -> +0)."""
    zero = be.const(0.0, x)
    return be.where(be.gt(x, zero), x, zero)


def softmax_parts(be: Backend, x: Arr) -> tuple[Arr, Arr, Arr]:
    """For 2-D logits (B, C) along dim 1: (d = x - rowmax, e = exp(d), s = rowsum(e))."""
    d = be.sub(x, be.rowmax(x))
    e = exp(be, d)
    return d, e, be.sum(e, 1)


def softmax(be: Backend, x: Arr) -> Arr:
    _, e, s = softmax_parts(be, x)
    return be.div(e, s)


def log_softmax(be: Backend, x: Arr) -> Arr:
    d, _, s = softmax_parts(be, x)
    return be.sub(d, log(be, s))


def mean_all(be: Backend, v: Arr) -> Arr:
    """Mean of a (B, 1) column: repro sum over dim 0, then one division by float32(B)."""
    return be.div(be.sum(v, 0), be.const(float(v.shape[0]), v))


def cross_entropy(be: Backend, logits: Arr, labels: Arr) -> Arr:
    """Mean over the batch of -log_softmax(logits)[i, labels[i]]; shape (1, 1)."""
    return be.neg(mean_all(be, be.gather(log_softmax(be, logits), labels)))


def cross_entropy_grad(be: Backend, logits: Arr, labels: Arr, g: Arr, p: Arr | None = None) -> Arr:
    """d loss / d logits = (softmax - onehot) * (g / B)  (p: softmax(logits) if already computed)."""
    if p is None:
        p = softmax(be, logits)
    oh = be.onehot(labels, logits.shape[1], logits)
    scale = be.div(g, be.const(float(logits.shape[0]), logits))
    return be.mul(be.sub(p, oh), scale)


def layer_norm(be: Backend, x: Arr, w: Arr, b: Arr, eps: float = 1e-5) -> Arr:
    """Over dim 1: mu = sum/D, d = x - mu, var = sum(d*d)/D, y = d / sqrt(var + eps) * w + b."""
    n = be.const(float(x.shape[1]), x)
    d = be.sub(x, be.div(be.sum(x, 1), n))
    var = be.div(be.sum(be.mul(d, d), 1), n)
    y = be.div(d, be.sqrt(be.add(var, be.const(eps, x))))
    return be.add(be.mul(y, w), b)


def linear(be: Backend, x: Arr, w: Arr, b: Arr) -> Arr:
    """y = x @ w.T + b  (w: (out, in), b: (1, out))."""
    return be.add(be.matmul(x, be.t(w)), b)


def linear_grads(be: Backend, x: Arr, w: Arr, gy: Arr, need_gx: bool = True) -> tuple[Arr, Arr, Arr]:
    """(gx = gy @ w (None unless need_gx), gw = gy.T @ x, gb = sum over dim 0 of gy)."""
    gx = be.matmul(gy, w) if need_gx else None
    # gb is computed inside the gw matmul as an extra ones column of x: a ones column aligns to 2**23 at
    # block exponent 127, so that column is exactly sum(gy, 0) under the sum rule (same bits, one call).
    gwb = be.matmul(be.t(gy), be.append_ones(x))
    return gx, gwb[:, :-1], gwb[:, -1:].reshape(1, -1)


def relu_grad(be: Backend, x: Arr, gy: Arr) -> Arr:
    zero = be.const(0.0, x)
    return be.where(be.gt(x, zero), gy, zero)


# ---- a tiny MLP (linear -> relu -> linear -> cross-entropy), explicit forward and backward ----

MlpParams = dict[str, Arr]  # w1 (H, D), b1 (1, H), w2 (C, H), b2 (1, C)


def mlp_loss_and_grads(be: Backend, p: MlpParams, x: Arr, labels: Arr) -> tuple[Arr, MlpParams]:
    h = linear(be, x, p["w1"], p["b1"])
    a = relu(be, h)
    logits = linear(be, a, p["w2"], p["b2"])
    d, e, s = softmax_parts(be, logits)
    logp = be.sub(d, log(be, s))
    loss = be.neg(mean_all(be, be.gather(logp, labels)))  # == cross_entropy(be, logits, labels)
    glog = cross_entropy_grad(be, logits, labels, be.const(1.0, x), be.div(e, s))
    ga, gw2, gb2 = linear_grads(be, a, p["w2"], glog)
    gh = relu_grad(be, h, ga)
    _, gw1, gb1 = linear_grads(be, x, p["w1"], gh, need_gx=False)
    return loss, {"w1": gw1, "b1": gb1, "w2": gw2, "b2": gb2}


# ---- optimizers built from primitives (scalars are float32 constants) ----


@dataclass
class SgdConfig:
    lr: float = 0.05
    momentum: float = 0.9


def sgd_momentum(be: Backend, p: Arr, g: Arr, buf: Arr, cfg: SgdConfig) -> tuple[Arr, Arr]:
    """buf = momentum*buf + g; p = p - lr*buf.  Returns (p, buf)."""
    buf = be.add(be.mul(buf, be.const(cfg.momentum, p)), g)
    return be.sub(p, be.mul(buf, be.const(cfg.lr, p))), buf


@dataclass
class AdamWConfig:
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01


def adamw(be: Backend, p: Arr, g: Arr, m: Arr, v: Arr, b1t: Arr, b2t: Arr, cfg: AdamWConfig) -> tuple[Arr, Arr, Arr]:
    """One AdamW step.  b1t, b2t are float32 beta1**t, beta2**t (kept as running float32 products by
    the caller: b1t_new = b1t * beta1).  Op order:
    p = p - (lr*wd)*p; m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g;
    p = p - lr * ((m / (1 - b1t)) / (sqrt(v / (1 - b2t)) + eps)).  Returns (p, m, v)."""
    one = be.const(1.0, p)
    b1 = be.const(cfg.beta1, p)
    b2 = be.const(cfg.beta2, p)
    lr = be.const(cfg.lr, p)
    p = be.sub(p, be.mul(p, be.mul(lr, be.const(cfg.weight_decay, p))))
    m = be.add(be.mul(m, b1), be.mul(g, be.sub(one, b1)))
    v = be.add(be.mul(v, b2), be.mul(be.mul(g, be.sub(one, b2)), g))
    mhat = be.div(m, be.sub(one, b1t))
    vhat = be.div(v, be.sub(one, b2t))
    upd = be.div(mhat, be.add(be.sqrt(vhat), be.const(cfg.eps, p)))
    return be.sub(p, be.mul(upd, lr)), m, v


def mlp_sgd_step(
    be: Backend, p: MlpParams, bufs: MlpParams, x: Arr, labels: Arr, cfg: SgdConfig
) -> tuple[Arr, MlpParams, MlpParams]:
    """One repro training step: forward, backward, SGD-momentum.  Returns (loss, params, bufs)."""
    loss, grads = mlp_loss_and_grads(be, p, x, labels)
    newp: MlpParams = {}
    newb: MlpParams = {}
    for k in p:
        newp[k], newb[k] = sgd_momentum(be, p[k], grads[k], bufs[k], cfg)
    return loss, newp, newb


# ---- torch autograd functions using the same rules ----


class ReproLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(x, w)
        return linear(TORCH, x, w, b.view(1, -1))

    @staticmethod
    def backward(ctx: Any, gy: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        x, w = ctx.saved_tensors
        gx, gw, gb = linear_grads(TORCH, x, w, gy.contiguous())
        return gx, gw, gb.reshape(-1)


class ReproRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return relu(TORCH, x)

    @staticmethod
    def backward(ctx: Any, gy: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return relu_grad(TORCH, x, gy)


class ReproCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: Tensor, labels: Tensor) -> Tensor:
        ctx.save_for_backward(logits, labels)
        return cross_entropy(TORCH, logits, labels).view(())

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, None]:
        logits, labels = ctx.saved_tensors
        return cross_entropy_grad(TORCH, logits, labels, g.to(torch.float32)), None
