"""Composite repro ops, written once over a backend so torch and the NumPy reference run the same sequence.

Every composite is a fixed sequence of backend ops (see ``backend``: primitives, repro matmuls and
sums, exact data movement); the sequence itself is the definition.  ``TORCH`` runs it with torch;
``reference.NUMPY`` runs the identical sequence with NumPy float32; ``trace.TracingBackend`` records it.
Also here: a tiny MLP training step, and SGD-momentum / AdamW updates built from primitives.  The layer
ops with their backward passes (linear, conv, layer norm, attention, ...) are in ``layers``; torch
autograd functions over them in ``autograd``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gensyn_py.repro.backend import TORCH, Arr, Backend, TorchBackend
from gensyn_py.repro.fused import (
    fused,
    fused_adamw,
    fused_gelu,
    fused_gelu_grad,
    fused_layer_norm,
    fused_layer_norm_grad_input,
    fused_masked_softmax,
    fused_softmax_grad,
)

__all__ = ["TORCH", "Arr", "Backend", "TorchBackend"]

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
# erf: |x| < 1: Taylor series x * sum_n c_n x**(2n), n <= 10 (Horner, highest first); else Abramowitz &
# Stegun 7.1.26: 1 - t*(a1 + t*(a2 + ...)) * exp(-x*x), t = 1 / (1 + P*|x|), with the sign of x.
ERF_TAYLOR = [2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(10, -1, -1)]
ERF_AS_P = 0.3275911
ERF_AS = [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]
INV_SQRT_2PI = 0.3989422804014327


def _horner(be: Backend, coefs: list[float], x: Arr) -> Arr:
    p = be.const(coefs[0], x)
    for c in coefs[1:]:
        p = be.add(be.mul(p, x), be.const(c, x))
    return p


def _fused(be: Backend, name: str, x: Arr) -> Arr | None:
    """The torch backend's one-call version of a composite (``fused.py``: the same bits), else None."""
    return fused(name, x) if isinstance(be, TorchBackend) else None


def exp(be: Backend, x: Arr) -> Arr:
    """exp: clamp to [-104, 89] (NaN -> 0 there), n = floor(x*log2e + 1/2),
    r = (x - n*LN2_HI) - n*LN2_LO, exp = ldexp(poly7(r), n) with Taylor coefficients; NaN -> NaN."""
    y = _fused(be, "exp", x)
    if y is not None:
        return y
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
    y = _fused(be, "log", x)
    if y is not None:
        return y
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


def erf(be: Backend, x: Arr) -> Arr:
    """erf: |x| < 1: x * P(x*x), the Taylor series to x**21; else A&S 7.1.26 (absolute error <= 1.5e-7):
    1 - (t * poly(t)) * exp(-x*x) with t = 1 / (1 + 0.3275911 |x|) and the sign of x; NaN -> NaN."""
    y = _fused(be, "erf", x)
    if y is not None:
        return y
    one = be.const(1.0, x)
    a = be.abs(x)
    w = be.mul(x, x)
    small = be.mul(x, _horner(be, ERF_TAYLOR, w))
    t = be.div(one, be.add(one, be.mul(a, be.const(ERF_AS_P, x))))
    big = be.sub(one, be.mul(be.mul(t, _horner(be, ERF_AS, t)), exp(be, be.neg(w))))
    big = be.where(be.lt(x, be.const(0.0, x)), be.neg(big), big)
    y = be.where(be.lt(a, one), small, big)
    return be.where(be.isnan(x), x, y)


def gelu_parts(be: Backend, x: Arr) -> tuple[Arr, Arr]:
    """GELU (the erf form): cdf = (1 + erf(x * float32(1/sqrt 2))) * 0.5, y = x * cdf.  Returns (y, cdf)."""
    done = fused_gelu(x) if isinstance(be, TorchBackend) else None
    if done is not None:
        return done
    e = erf(be, be.mul(x, be.const(SQRT_HALF, x)))
    cdf = be.mul(be.add(be.const(1.0, x), e), be.const(0.5, x))
    return be.mul(x, cdf), cdf


