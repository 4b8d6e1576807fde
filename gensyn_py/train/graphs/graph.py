"""An ONNX model file, decoded and checked before anything runs it.

`parse_graph(data)` refuses (SpecError naming the node and op, or the field) a file that is not ONNX, uses
a custom or future op domain, an op outside the whitelist, a subgraph, external tensor data, more than one
input or output, or an input whose dimensions are not fixed numbers (the batch dimension may be symbolic).
What passes is a plain description: the nodes in order, the constants as NumPy arrays, and the trainable
parameters (every float32 initializer with more than one element, unless the model's metadata lists it in
`gensyn.frozen`) with their initial values: a job can start from the weights the file ships.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.whitelist import ADVICE, ALLOWED, FROZEN_KEY, MAX_GRAPH_BYTES, MAX_NODES, MAX_PARAMS

MIN_OPSET, MAX_OPSET = 13, 21  # the default-domain opsets whose op definitions the interpreter follows


@dataclass(frozen=True)
class Node:
    op: str
    name: str
    inputs: tuple[str, ...]  # "" marks an omitted optional input
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]

    def where(self) -> str:
        return f"node {self.name!r} ({self.op})"


@dataclass(frozen=True)
class Graph:
    """A checked ONNX graph: what the interpreter runs."""

    nodes: tuple[Node, ...]
    input_name: str
    input_shape: tuple[int | None, ...]  # None: the symbolic batch dimension
    input_dtype: str  # "float32" or "int64"
    output_name: str
    params: Mapping[str, np.ndarray]  # trainable, in file order, with their initial values
    constants: Mapping[str, np.ndarray]
    opset: int
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def num_params(self) -> int:
        return sum(int(v.size) for v in self.params.values())


_DTYPES = {1: "float32", 7: "int64"}


def parse_graph(data: bytes) -> Graph:
    """Decode and check an ONNX model file; SpecError (prefixed `model.onnx`) on anything it cannot take."""
    import onnx
    from google.protobuf.message import DecodeError

    if len(data) > MAX_GRAPH_BYTES:
        raise SpecError(f"model.onnx: {len(data):,} bytes; at most {MAX_GRAPH_BYTES:,}")
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise SpecError(f"model.onnx: not an ONNX model file ({e})") from None
    g = model.graph
    if not g.node:
        raise SpecError("model.onnx: the graph has no nodes (is this an ONNX model file?)")
    opset = _opset(model)
    if len(g.node) > MAX_NODES:
        raise SpecError(f"model.onnx: {len(g.node):,} nodes; at most {MAX_NODES:,}")
    inits = {t.name: _array(t) for t in g.initializer}
    graph_inputs = [i for i in g.input if i.name not in inits]
    if len(graph_inputs) != 1 or len(g.output) != 1:
        raise SpecError(f"model.onnx: the graph must have one input and one output, it has "
                        f"{len(graph_inputs)} and {len(g.output)}")
    inp = graph_inputs[0]
    dtype = _DTYPES.get(inp.type.tensor_type.elem_type)
    if dtype is None:
        raise SpecError(f"model.onnx: input {inp.name!r} must be float32 or int64 (element type "
                        f"{inp.type.tensor_type.elem_type})")
    shape = _input_shape(inp)
    nodes = tuple(_node(n, i) for i, n in enumerate(g.node))
    frozen = _frozen(model)
    unknown = sorted(frozen - set(inits))
    if unknown:
        raise SpecError(f"model.onnx: metadata {FROZEN_KEY} names {unknown}, which are not initializers")
    params = {k: v for k, v in inits.items() if v.dtype == np.float32 and v.size > 1 and k not in frozen}
    constants = {k: v for k, v in inits.items() if k not in params}
    n_params = sum(int(v.size) for v in params.values())
    if n_params > MAX_PARAMS:
        raise SpecError(f"model.onnx: {n_params:,} parameters; at most {MAX_PARAMS:,}")
    _check_wiring(nodes, {inp.name, *inits}, g.output[0].name)
    return Graph(nodes, inp.name, shape, dtype, g.output[0].name, params, constants, opset)


def _opset(model: Any) -> int:
    version = None
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            version = imp.version
        elif any(n.domain == imp.domain for n in model.graph.node):
            raise SpecError(f"model.onnx: op domain {imp.domain!r} is not supported (only the default domain)")
    if version is None or not MIN_OPSET <= version <= MAX_OPSET:
        raise SpecError(f"model.onnx: opset {version}; this node runs opsets {MIN_OPSET} to {MAX_OPSET}")
    return int(version)


def _array(t: Any) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    if t.data_location == TensorProto.EXTERNAL:
        raise SpecError(f"model.onnx: initializer {t.name!r} keeps its data in an external file; "
                        f"save the model with its weights inside (save_as_external_data=False)")
    try:
        arr = numpy_helper.to_array(t)
    except (ValueError, TypeError, RuntimeError) as e:
        raise SpecError(f"model.onnx: initializer {t.name!r} cannot be decoded ({e})") from None
    if arr.dtype.kind == "f" and arr.dtype != np.float32:
        raise SpecError(f"model.onnx: initializer {t.name!r} is {arr.dtype}; floats must be float32")
    if arr.dtype.kind not in "fiub":
        raise SpecError(f"model.onnx: initializer {t.name!r} has unsupported type {arr.dtype}")
    return np.ascontiguousarray(arr)


def _input_shape(inp: Any) -> tuple[int | None, ...]:
    dims = inp.type.tensor_type.shape.dim
    if not dims:
        raise SpecError(f"model.onnx: input {inp.name!r} has no declared shape")
    shape: list[int | None] = []
    for i, d in enumerate(dims):
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
        elif i == 0:
            shape.append(None)  # a symbolic batch dimension: the spec's batch size fills it
        else:
            raise SpecError(f"model.onnx: input {inp.name!r} dimension {i} is dynamic "
                            f"({d.dim_param or '?'}); only the batch dimension may be, the spec pins no other")
    return tuple(shape)


def _node(n: Any, index: int) -> Node:
    import onnx

    name = n.name or f"#{index}"
    if n.domain not in ("", "ai.onnx"):
        raise SpecError(f"model.onnx: node {name!r} ({n.op_type}) is in domain {n.domain!r}; "
                        f"only the default ONNX domain is supported")
    if n.op_type not in ALLOWED:
        why = ADVICE.get(n.op_type, "it is not on the whitelist (docs/formats.md, ONNX models)")
        raise SpecError(f"model.onnx: node {name!r} uses op {n.op_type}, which is not supported: {why}")
    attrs: dict[str, Any] = {}
    for a in n.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise SpecError(f"model.onnx: node {name!r} ({n.op_type}) holds a subgraph; control flow is not supported")
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, onnx.TensorProto):
            value = _array(value)
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list | tuple):
            value = tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value)
        attrs[a.name] = value
    return Node(n.op_type, name, tuple(n.input), tuple(n.output), attrs)


def _frozen(model: Any) -> set[str]:
    for prop in model.metadata_props:
        if prop.key == FROZEN_KEY:
            return {s.strip() for s in prop.value.split(",") if s.strip()}
    return set()


def _check_wiring(nodes: tuple[Node, ...], known: set[str], output: str) -> None:
    """Every node reads only values defined before it (ONNX requires a topological order), no value is
    defined twice, and the output is defined."""
    defined = set(known)
    for node in nodes:
        for name in node.inputs:
            if name and name not in defined:
                raise SpecError(f"model.onnx: {node.where()} reads {name!r}, which no earlier node or "
                                f"initializer defines")
        for name in node.outputs:
            if name in defined:
                raise SpecError(f"model.onnx: {node.where()} redefines {name!r}")
            if name:
                defined.add(name)
    if output not in defined:
        raise SpecError(f"model.onnx: the graph output {output!r} is never computed")
