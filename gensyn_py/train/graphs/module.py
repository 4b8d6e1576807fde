"""A checked ONNX graph as a trainable torch module, and as a repro program.

The module's parameters are the graph's trainable initializers under their own names (dotted names become
submodules, so a model exported from PyTorch keeps its state_dict keys), initialised from the file's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import torch
from torch import nn

from gensyn_py.train.graphs.graph import Graph
from gensyn_py.train.graphs.interpreter import run_graph


@cache
def _names_of(params: tuple[str, ...]) -> tuple[str, ...]:
    """Module parameter names for the graph's initializer names: the same where they nest as module paths,
    else every name with its dots and other awkward characters replaced (the same rule for all)."""
    segments = [n.split(".") for n in params]
    prefixes = {".".join(s[:i]) for s in segments for i in range(1, len(s))}
    if all(all(seg.isidentifier() or seg.isdigit() for seg in s) for s in segments) and not prefixes & set(params):
        return params
    out = tuple("".join(c if c.isalnum() or c == "_" else "_" for c in n) for n in params)
    if len(set(out)) != len(out):
        out = tuple(f"p{i}_{n}" for i, n in enumerate(out))
    return out


def module_names(graph: Graph) -> dict[str, str]:
    """Module parameter name -> initializer name."""
    names = tuple(graph.params)
    return dict(zip(_names_of(names), names, strict=True))


class GraphModule(nn.Module):
    """``module(x)`` runs the graph with torch's kernels; parameters start at the file's initial values."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self._onnx = module_names(graph)
        for name, onnx_name in self._onnx.items():
            owner: nn.Module = self
            *path, leaf = name.split(".")
            for seg in path:
                if not hasattr(owner, seg):
                    owner.add_module(seg, nn.Module())
                owner = getattr(owner, seg)
            owner.register_parameter(leaf, nn.Parameter(torch.from_numpy(graph.params[onnx_name].copy())))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from gensyn_py.train.graphs.torch_ops import TorchOps

        params = {self._onnx[k]: v for k, v in self.named_parameters()}
        out: torch.Tensor = run_graph(self.graph, TorchOps(x.device), params, x)
        return out


def repro_forward(ex: Any, p: Mapping[str, Any], x: Any, cfg: Graph) -> Any:
    """The graph as repro layer ops on executor `ex`, parameters by their module names."""
    from gensyn_py.train.graphs.repro_ops import ReproOps

    onnx = module_names(cfg)
    return run_graph(cfg, ReproOps(ex), {onnx[k]: v for k, v in p.items()}, x)