def gelu_grad(be: Backend, x: Arr, cdf: Arr, gy: Arr) -> Arr:
    """gx = gy * (cdf + x * pdf) with pdf = exp((x * x) * -0.5) * float32(1/sqrt(2 pi))."""
    done = fused_gelu_grad(x, cdf, gy) if isinstance(be, TorchBackend) else None
    if done is not None:
        return done
    pdf = be.mul(exp(be, be.mul(be.mul(x, x), be.const(-0.5, x))), be.const(INV_SQRT_2PI, x))
    return be.mul(gy, be.add(cdf, be.mul(x, pdf)))


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


def masked_softmax(be: Backend, x: Arr, mask: Arr) -> Arr:
    """Softmax along the last dim over the entries where mask (broadcast) is True; the others get +0.
    m = rowmax(where(mask, x, -inf)), e = where(mask, exp(x - m), +0), p = e / sum(e).  Every row needs
    one True entry.  Any shape: the sum runs on the 2-D (rows, last dim) view."""
    done = fused_masked_softmax(x, mask) if isinstance(be, TorchBackend) else None  # row sums only
    if done is not None:
        return done
    m = be.rowmax(be.where(mask, x, be.const(-math.inf, x)))
    e = be.where(mask, exp(be, be.sub(x, m)), be.const(0.0, x))
    n = x.shape[-1]
    s = be.reshape(be.sum(be.reshape(e, (-1, n)), 1), (*x.shape[:-1], 1))
    return be.div(e, s)


def softmax_grad(be: Backend, p: Arr, gp: Arr) -> Arr:
    """Backward of p = softmax(x) along the last dim: gx = p * (gp - sum(gp * p, last dim))."""
    done = fused_softmax_grad(p, gp) if isinstance(be, TorchBackend) else None  # row sums only
    if done is not None:
        return done
    n = p.shape[-1]
    dot = be.reshape(be.sum(be.reshape(be.mul(gp, p), (-1, n)), 1), (*p.shape[:-1], 1))
    return be.mul(p, be.sub(gp, dot))


def batch_rows(be: Backend, x: Arr) -> int:
    """The rows of the whole batch that x's rows belong to: x's own, except on a backend that holds one
    share of a data-parallel batch (`repro.distributed`), which says how many there are in all."""
    rows = getattr(be, "batch_rows", None)
    return int(rows(x)) if rows is not None else int(x.shape[0])


def mean_all(be: Backend, v: Arr) -> Arr:
    """Mean of a (B, 1) column: repro sum over dim 0, then one division by float32(B)."""
    return be.div(be.sum(v, 0), be.const(float(batch_rows(be, v)), v))


def cross_entropy(be: Backend, logits: Arr, labels: Arr) -> Arr:
    """Mean over the batch of -log_softmax(logits)[i, labels[i]]; shape (1, 1)."""
    return be.neg(mean_all(be, be.gather(log_softmax(be, logits), labels)))


def cross_entropy_grad(be: Backend, logits: Arr, labels: Arr, g: Arr, p: Arr | None = None) -> Arr:
    """d loss / d logits = (softmax - onehot) * (g / B)  (p: softmax(logits) if already computed)."""
    if p is None:
        p = softmax(be, logits)
    oh = be.onehot(labels, logits.shape[1], logits)
    scale = be.div(g, be.const(float(batch_rows(be, logits)), logits))
    return be.mul(be.sub(p, oh), scale)


def layer_norm_parts(be: Backend, x: Arr, w: Arr, b: Arr, eps: float = 1e-5) -> tuple[Arr, Arr, Arr]:
    """Over dim 1 of a 2-D x: mu = sum/D, d = x - mu, var = sum(d*d)/D, s = sqrt(var + eps), xhat = d / s,
    y = xhat * w + b (w, b: (1, D)).  Returns (y, xhat, s)."""
    done = fused_layer_norm(x, w, b, eps) if isinstance(be, TorchBackend) else None  # row sums only: any group
    if done is not None:
        return done
    n = be.const(float(x.shape[1]), x)
    d = be.sub(x, be.div(be.sum(x, 1), n))
    var = be.div(be.sum(be.mul(d, d), 1), n)
    s = be.sqrt(be.add(var, be.const(eps, x)))
    xhat = be.div(d, s)
    return be.add(be.mul(xhat, w), b), xhat, s


def layer_norm(be: Backend, x: Arr, w: Arr, b: Arr, eps: float = 1e-5) -> Arr:
    return layer_norm_parts(be, x, w, b, eps)[0]


