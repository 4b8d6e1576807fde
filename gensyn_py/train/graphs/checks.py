"""A model graph checked against the job that names it: input, output, bounds and, in mode `repro`, exactness.

Run by the requester before any money moves and by every node before it claims or replays (a job can be
sent straight to the contract). One forward pass on torch's meta device at the spec's batch size gives every
intermediate shape without computing anything: the activation memory, the FLOPs, the largest contraction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.graphs.graph import Graph, Node
from gensyn_py.train.graphs.interpreter import run_graph
from gensyn_py.train.graphs.whitelist import MAX_ACTIVATION_BYTES


@dataclass(frozen=True)
class GraphFacts:
    task: str  # "classify": output (B, C), targets class ids; "lm": output (B, T, V), targets tokens (T,)
    outputs: int  # classes or vocabulary: the output's last dimension
    activation_bytes: int
    flops_per_step: int  # forward and backward, about 3x the forward's multiply-adds x 2
    max_k: int  # the largest contraction a step runs (a product's K or a gradient's rows)


def check_graph(graph: Graph, batch_size: int, x_shape: list[int], x_dtype: str, y_shape: list[int],
                mode: str) -> GraphFacts:
    """The facts of `graph` run on batches of `batch_size` examples shaped `x_shape`; SpecError naming the field
    (model.onnx, dataset.x_shape, batch_size, ...) where the graph does not fit the job."""
    import torch

    from gensyn_py.train.graphs.torch_ops import TorchOps

    want = (batch_size, *x_shape)
    declared = graph.input_shape
    if len(declared) != len(want) or any(d is not None and d != w for d, w in zip(declared, want, strict=False)):
        shown = ["batch" if d is None else d for d in declared]
        raise SpecError(f"model.onnx: the graph's input is {shown}; batch_size and dataset.x_shape give {list(want)}")
    if graph.input_dtype != x_dtype:
        raise SpecError(f"model.onnx: the graph's input is {graph.input_dtype}, dataset.x_dtype is {x_dtype}")
    tally = _Tally()
    meta = torch.device("meta")
    params = {k: torch.empty(v.shape, dtype=torch.float32, device=meta) for k, v in graph.params.items()}
    out = run_graph(graph, TorchOps(meta), params, _zeros(want, x_dtype, meta), on_value=tally)
    if isinstance(out, np.ndarray):
        raise SpecError("model.onnx: the graph's output does not depend on its input")
    facts = _facts(tuple(out.shape), batch_size, x_shape, x_dtype, y_shape, tally)
    if facts.activation_bytes > MAX_ACTIVATION_BYTES:
        raise SpecError(f"model.onnx: one forward pass at batch_size {batch_size} holds "
                        f"{facts.activation_bytes / 2**30:,.1f} GiB of activations; at most "
                        f"{MAX_ACTIVATION_BYTES / 2**30:,.0f} GiB")
    if mode == "repro":
        _check_repro(graph, want, x_dtype, facts)
    return facts


def _zeros(shape: tuple[int, ...], x_dtype: str, device: Any) -> Any:
    import torch

    return torch.zeros(shape, dtype=torch.float32 if x_dtype == "float32" else torch.int64, device=device)


class _Tally:
    def __init__(self) -> None:
        self.bytes = 0
        self.macs = 0
        self.max_k = 0

    def __call__(self, node: Node, args: list[Any], outs: list[Any]) -> None:
        for o in outs:
            if o is not None and not isinstance(o, np.ndarray):
                self.bytes += int(np.prod(o.shape)) * 4
        if node.op in ("MatMul", "Gemm", "Conv") and not isinstance(outs[0], np.ndarray):
            out = tuple(outs[0].shape)
            w = tuple(args[1].shape)
            if node.op == "Conv":
                k = int(np.prod(w[1:]))
                rows = out[0] * int(np.prod(out[2:]))
            else:
                trans_b = node.op == "Gemm" and int(node.attrs.get("transB", 0))
                k = w[-1] if trans_b else w[-2] if len(w) >= 2 else w[0]
                rows = int(np.prod(out[:-1]))
            self.macs += int(np.prod(out)) * k
            self.max_k = max(self.max_k, k, rows)


def _facts(out: tuple[int, ...], batch: int, x_shape: list[int], x_dtype: str, y_shape: list[int],
           tally: _Tally) -> GraphFacts:
    if len(out) == 2 and out[0] == batch:
        if y_shape:
            raise SpecError(f"model.onnx: the graph outputs {list(out)} (one score per class); the dataset's "
                            f"targets must be class ids (dataset.y_shape []), not {y_shape}")
        task = "classify"
    elif len(out) == 3 and out[:2] == (batch, *x_shape[:1]) and x_dtype == "int64":
        if y_shape != x_shape:
            raise SpecError(f"model.onnx: the graph outputs {list(out)} (next-token scores); dataset.y_shape "
                            f"must be the input's {x_shape}, not {y_shape}")
        task = "lm"
    else:
        raise SpecError(f"model.onnx: the graph outputs {list(out)}; a job needs (batch, classes) scores, or "
                        f"(batch, positions, vocabulary) for int64 token inputs")
    return GraphFacts(task, out[-1], tally.bytes, 6 * tally.macs, tally.max_k)


def _check_repro(graph: Graph, want: tuple[int, ...], x_dtype: str, facts: GraphFacts) -> None:
    """Every node has an exact form (a real forward pass on zeros, which the repro ops refuse by name) and
    no contraction is longer than the exact rule's limit."""
    import torch

    from gensyn_py.repro.autograd import AUTOGRAD
    from gensyn_py.repro.opset import MAX_K
    from gensyn_py.train.graphs.repro_ops import ReproOps

    if facts.max_k > MAX_K:
        raise SpecError(f"mode 'repro' supports contractions up to {MAX_K} (batch x positions, widths); this "
                        f"model needs {facts.max_k} at this batch_size")
    params = {k: torch.from_numpy(v.copy()) for k, v in graph.params.items()}
    with torch.no_grad():
        try:
            run_graph(graph, ReproOps(AUTOGRAD), params, _zeros(want, x_dtype, "cpu"))
        except ValueError as e:
            raise SpecError(f"model.onnx: mode 'repro' cannot run this graph: {e}") from None
