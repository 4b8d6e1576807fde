"""Runs a checked ONNX graph: constants with NumPy, the trained computation with an op set of the mode.

A value is either a constant (a NumPy array: initializers that are not trained, `Constant` nodes, and
everything computed from constants alone, shapes included, since every dimension is fixed) or a traced
value of the mode (a torch tensor in `exact`, a repro tape value in `repro`). A node whose inputs are all
constants is evaluated by `static_ops`; any other node by the mode's op set, which refuses what it cannot
compute exactly, naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.graph import Graph, Node
from gensyn_py.train.graphs.static_ops import STATIC
from gensyn_py.train.graphs.whitelist import CONSTANT_ONLY


class OpSet(Protocol):
    def shape(self, value: Any) -> tuple[int, ...]: ...
    def run(self, node: Node, args: list[Any]) -> list[Any]: ...


def run_graph(graph: Graph, ops: OpSet, params: Mapping[str, Any], x: Any,
              on_value: Any = None) -> Any:
    """The graph's output for input `x` with trained parameters `params` (by initializer name).

    `on_value(node, args, outputs)` (optional) sees every node's inputs and outputs, as the bounds check needs."""
    env: dict[str, Any] = dict(graph.constants)
    env.update(params)
    env[graph.input_name] = x
    for node in graph.nodes:
        args = [env[n] if n else None for n in node.inputs]
        outs = _run_node(node, args, ops)
        if on_value is not None:
            on_value(node, args, outs)
        for name, value in zip(node.outputs, outs, strict=False):
            if name:
                env[name] = value
    return env[graph.output_name]


def _run_node(node: Node, args: list[Any], ops: OpSet) -> list[Any]:
    if node.op == "Shape" and args and args[0] is not None and not isinstance(args[0], np.ndarray):
        return [shape_of(node, ops.shape(args[0]))]  # a trained value's dimensions are fixed: a constant
    if all(a is None or isinstance(a, np.ndarray) for a in args):
        try:
            return STATIC[node.op](node, args)
        except KeyError:
            raise SpecError(f"model.onnx: {node.where()} has constant inputs only, which this op does not "
                            f"support") from None
        except (ValueError, IndexError, TypeError) as e:
            raise SpecError(f"model.onnx: {node.where()} on constants failed: {e}") from None
    if node.op in CONSTANT_ONLY:
        raise SpecError(f"model.onnx: {node.where()} may only act on constants; here it reads a value that "
                        f"depends on the input or the parameters")
    return ops.run(node, args)


def shape_of(node: Node, dims: tuple[int, ...]) -> np.ndarray:
    """ONNX Shape's output for a value of these dimensions (its `start` and `end` attributes applied)."""
    return np.asarray(dims, dtype=np.int64)[int(node.attrs.get("start", 0)):node.attrs.get("end", None)]


def attr_int(node: Node, key: str, default: int) -> int:
    return int(node.attrs.get(key, default))


def ints(value: Any, node: Node, what: str) -> list[int]:
    """A constant integer input (shapes, axes, starts, ...) as a list."""
    if not isinstance(value, np.ndarray):
        raise SpecError(f"model.onnx: {node.where()}: its {what} must be a constant")
    return [int(v) for v in value.reshape(-1)]


def reshape_target(shape: tuple[int, ...], target: list[int], allowzero: bool, node: Node) -> tuple[int, ...]:
    """ONNX Reshape's output shape: 0 copies the input dimension (unless allowzero), one -1 is inferred."""
    out = [shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    total = int(np.prod(shape))
    if out.count(-1) > 1:
        raise SpecError(f"model.onnx: {node.where()}: more than one -1 in the target shape")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        if known == 0 or total % known:
            raise SpecError(f"model.onnx: {node.where()}: cannot reshape {shape} to {target}")
        out[out.index(-1)] = total // known
    if int(np.prod(out)) != total:
        raise SpecError(f"model.onnx: {node.where()}: cannot reshape {shape} to {target}")
    return tuple(out)


def slice_ranges(shape: tuple[int, ...], node: Node, args: list[Any]) -> list[tuple[int, int, int]]:
    """(axis, start, length) per sliced axis of an ONNX Slice with step 1, the bounds clamped as ONNX does."""
    starts = ints(args[1], node, "starts")
    ends = ints(args[2], node, "ends")
    axes = ints(args[3], node, "axes") if len(args) > 3 and args[3] is not None else list(range(len(starts)))
    steps = ints(args[4], node, "steps") if len(args) > 4 and args[4] is not None else [1] * len(starts)
    out = []
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        if step != 1:
            raise SpecError(f"model.onnx: {node.where()}: only step 1 is supported, got {step}")
        axis %= len(shape)
        n = shape[axis]
        s = min(max(start + n if start < 0 else start, 0), n)
        e = min(max(end + n if end < 0 else end, 0), n)
        out.append((axis, s, max(e - s, 0)))
    return out


def split_sizes(shape: tuple[int, ...], node: Node, args: list[Any]) -> tuple[int, list[int]]:
    """(axis, sizes) of an ONNX Split: the `split` input, or `num_outputs` (opset 18) / the output count."""
    axis = attr_int(node, "axis", 0) % len(shape)
    if len(args) > 1 and args[1] is not None:
        sizes = ints(args[1], node, "split")
    else:
        parts = attr_int(node, "num_outputs", len(node.outputs))
        n = shape[axis]
        size = -(-n // parts)
        sizes = [min(size, n - i * size) for i in range(parts)]
    if sum(sizes) != shape[axis]:
        raise SpecError(f"model.onnx: {node.where()}: parts {sizes} do not add up to dimension {shape[axis]}")
    return axis, sizes


def flatten_shape(shape: tuple[int, ...], node: Node) -> tuple[int, int]:
    axis = attr_int(node, "axis", 1) % (len(shape) + 1) if shape else 0
    return int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))


def squeeze_shape(shape: tuple[int, ...], node: Node, args: list[Any], unsqueeze: bool) -> tuple[int, ...]:
    axes_in = args[1] if len(args) > 1 else None
    axes = ints(axes_in, node, "axes") if axes_in is not None else list(node.attrs.get("axes", ()))
    if unsqueeze:
        out = list(shape)
        rank = len(shape) + len(axes)
        for a in sorted(a % rank for a in axes):
            out.insert(a, 1)
        return tuple(out)
    drop = {a % len(shape) for a in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
    return tuple(d for i, d in enumerate(shape) if i not in drop)