def layer_norm_grad(
    be: Backend, xhat: Arr, s: Arr, w: Arr, gy: Arr, need_gx: bool = True
) -> tuple[Arr | None, Arr, Arr]:
    """(gx, gw, gb) of layer_norm: gw = sum(gy * xhat, 0), gb = sum(gy, 0) (both (1, D));
    gh = gy * w, m1 = sum(gh, 1) / D, m2 = sum(gh * xhat, 1) / D, gx = ((gh - m1) - xhat * m2) / s."""
    gw = be.sum(be.mul(gy, xhat), 0)
    gb = be.sum(gy, 0)
    if not need_gx:
        return None, gw, gb
    if isinstance(be, TorchBackend):  # row sums only (gw and gb, over rows, stay the backend's: a group's)
        gx = fused_layer_norm_grad_input(xhat, s, w, gy)
        if gx is not None:
            return gx, gw, gb
    n = be.const(float(xhat.shape[1]), xhat)
    gh = be.mul(gy, w)
    m1 = be.div(be.sum(gh, 1), n)
    m2 = be.div(be.sum(be.mul(gh, xhat), 1), n)
    return be.div(be.sub(be.sub(gh, m1), be.mul(xhat, m2)), s), gw, gb


def linear(be: Backend, x: Arr, w: Arr, b: Arr) -> Arr:
    """y = x @ w.T + b  (w: (out, in), b: (1, out))."""
    return be.add(be.matmul(x, be.t(w)), b)


def linear_grads(be: Backend, x: Arr, w: Arr, gy: Arr, need_gx: bool = True) -> tuple[Arr | None, Arr, Arr]:
    """(gx = gy @ w (None unless need_gx), gw = gy.T @ x, gb = sum over dim 0 of gy, shape (1, out))."""
    gx = be.matmul(gy, w) if need_gx else None
    # gb is computed inside the gw matmul as an extra ones column of x: a ones column aligns to 2**23 at
    # block exponent 127, so that column is exactly sum(gy, 0) under the sum rule (same bits, one call).
    gwb = be.matmul(be.t(gy), be.append_ones(x))
    k = x.shape[1]
    return gx, be.narrow(gwb, 1, 0, k), be.reshape(be.narrow(gwb, 1, k, 1), (1, -1))


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


def rate(be: Backend, lr: float | Arr, like: Arr) -> Arr:
    """The learning rate as a tensor: a float becomes a ``const`` op; a tensor (a step trace's named input
    ``lr``, so that the step's program does not depend on the schedule) is used as it is. Same bits either way."""
    return be.const(lr, like) if isinstance(lr, int | float) else lr


def sgd(be: Backend, p: Arr, g: Arr, buf: Arr | None, lr: float | Arr, momentum: float = 0.0,
        weight_decay: float = 0.0) -> tuple[Arr, Arr | None]:
    """torch.optim.SGD's update as primitives: g = g + p*wd (if wd); with momentum, buf = g on the first
    step (buf None) else buf*momentum + g, and g = buf; p = p - g*lr.  Returns (p, buf)."""
    if weight_decay:
        g = be.add(g, be.mul(p, be.const(weight_decay, p)))
    if momentum:
        buf = g if buf is None else be.add(be.mul(buf, be.const(momentum, p)), g)
        g = buf
    return be.sub(p, be.mul(g, rate(be, lr, p))), buf


@dataclass
class AdamWConfig:
    lr: float | Arr = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01


def adamw(be: Backend, p: Arr, g: Arr, m: Arr, v: Arr, b1t: Arr, b2t: Arr, cfg: AdamWConfig,
          in_place: bool = False) -> tuple[Arr, Arr, Arr]:
    """One AdamW step.  b1t, b2t are float32 beta1**t, beta2**t (kept as running float32 products by
    the caller: b1t_new = b1t * beta1).  Op order:
    p = p - (lr*wd)*p; m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g;
    p = p - lr * ((m / (1 - b1t)) / (sqrt(v / (1 - b2t)) + eps)).  Returns (p, m, v).
    `in_place`: the caller owns p, m and v, which the torch backend's one-pass update may then overwrite."""
    if isinstance(be, TorchBackend):  # the same operations in one pass (fused.py)
        done = fused_adamw(p, g, m, v, b1t, b2t, cfg, in_place)
        if done is not None:
            return done
    one = be.const(1.0, p)
    b1 = be.const(cfg.beta1, p)
    b2 = be.const(cfg.beta2, p)
    lr = rate(be, cfg.lr, p)
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
