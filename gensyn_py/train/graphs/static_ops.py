"""ONNX ops on constants, with NumPy: the shape arithmetic, masks and scale factors exporters write.

Each takes the node and its inputs (NumPy arrays, None for an omitted optional input) and returns its
outputs. They run on values fixed by the model file alone, so their results are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.graph import Node

Arrays = list[Any]
StaticOp = Callable[[Node, Arrays], Arrays]


def _ints(a: Any) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _constant(node: Node, _: Arrays) -> Arrays:
    a = node.attrs
    if "value" in a:
        return [np.asarray(a["value"])]
    if "value_float" in a:
        return [np.asarray(a["value_float"], dtype=np.float32)]
    if "value_floats" in a:
        return [np.asarray(a["value_floats"], dtype=np.float32)]
    if "value_int" in a:
        return [np.asarray(a["value_int"], dtype=np.int64)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise SpecError(f"model.onnx: {node.where()}: unsupported constant attributes {sorted(a)}")


def _constant_of_shape(node: Node, args: Arrays) -> Arrays:
    value = node.attrs.get("value", np.zeros(1, dtype=np.float32))
    return [np.full(_ints(args[0]), np.asarray(value).reshape(-1)[0], dtype=np.asarray(value).dtype)]


def _shape(node: Node, value: Any) -> Any:
    from gensyn_py.train.graphs.interpreter import shape_of

    return shape_of(node, tuple(value.shape))


def _cast(node: Node, args: Arrays) -> Arrays:
    from onnx.helper import tensor_dtype_to_np_dtype

    return [args[0].astype(tensor_dtype_to_np_dtype(int(node.attrs["to"])))]


def _trilu(node: Node, args: Arrays) -> Arrays:
    k = _ints(args[1])[0] if len(args) > 1 and args[1] is not None else 0
    fn = np.triu if int(node.attrs.get("upper", 1)) else np.tril
    return [fn(args[0], k)]


def _range(_: Node, args: Arrays) -> Arrays:
    start, limit, delta = (np.asarray(a).reshape(()).item() for a in args)
    return [np.arange(start, limit, delta).astype(np.result_type(*args))]


def _gather(node: Node, args: Arrays) -> Arrays:
    return [np.take(args[0], args[1], axis=int(node.attrs.get("axis", 0)))]


def _reshape(node: Node, args: Arrays) -> Arrays:
    from gensyn_py.train.graphs.interpreter import reshape_target

    target = reshape_target(args[0].shape, _ints(args[1]), bool(node.attrs.get("allowzero", 0)), node)
    return [args[0].reshape(target)]


def _slice(node: Node, args: Arrays) -> Arrays:
    from gensyn_py.train.graphs.interpreter import slice_ranges

    index = [slice(None)] * args[0].ndim
    for axis, start, length in slice_ranges(args[0].shape, node, args):
        index[axis] = slice(start, start + length)
    return [args[0][tuple(index)]]


def _squeeze(unsqueeze: bool) -> StaticOp:
    def op(node: Node, args: Arrays) -> Arrays:
        from gensyn_py.train.graphs.interpreter import squeeze_shape

        return [args[0].reshape(squeeze_shape(args[0].shape, node, args, unsqueeze))]

    return op


def _split(node: Node, args: Arrays) -> Arrays:
    from gensyn_py.train.graphs.interpreter import split_sizes

    axis, sizes = split_sizes(args[0].shape, node, args)
    return list(np.split(args[0], np.cumsum(sizes)[:-1], axis=axis))


def _flatten(node: Node, args: Arrays) -> Arrays:
    from gensyn_py.train.graphs.interpreter import flatten_shape

    return [args[0].reshape(flatten_shape(args[0].shape, node))]


def _binary(fn: Callable[[Any, Any], Any]) -> StaticOp:
    def op(_: Node, args: Arrays) -> Arrays:
        out = fn(args[0], args[1])
        # ONNX keeps the operands' type; NumPy would widen a float32 by a float64 scalar
        return [np.asarray(out).astype(np.result_type(args[0], args[1]), copy=False)]

    return op


def _div(a: Any, b: Any) -> Any:
    return a // b if np.issubdtype(np.asarray(a).dtype, np.integer) else a / b


STATIC: dict[str, StaticOp] = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Identity": lambda n, a: [a[0]],
    "Dropout": lambda n, a: [a[0]],
    "Shape": lambda n, a: [_shape(n, a[0])],
    "Cast": _cast,
    "Not": lambda n, a: [np.logical_not(a[0])],
    "And": lambda n, a: [np.logical_and(a[0], a[1])],
    "Or": lambda n, a: [np.logical_or(a[0], a[1])],
    "Trilu": _trilu,
    "Pow": _binary(np.power),
    "Reciprocal": lambda n, a: [(1 / a[0]).astype(a[0].dtype)],
    "Sqrt": lambda n, a: [np.sqrt(a[0])],
    "Neg": lambda n, a: [-a[0]],
    "Equal": lambda n, a: [np.equal(a[0], a[1])],
    "Less": lambda n, a: [np.less(a[0], a[1])],
    "Greater": lambda n, a: [np.greater(a[0], a[1])],
    "Range": _range,
    "Expand": lambda n, a: [np.broadcast_to(a[0], np.broadcast_shapes(a[0].shape, tuple(_ints(a[1])))).copy()],
    "Where": lambda n, a: [np.where(a[0], a[1], a[2])],
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Gather": _gather,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": lambda n, a: [np.transpose(a[0], n.attrs.get("perm"))],
    "Concat": lambda n, a: [np.concatenate([x for x in a if x is not None], axis=int(n.attrs["axis"]))],
    "Slice": _slice,
    "Squeeze": _squeeze(False),
    "Unsqueeze": _squeeze(True),
    "Split": _split,
}
