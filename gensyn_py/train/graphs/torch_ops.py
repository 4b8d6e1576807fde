"""The ONNX ops of the trained computation on torch's own kernels: the interpreter's op set in mode `exact`.

Bit-exact within a replay class, like the registry families in that mode (`train/exact_step.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

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


class TorchOps:
    """Each ONNX op as torch functions; constants (NumPy) become tensors on the input's device."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)

    def shape(self, value: Any) -> tuple[int, ...]:
        return tuple(int(d) for d in value.shape)

    def t(self, value: Any) -> torch.Tensor:
        if isinstance(value, np.ndarray):
            return torch.from_numpy(np.array(value)).to(self.device)  # a copy: constants are read-only
        return value

    def run(self, node: Node, args: list[Any]) -> list[Any]:
        fn = getattr(self, f"op_{node.op}", None)
        if fn is None:
            raise SpecError(f"model.onnx: {node.where()} is not supported on trained values")
        try:
            out = fn(node, args)
        except RuntimeError as e:  # a shape mismatch inside torch: the graph does not fit its input
            raise SpecError(f"model.onnx: {node.where()} failed: {str(e).splitlines()[0]}") from None
        return out if isinstance(out, list) else [out]

    # ---- contractions ----
    def op_MatMul(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.matmul(self.t(a[0]), self.t(a[1]))

    def op_Gemm(self, node: Node, a: list[Any]) -> torch.Tensor:
        x, w = self.t(a[0]), self.t(a[1])
        c = self.t(a[2]) if len(a) > 2 and a[2] is not None else None
        alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
        trans_a, trans_b = attr_int(node, "transA", 0), attr_int(node, "transB", 0)
        if alpha == beta == 1.0 and not trans_a and trans_b:
            return F.linear(x, w, c)  # nn.Linear's own kernel (fused bias): the exported model's bits
        if trans_a:
            x = x.t()
        if trans_b:
            w = w.t()
        if c is None:
            return torch.matmul(x, w) * alpha if alpha != 1.0 else torch.matmul(x, w)
        return torch.addmm(c, x, w, beta=beta, alpha=alpha)

    def op_Conv(self, node: Node, a: list[Any]) -> torch.Tensor:
        # contiguous: torch 2.13's CPU convolution backward through oneDNN corrupts memory on a permuted
        # (channels-last strided) input with a stride above 1 (tests/unit/test_onnx_models.py meets it)
        x, w = self.t(a[0]).contiguous(), self.t(a[1])
        geo = conv_geometry(node, tuple(x.shape), tuple(w.shape))
        b = self.t(a[2]) if len(a) > 2 and a[2] is not None else None
        return F.conv2d(x, w, b, stride=geo.stride, padding=geo.pad, groups=1)

    # ---- normalisation and activations ----
    def op_LayerNormalization(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        axis = attr_int(node, "axis", -1) % x.dim()
        w = self.t(a[1])
        b = self.t(a[2]) if len(a) > 2 and a[2] is not None else None
        return F.layer_norm(x, tuple(x.shape[axis:]), w, b, float(node.attrs.get("epsilon", 1e-5)))

    def op_Relu(self, node: Node, a: list[Any]) -> torch.Tensor:
        return F.relu(self.t(a[0]))

    def op_Gelu(self, node: Node, a: list[Any]) -> torch.Tensor:
        return F.gelu(self.t(a[0]), approximate=str(node.attrs.get("approximate", "none")))

    def op_Sigmoid(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.sigmoid(self.t(a[0]))

    def op_Tanh(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.tanh(self.t(a[0]))

    def op_Erf(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.erf(self.t(a[0]))

    def op_Softmax(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.softmax(self.t(a[0]), dim=attr_int(node, "axis", -1))

    # ---- pooling ----
    def op_MaxPool(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        geo = pool_geometry(node, tuple(x.shape))
        return F.max_pool2d(x, geo.kernel, geo.stride, geo.pad)

    def op_AveragePool(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        geo = pool_geometry(node, tuple(x.shape))
        return F.avg_pool2d(x, geo.kernel, geo.stride, geo.pad, count_include_pad=bool(
            attr_int(node, "count_include_pad", 0)))

    def op_GlobalAveragePool(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)

    def op_ReduceMean(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        axes = ints(a[1], node, "axes") if len(a) > 1 and a[1] is not None else list(node.attrs.get("axes", ()))
        dims = tuple(d % x.dim() for d in axes) if axes else tuple(range(x.dim()))
        return x.mean(dim=dims, keepdim=bool(attr_int(node, "keepdims", 1)))

    # ---- elementwise ----
    def op_Add(self, node: Node, a: list[Any]) -> torch.Tensor:
        return self.t(a[0]) + self.t(a[1])

    def op_Sub(self, node: Node, a: list[Any]) -> torch.Tensor:
        return self.t(a[0]) - self.t(a[1])

    def op_Mul(self, node: Node, a: list[Any]) -> torch.Tensor:
        return self.t(a[0]) * self.t(a[1])

    def op_Div(self, node: Node, a: list[Any]) -> torch.Tensor:
        return self.t(a[0]) / self.t(a[1])

    def op_Neg(self, node: Node, a: list[Any]) -> torch.Tensor:
        return -self.t(a[0])

    def op_Where(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.where(self.t(a[0]), self.t(a[1]), self.t(a[2]))

    # ---- data movement ----
    def op_Reshape(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        target = reshape_target(tuple(x.shape), ints(a[1], node, "shape"), bool(attr_int(node, "allowzero", 0)),
                                node)
        return x.reshape(target)

    def op_Flatten(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        return x.reshape(flatten_shape(tuple(x.shape), node))

    def op_Squeeze(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        return x.reshape(squeeze_shape(tuple(x.shape), node, a, False))

    def op_Unsqueeze(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        return x.reshape(squeeze_shape(tuple(x.shape), node, a, True))

    def op_Transpose(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        perm = node.attrs.get("perm") or tuple(reversed(range(x.dim())))
        return x.permute(*perm)

    def op_Concat(self, node: Node, a: list[Any]) -> torch.Tensor:
        return torch.cat([self.t(v) for v in a if v is not None], dim=attr_int(node, "axis", 0))

    def op_Slice(self, node: Node, a: list[Any]) -> torch.Tensor:
        x = self.t(a[0])
        for axis, start, length in slice_ranges(tuple(x.shape), node, a):
            x = x.narrow(axis, start, length)
        return x

    def op_Split(self, node: Node, a: list[Any]) -> list[Any]:
        x = self.t(a[0])
        axis, sizes = split_sizes(tuple(x.shape), node, a)
        return list(torch.split(x, sizes, dim=axis))

    def op_Gather(self, node: Node, a: list[Any]) -> torch.Tensor:
        data, idx = self.t(a[0]), self.t(a[1])
        axis = attr_int(node, "axis", 0) % data.dim()
        if axis == 0 and data.dim() == 2 and data.dtype.is_floating_point:
            return F.embedding(idx, data)
        idx = torch.where(idx < 0, idx + data.shape[axis], idx)
        out = torch.index_select(data, axis, idx.reshape(-1))
        return out.reshape(*data.shape[:axis], *idx.shape, *data.shape[axis + 1:])

    def op_Identity(self, node: Node, a: list[Any]) -> torch.Tensor:
        return self.t(a[0])

    def op_Dropout(self, node: Node, a: list[Any]) -> list[Any]:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise SpecError(f"model.onnx: {node.where()}: its mask output is used; dropout is the identity here")
        return [self.t(a[0])]
