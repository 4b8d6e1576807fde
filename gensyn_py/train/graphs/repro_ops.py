"""The ONNX ops of the trained computation as repro layer ops: the interpreter's op set in mode `repro`.

Every node becomes a few calls of ``ex.op(layer, ...)`` (``repro/layers.py``, ``repro/graph_layers.py``) on an
executor (a ``repro.tape.Tape`` for training and traces, ``repro.autograd.AUTOGRAD`` for a torch module), so
the bits are defined by the repro rules and the same on any device. What has no exact form here is refused
with the node's name: broadcasting inside trailing dimensions, constant tensors other than scalars and the
causal mask, pooling windows that overlap, strides in Slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.conv_attrs import conv_geometry, pool_geometry
from gensyn_py.train.graphs.graph import Node
from gensyn_py.train.graphs.interpreter import (
    attr_int,
    flatten_shape,
    ints,
    reshape_target,
    slice_ranges,
    split_sizes,
    squeeze_shape,
)

MASK_FILL = -1e9  # a Where fill at or below this (or -inf) before a Softmax is a mask: those entries get +0


@dataclass(frozen=True)
class Masked:
    """Where(causal mask, x, -inf): only a Softmax may read it, which becomes a causal softmax."""

    value: Any
    node: Node


def _refuse(node: Node, why: str) -> SpecError:
    return SpecError(f"model.onnx: {node.where()} has no exact form in mode 'repro': {why} "
                     f"(mode 'exact' runs it)")


class ReproOps:
    """The op set over a repro executor `ex` (``ex.op(name, *inputs, **attrs)``, ``ex.be``)."""

    def __init__(self, ex: Any) -> None:
        self.ex = ex

    def shape(self, value: Any) -> tuple[int, ...]:
        if isinstance(value, Masked):
            value = value.value
        return tuple(int(d) for d in value.shape)

    def run(self, node: Node, args: list[Any]) -> list[Any]:
        for a in args:
            if isinstance(a, Masked) and node.op != "Softmax":
                raise _refuse(node, f"it reads the masked scores of {a.node.where()}; only a Softmax may")
        fn = getattr(self, f"op_{node.op}", None)
        if fn is None:
            raise _refuse(node, "the op is not available on trained values")
        out = fn(node, args)
        return out if isinstance(out, list) else [out]

    # ---- helpers ----
    def _dyn(self, node: Node, value: Any, what: str) -> Any:
        if isinstance(value, np.ndarray):
            raise _refuse(node, f"its {what} is a constant tensor of shape {list(value.shape)}; only scalars "
                                f"and the causal mask may be constants (make it a parameter)")
        return value

    def _reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        if tuple(int(d) for d in x.shape) == tuple(shape):
            return x
        return self.ex.op("reshape", x, shape=tuple(int(d) for d in shape))

    @staticmethod
    def _scalar(value: Any) -> float | None:
        if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind == "f":
            return float(np.float32(value.reshape(())))
        return None

    # ---- elementwise ----
    def _binary(self, node: Node, a: Any, b: Any, op: str) -> Any:
        ca, cb = self._scalar(a), self._scalar(b)
        if cb is not None:
            return self.ex.op("scalar", self._dyn(node, a, "first input"), op=op, c=cb)
        if ca is not None:
            if op == "div":
                raise _refuse(node, "a constant divided by a trained value")
            return self.ex.op("scalar", self._dyn(node, b, "second input"), op="rsub" if op == "sub" else op, c=ca)
        a, b = self._dyn(node, a, "first input"), self._dyn(node, b, "second input")
        sa, sb = self.shape(a), self.shape(b)
        full = tuple(int(d) for d in np.broadcast_shapes(sa, sb))
        if sa == sb == full:
            return self.ex.op("add", a, b) if op == "add" else self.ex.op("binary", a, b, op=op)
        split = max(self._leading(node, s, full) for s in (sa, sb))
        rows, cols = int(np.prod(full[:split])), int(np.prod(full[split:]))
        a2 = self._reshape(a, (rows, cols) if sa == full else (1, cols))
        b2 = self._reshape(b, (rows, cols) if sb == full else (1, cols))
        if op == "add":
            y = self.ex.op("add", a2, b2) if sb != full else self.ex.op("add", b2, a2)
        else:
            y = self.ex.op("binary", a2, b2, op=op)
        return self._reshape(y, full)

    def _leading(self, node: Node, s: tuple[int, ...], full: tuple[int, ...]) -> int:
        """The k where an operand of shape `s` equals `full` from dimension k on and is 1 before it."""
        padded = (1,) * (len(full) - len(s)) + s
        for k in range(len(full) + 1):
            if padded[k:] == full[k:] and all(d == 1 for d in padded[:k]):
                return k
        raise _refuse(node, f"it broadcasts {list(s)} against {list(full)} inside trailing dimensions; only "
                            f"whole leading dimensions may be broadcast")

    def op_Add(self, node: Node, a: list[Any]) -> Any:
        return self._binary(node, a[0], a[1], "add")

    def op_Sub(self, node: Node, a: list[Any]) -> Any:
        return self._binary(node, a[0], a[1], "sub")

    def op_Mul(self, node: Node, a: list[Any]) -> Any:
        return self._binary(node, a[0], a[1], "mul")

    def op_Div(self, node: Node, a: list[Any]) -> Any:
        return self._binary(node, a[0], a[1], "div")

    def op_Neg(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("neg", a[0])

    def op_Relu(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("relu", a[0])

    def op_Gelu(self, node: Node, a: list[Any]) -> Any:
        if str(node.attrs.get("approximate", "none")) != "none":
            raise _refuse(node, "the tanh approximation; use approximate='none' (the erf form)")
        return self.ex.op("gelu", a[0])

    def op_Sigmoid(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("sigmoid", a[0])

    def op_Tanh(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("tanh", a[0])

    def op_Erf(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("erf", a[0])

    def op_Where(self, node: Node, a: list[Any]) -> Any:
        cond, x, y = a
        if not isinstance(cond, np.ndarray) or cond.dtype != np.bool_:
            raise _refuse(node, "only a constant boolean mask is supported as its condition")
        fill_x, fill_y = self._scalar(x), self._scalar(y)
        if fill_x is not None and fill_x <= MASK_FILL and not isinstance(y, np.ndarray):
            keep, value = ~cond, y
        elif fill_y is not None and fill_y <= MASK_FILL and not isinstance(x, np.ndarray):
            keep, value = cond, x
        else:
            raise _refuse(node, "only Where(mask, scores, -inf) before a Softmax (a causal mask) is supported")
        t = self.shape(value)[-1]
        causal = np.tril(np.ones((t, t), dtype=bool))
        if keep.ndim < 2 or keep.shape[-2:] != (t, t) or not (keep.reshape(-1, t, t) == causal).all():
            raise _refuse(node, "its mask is not the causal mask (key position <= query position)")
        return Masked(value, node)

    def op_Softmax(self, node: Node, a: list[Any]) -> Any:
        x = a[0]
        rank = len(self.shape(x))
        if attr_int(node, "axis", -1) % rank != rank - 1:
            raise _refuse(node, "a softmax along another axis than the last")
        if isinstance(x, Masked):
            return self.ex.op("causal_softmax", x.value)
        return self.ex.op("softmax", self._dyn(node, x, "input"))

    # ---- contractions ----
    def _matmul(self, node: Node, x: Any, w: Any) -> Any:
        sx, sw = self.shape(x), self.shape(w)
        if len(sw) == 2:
            lead = sx[:-1]
            y = self.ex.op("matmul", self._reshape(x, (int(np.prod(lead)), sx[-1])), w)
            return self._reshape(y, (*lead, sw[1]))
        if len(sx) != len(sw) or sx[:-2] != sw[:-2]:
            raise _refuse(node, f"a batched product of {list(sx)} and {list(sw)} with different batch dimensions")
        p = int(np.prod(sx[:-2]))
        y = self.ex.op("matmul", self._reshape(x, (p, *sx[-2:])), self._reshape(w, (p, *sw[-2:])))
        return self._reshape(y, (*sx[:-2], sx[-2], sw[-1]))

    def op_MatMul(self, node: Node, a: list[Any]) -> Any:
        return self._matmul(node, self._dyn(node, a[0], "first input"), self._dyn(node, a[1], "second input"))

    def op_Gemm(self, node: Node, a: list[Any]) -> Any:
        x, w = self._dyn(node, a[0], "input A"), self._dyn(node, a[1], "input B")
        c = a[2] if len(a) > 2 else None
        alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
        simple = alpha == 1.0 and beta == 1.0 and not attr_int(node, "transA", 0)
        if simple and attr_int(node, "transB", 0) and c is not None and len(self.shape(c)) == 1 \
                and not isinstance(c, np.ndarray):
            return self.ex.op("linear", x, w, c)
        if attr_int(node, "transA", 0):
            x = self.ex.op("permute", x, perm=(1, 0))
        if attr_int(node, "transB", 0):
            w = self.ex.op("permute", w, perm=(1, 0))
        y = self._matmul(node, x, w)
        if alpha != 1.0:
            y = self.ex.op("scalar", y, op="mul", c=alpha)
        if c is not None:
            if beta != 1.0:
                c = self.ex.op("scalar", self._dyn(node, c, "input C"), op="mul", c=beta)
            y = self._binary(node, y, c, "add")
        return y

    def op_Conv(self, node: Node, a: list[Any]) -> Any:
        x, w = self._dyn(node, a[0], "input"), self._dyn(node, a[1], "weight")
        geo = conv_geometry(node, self.shape(x), self.shape(w))
        if not geo.square:
            raise _refuse(node, "a kernel, stride or padding that differs between height and width")
        b = a[2] if len(a) > 2 and a[2] is not None else self.ex.be.zeros((self.shape(w)[0],), w)
        y = self.ex.op("conv2d", x, w, self._dyn(node, b, "bias"), pad=geo.pad[0])
        return self.ex.op("stride2d", y, s=geo.stride[0]) if geo.stride[0] > 1 else y

    # ---- normalisation and pooling ----
    def op_LayerNormalization(self, node: Node, a: list[Any]) -> Any:
        x = a[0]
        sx = self.shape(x)
        if attr_int(node, "axis", -1) % len(sx) != len(sx) - 1:
            raise _refuse(node, "normalisation over more than the last dimension")
        if len(a) < 3 or a[2] is None:
            raise _refuse(node, "a LayerNormalization without a bias")
        y = self.ex.op("layer_norm", self._reshape(x, (-1, sx[-1])), self._dyn(node, a[1], "scale"),
                       self._dyn(node, a[2], "bias"), eps=float(node.attrs.get("epsilon", 1e-5)))
        return self._reshape(y, sx)

    def _window(self, node: Node, x: Any) -> int:
        geo = pool_geometry(node, self.shape(x))
        k = geo.kernel[0]
        h, w = self.shape(x)[2:]
        if not geo.square or geo.stride[0] != k or geo.pad[0] or h % k or w % k:
            raise _refuse(node, "pooling windows must be square, as wide as the stride, unpadded, and tile the input")
        return k

    def op_MaxPool(self, node: Node, a: list[Any]) -> Any:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise _refuse(node, "its indices output")
        return self.ex.op("maxpool2d", a[0], k=self._window(node, a[0]))

    def op_AveragePool(self, node: Node, a: list[Any]) -> Any:
        return self.ex.op("avgpool2d", a[0], k=self._window(node, a[0]))

    def _mean_trailing(self, x: Any, k: int, keep: bool) -> Any:
        s = self.shape(x)
        y = self.ex.op("mean_rows", self._reshape(x, (int(np.prod(s[:k])), int(np.prod(s[k:])))))
        return self._reshape(y, (*s[:k], *([1] * (len(s) - k))) if keep else s[:k])

    def op_GlobalAveragePool(self, node: Node, a: list[Any]) -> Any:
        return self._mean_trailing(a[0], 2, True)

    def op_ReduceMean(self, node: Node, a: list[Any]) -> Any:
        rank = len(self.shape(a[0]))
        axes = ints(a[1], node, "axes") if len(a) > 1 and a[1] is not None else list(node.attrs.get("axes", ()))
        dims = sorted(d % rank for d in axes) if axes else list(range(rank))
        if dims != list(range(rank - len(dims), rank)):
            raise _refuse(node, "a mean over other than the trailing dimensions")
        return self._mean_trailing(a[0], rank - len(dims), bool(attr_int(node, "keepdims", 1)))

    # ---- data movement ----
    def op_Reshape(self, node: Node, a: list[Any]) -> Any:
        s = self.shape(a[0])
        return self._reshape(a[0], reshape_target(s, ints(a[1], node, "shape"),
                                                  bool(attr_int(node, "allowzero", 0)), node))

    def op_Flatten(self, node: Node, a: list[Any]) -> Any:
        return self._reshape(a[0], flatten_shape(self.shape(a[0]), node))

    def op_Squeeze(self, node: Node, a: list[Any]) -> Any:
        return self._reshape(a[0], squeeze_shape(self.shape(a[0]), node, a, False))

    def op_Unsqueeze(self, node: Node, a: list[Any]) -> Any:
        return self._reshape(a[0], squeeze_shape(self.shape(a[0]), node, a, True))

    def op_Transpose(self, node: Node, a: list[Any]) -> Any:
        rank = len(self.shape(a[0]))
        perm = tuple(int(p) for p in (node.attrs.get("perm") or reversed(range(rank))))
        return self.ex.op("permute", a[0], perm=perm) if perm != tuple(range(rank)) else a[0]

    def op_Concat(self, node: Node, a: list[Any]) -> Any:
        xs = [self._dyn(node, v, "input") for v in a if v is not None]
        return self.ex.op("concat", *xs, dim=attr_int(node, "axis", 0) % len(self.shape(xs[0])))

    def _narrow(self, x: Any, dim: int, start: int, length: int) -> Any:
        if start == 0 and length == self.shape(x)[dim]:
            return x
        return self.ex.op("narrow", x, dim=dim, start=start, length=length)

    def op_Slice(self, node: Node, a: list[Any]) -> Any:
        x = a[0]
        for axis, start, length in slice_ranges(self.shape(x), node, a):
            x = self._narrow(x, axis, start, length)
        return x

    def op_Split(self, node: Node, a: list[Any]) -> list[Any]:
        axis, sizes = split_sizes(self.shape(a[0]), node, a)
        out, start = [], 0
        for size in sizes:
            out.append(self._narrow(a[0], axis, start, size))
            start += size
        return out

    def op_Gather(self, node: Node, a: list[Any]) -> Any:
        data, idx = a
        sd = self.shape(data)
        axis = attr_int(node, "axis", 0) % len(sd)
        if not isinstance(idx, np.ndarray):
            if axis != 0 or len(sd) != 2:
                raise _refuse(node, "a gather by trained indices other than an embedding lookup (axis 0 of a table)")
            si = self.shape(idx)
            return self._reshape(self.ex.op("embedding", idx, data), (*si, sd[1]))
        flat = [int(i) % sd[axis] for i in idx.reshape(-1)]
        if flat != list(range(flat[0], flat[0] + len(flat))):
            raise _refuse(node, "gathering positions that are not one contiguous run")
        y = self._narrow(data, axis, flat[0], len(flat))
        return self._reshape(y, (*sd[:axis], *idx.shape, *sd[axis + 1:]))

    def op_Identity(self, node: Node, a: list[Any]) -> Any:
        return a[0]

    def op_Dropout(self, node: Node, a: list[Any]) -> list[Any]:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise _refuse(node, "its mask output is used; dropout is the identity here")
        return [a[0]]
