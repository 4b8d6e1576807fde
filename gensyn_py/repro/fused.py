"""repro's exp, log and erf in one C call each on CPU (``_fused_native.c``), the same bits as their primitive sequences.

``ops.exp``, ``ops.log`` and ``ops.erf`` are defined as fixed sequences of float32 primitives, and every backend that
records or re-executes a step (the tracer, the NumPy reference) runs those sequences. The torch backend on CPU asks
here first: the C module runs the very same sequence element by element, every step one correctly rounded float32
operation with the same constants, so the result is bit-identical (``tests/unit/test_repro_fused.py``) at the cost
of one call instead of forty to seventy kernels. Without the module (no C compiler at install time), or for a tensor
that is not a contiguous float32 CPU one, this returns None and the caller runs the primitives.

The primitive sqrt too: one pass instead of three (to float64, root, back), the same correctly rounded result; and
``ops.adamw``'s update, one pass over the parameters instead of about fifteen kernels; GELU forward and backward, the
float32 steps around erf and exp in the same pass; LayerNorm's forward and its input gradient, and the causal softmax
and its gradient, with the sum rule's row sums in C (``_sum_rule.h``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from gensyn_py.repro.opset import MAX_K

try:
    from gensyn_py.repro import _fused_native as _c  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the primitive sequences in ops.py
    _c = None

_CONSTS: dict[str, Tensor] = {}


def native_module() -> Any:
    """The C module, or None where it was not built."""
    return _c


def _constants(name: str) -> Tensor:
    """The float32 constants of ops.exp / ops.log / ops.erf in the order the C code reads them (made the way ``const``
    makes them: each double rounded once to float32)."""
    t = _CONSTS.get(name)
    if t is None:
        from gensyn_py.repro import ops as O

        exp = [O.LOG2E, 0.5, O.LN2_HI, O.LN2_LO, *O.EXP_COEF]
        erf = [1.0, O.ERF_AS_P, 0.0, *O.ERF_TAYLOR, *O.ERF_AS, *exp]
        values = {"exp": exp, "log": [O.SQRT_HALF, 1.0, O.LN2_HI, O.LN2_LO, *O.LOG_COEF], "erf": erf, "sqrt": [],
                  "gelu": [O.SQRT_HALF, 1.0, 0.5, *erf], "gelu_grad": [-0.5, O.INV_SQRT_2PI, *exp]}[name]
        t = _CONSTS[name] = torch.tensor(values, dtype=torch.float32)
    return t


def fused(name: str, x: Tensor) -> Tensor | None:
    """`name` ("exp", "log", "erf" or "sqrt") of x in one C call, or None where the primitives must run instead."""
    if _c is None or not x.is_cpu or x.dtype != torch.float32 or not x.is_contiguous():
        return None
    y = torch.empty_like(x)
    k = _constants(name)
    getattr(_c, name)(x.data_ptr(), y.data_ptr(), x.numel(), k.data_ptr(), k.numel())
    return y


def _contiguous_f32(*xs: Tensor) -> bool:
    return all(x.is_cpu and x.dtype == torch.float32 and x.is_contiguous() and x.shape == xs[0].shape for x in xs)


def fused_gelu(x: Tensor) -> tuple[Tensor, Tensor] | None:
    """ops.gelu_parts (y, cdf) in one C pass, or None where the primitives must run instead."""
    if _c is None or not _contiguous_f32(x):
        return None
    y, cdf = torch.empty_like(x), torch.empty_like(x)
    k = _constants("gelu")
    _c.gelu(x.data_ptr(), y.data_ptr(), cdf.data_ptr(), x.numel(), k.data_ptr(), k.numel())
    return y, cdf


def fused_gelu_grad(x: Tensor, cdf: Tensor, gy: Tensor) -> Tensor | None:
    """ops.gelu_grad in one C pass (x, cdf and gy of one shape), or None where the primitives must run instead."""
    if _c is None or not _contiguous_f32(x, cdf, gy):
        return None
    gx = torch.empty_like(x)
    k = _constants("gelu_grad")
    _c.gelu_grad(x.data_ptr(), cdf.data_ptr(), gy.data_ptr(), gx.data_ptr(), x.numel(), k.data_ptr(), k.numel())
    return gx


def _rows_of(x: Tensor, *per_entry: Tensor) -> bool:
    """x a contiguous 2-D float32 CPU tensor whose rows the sum rule takes (at most MAX_K entries), and each of
    per_entry a contiguous (1, columns) float32 CPU one."""
    return (_c is not None and x.dim() == 2 and 0 < x.shape[1] <= MAX_K and _contiguous_f32(x)
            and all(_contiguous_f32(t) and tuple(t.shape) == (1, x.shape[1]) for t in per_entry))


def fused_layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor] | None:
    """ops.layer_norm_parts (y, xhat, s) in one C pass over the rows, or None where the primitives must run instead
    (a value that is not finite, or a layout the C side does not take)."""
    if not _rows_of(x, w, b):
        return None
    from gensyn_py.repro import primitives as P

    y, xhat = torch.empty_like(x), torch.empty_like(x)
    s = torch.empty((x.shape[0], 1), dtype=torch.float32)
    special = _c.layer_norm(x.data_ptr(), w.data_ptr(), b.data_ptr(), float(P.const(eps)), *x.shape, y.data_ptr(),
                            xhat.data_ptr(), s.data_ptr())
    return None if special else (y, xhat, s)


def fused_layer_norm_grad_input(xhat: Tensor, s: Tensor, w: Tensor, gy: Tensor) -> Tensor | None:
    """The input gradient of ops.layer_norm_grad in one C pass over the rows, or None where the primitives must run
    instead."""
    if not (_rows_of(xhat, w) and _contiguous_f32(xhat, gy) and _contiguous_f32(s)
            and tuple(s.shape) == (xhat.shape[0], 1)):
        return None
    gx = torch.empty_like(xhat)
    special = _c.layer_norm_grad(xhat.data_ptr(), s.data_ptr(), w.data_ptr(), gy.data_ptr(), *xhat.shape,
                                 gx.data_ptr())
    return None if special else gx


def fused_masked_softmax(x: Tensor, mask: Tensor) -> Tensor | None:
    """ops.masked_softmax of x (..., Tq, T) under the boolean mask (Tq, T) in one C pass over rows, or None where the
    primitives must run instead."""
    if (_c is None or x.dim() < 2 or mask.dtype != torch.bool or tuple(mask.shape) != tuple(x.shape[-2:])
            or not mask.is_cpu or not mask.is_contiguous() or not _contiguous_f32(x) or x.shape[-1] > MAX_K):
        return None
    p = torch.empty_like(x)
    k = _constants("exp")
    t = x.shape[-1]
    special = _c.masked_softmax(x.data_ptr(), mask.data_ptr(), x.numel() // t, mask.shape[0], t, p.data_ptr(),
                                k.data_ptr(), k.numel())
    return None if special else p


def fused_softmax_grad(p: Tensor, gp: Tensor) -> Tensor | None:
    """ops.softmax_grad in one C pass over rows (p and gp of one shape), or None where the primitives must run."""
    if _c is None or p.dim() < 1 or not _contiguous_f32(p, gp) or not 0 < p.shape[-1] <= MAX_K:
        return None
    gx = torch.empty_like(p)
    t = p.shape[-1]
    special = _c.softmax_grad(p.data_ptr(), gp.data_ptr(), p.numel() // t, t, gx.data_ptr())
    return None if special else gx


def fused_adamw(p: Tensor, g: Tensor, m: Tensor, v: Tensor, b1t: Tensor, b2t: Tensor, cfg: Any, in_place: bool = False
                ) -> tuple[Tensor, Tensor, Tensor] | None:
    """ops.adamw's update (new p, m, v) in one C pass, or None where the primitives must run instead. The scalars
    are rounded as the primitive sequence rounds them: float32 products and differences of float32 constants.
    `in_place`: the caller owns p, m and v, and the results are written there (same bits; five times faster for
    10M parameters than three fresh arrays, whose pages fault in) unless two of them share memory (the first
    step's zero moments) or g does."""
    from gensyn_py.repro import primitives as P

    flat = (p, g, m, v)
    if _c is None or any(not t.is_cpu or t.dtype != torch.float32 or not t.is_contiguous() or t.shape != p.shape
                         for t in flat) or b1t.numel() != 1 or b2t.numel() != 1:
        return None
    lr = P.const(cfg.lr) if isinstance(cfg.lr, int | float) else cfg.lr
    if lr.numel() != 1 or not lr.is_cpu:
        return None
    one, beta1, beta2 = P.const(1.0), P.const(cfg.beta1), P.const(cfg.beta2)
    scalars = (torch.mul(lr, P.const(cfg.weight_decay)), beta1, torch.sub(one, beta1), beta2, torch.sub(one, beta2),
               torch.sub(one, b1t), torch.sub(one, b2t), P.const(cfg.eps), lr)
    own = in_place and len({t.untyped_storage().data_ptr() for t in flat}) == len(flat)
    po, mo, vo = (p, m, v) if own else (torch.empty_like(p), torch.empty_like(p), torch.empty_like(p))
    _c.adamw(*(t.data_ptr() for t in (*flat, po, mo, vo)), p.numel(), tuple(float(x) for x in scalars))
    return po, mo, vo
