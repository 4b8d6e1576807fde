"""Conv and pooling attributes of an ONNX node, checked: 2-D, one group, no dilation, symmetric padding."""

from __future__ import annotations

from dataclasses import dataclass

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.graph import Node


@dataclass(frozen=True)
class Geometry:
    kernel: tuple[int, int]
    stride: tuple[int, int]
    pad: tuple[int, int]

    @property
    def square(self) -> bool:
        return len({*self.kernel}) == 1 and len({*self.stride}) == 1 and len({*self.pad}) == 1


def _geometry(node: Node, spatial: tuple[int, ...], kernel: tuple[int, ...]) -> Geometry:
    if len(spatial) != 2:
        raise SpecError(f"model.onnx: {node.where()}: only 2-D inputs (N, C, H, W) are supported")
    auto = str(node.attrs.get("auto_pad", "NOTSET"))
    if auto not in ("NOTSET", "VALID"):
        raise SpecError(f"model.onnx: {node.where()}: auto_pad {auto} is not supported; export explicit pads")
    if any(d != 1 for d in node.attrs.get("dilations", (1, 1))):
        raise SpecError(f"model.onnx: {node.where()}: dilated kernels are not supported")
    if int(node.attrs.get("ceil_mode", 0)):
        raise SpecError(f"model.onnx: {node.where()}: ceil_mode is not supported")
    pads = tuple(int(p) for p in node.attrs.get("pads", (0, 0, 0, 0)))
    if pads[:2] != pads[2:]:
        raise SpecError(f"model.onnx: {node.where()}: asymmetric padding {list(pads)} is not supported")
    stride = tuple(int(s) for s in node.attrs.get("strides", (1, 1)))
    k = tuple(int(v) for v in kernel)
    return Geometry((k[0], k[1]), (stride[0], stride[1]), (pads[0], pads[1]))


def conv_geometry(node: Node, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Geometry:
    if int(node.attrs.get("group", 1)) != 1:
        raise SpecError(f"model.onnx: {node.where()}: grouped convolutions are not supported")
    return _geometry(node, x_shape[2:], w_shape[2:])


def pool_geometry(node: Node, x_shape: tuple[int, ...]) -> Geometry:
    kernel = node.attrs.get("kernel_shape")
    if kernel is None:
        raise SpecError(f"model.onnx: {node.where()}: kernel_shape is required")
    if "strides" not in node.attrs:
        node = Node(node.op, node.name, node.inputs, node.outputs, {**node.attrs, "strides": (1, 1)})
    return _geometry(node, x_shape[2:], tuple(kernel))
