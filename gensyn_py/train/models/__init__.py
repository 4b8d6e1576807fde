"""Model registry: family name -> config dataclass, builder and repro program. Nothing else is ever run.

Each family file holds the torch module (`build`) and the same network as a fixed sequence of repro
layer ops (`repro_forward`, written against an executor: ``repro.tape.Tape`` or ``repro.autograd.AUTOGRAD``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import SpecError
from gensyn_py.train.models import cnn, mlp, transformer
from gensyn_py.train.models.cnn import CNNConfig
from gensyn_py.train.models.mlp import MLPConfig
from gensyn_py.train.models.transformer import TransformerConfig

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.graphs.checks import GraphFacts
    from gensyn_py.train.graphs.graph import Graph
    from gensyn_py.train.spec import JobSpec


@dataclass(frozen=True)
class Family:
    """A registered model family: its config type, builder and input kind."""

    config_type: type[Any]
    builder: Callable[[Any], torch.nn.Module]
    task: str  # "classify" (x float, y class) or "lm" (x tokens, y next tokens)
    repro_forward: Callable[..., Any]  # (executor, params, x, cfg) -> output
    repro_max_k: Callable[[Any, int], int]  # (cfg, batch) -> largest contraction of a repro step


def _build_mlp(cfg: MLPConfig) -> torch.nn.Module:
    from gensyn_py.train.models.mlp import build

    return build(cfg)


def _build_cnn(cfg: CNNConfig) -> torch.nn.Module:
    from gensyn_py.train.models.cnn import build

    return build(cfg)


def _build_transformer(cfg: TransformerConfig) -> torch.nn.Module:
    from gensyn_py.train.models.transformer import build

    return build(cfg)


REGISTRY: dict[str, Family] = {
    "mlp": Family(MLPConfig, _build_mlp, "classify", mlp.repro_forward, mlp.repro_max_k),
    "cnn": Family(CNNConfig, _build_cnn, "classify", cnn.repro_forward, cnn.repro_max_k),
    "transformer": Family(TransformerConfig, _build_transformer, "lm", transformer.repro_forward,
                          transformer.repro_max_k),
}


def family(name: str) -> Family:
    """The registered family `name`, or a SpecError listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise SpecError(f"unknown model family {name!r}; known: {sorted(REGISTRY)}") from None


def make_config(name: str, sizes: Mapping[str, int]) -> Any:
    """Validate `sizes` against the family's config dataclass and build the config."""
    fam = family(name)
    fields = {f.name for f in dataclasses.fields(fam.config_type)}
    unknown = sorted(set(sizes) - fields)
    if unknown:
        raise SpecError(f"model {name!r}: unknown sizes {unknown}; allowed: {sorted(fields)}")
    for key, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecError(f"model {name!r}: size {key!r} must be a positive integer, got {value!r}")
    cfg = fam.config_type(**sizes)
    check = getattr(cfg, "check", None)
    if check is not None:
        check()
    return cfg


def build_model(name: str, sizes: Mapping[str, int], repro: bool = False) -> torch.nn.Module:
    """Construct the model (on CPU, default init; the trainer re-seeds before calling).

    With `repro`, the same module (same parameters, names and init) computes ``model(x)`` with the
    family's repro program through torch autograd (``repro.autograd.repro_module``).
    """
    fam = family(name)
    cfg = make_config(name, sizes)
    model = fam.builder(cfg)
    if not repro:
        return model
    from gensyn_py.repro.autograd import repro_module

    return repro_module(model, partial(fam.repro_forward, cfg=cfg))


# ---- a job's model, whichever kind: a registry family, or an ONNX graph (`train/graphs`) ----

ONNX = "onnx"


def graph_of(spec: JobSpec) -> Graph:
    """The checked graph of an `onnx` spec (loaded into this process by whoever fetched the spec's content)."""
    from gensyn_py.train.graphs.cache import loaded

    assert spec.model.onnx is not None
    return loaded(spec.model.onnx.cid)


def graph_facts(spec: JobSpec) -> GraphFacts:
    """The graph checked against the job (input, output, bounds, repro exactness), once per process."""
    from gensyn_py.train.graphs.checks import check_graph

    assert spec.model.onnx is not None
    d = spec.dataset
    key = (spec.model.onnx.cid, spec.batch_size, tuple(d.x_shape), d.x_dtype, tuple(d.y_shape), spec.mode)
    if key not in _FACTS:  # what the facts depend on, so a fine-tune of the same graph reuses its parent's
        _FACTS[key] = check_graph(graph_of(spec), spec.batch_size, d.x_shape, d.x_dtype, d.y_shape, spec.mode)
    return _FACTS[key]


_FACTS: dict[tuple[object, ...], GraphFacts] = {}


def task_of(spec: JobSpec) -> str:
    """"classify" or "lm": what the model's output scores and the dataset's targets are."""
    return graph_facts(spec).task if spec.model.onnx is not None else family(spec.model.family).task


def build_for(spec: JobSpec, repro: bool = False) -> torch.nn.Module:
    """The spec's model: a registry family (default init; the trainer seeds first) or the graph's module
    (its initial weights are the file's)."""
    if spec.model.onnx is None:
        return build_model(spec.model.family, spec.model.sizes, repro)
    from gensyn_py.train.graphs.module import GraphModule, repro_forward

    graph_facts(spec)  # refused here, by name, if the graph does not fit the job
    module = GraphModule(graph_of(spec))
    if not repro:
        return module
    from gensyn_py.repro.autograd import repro_module

    return repro_module(module, partial(repro_forward, cfg=module.graph))


def repro_forward_of(spec: JobSpec) -> Callable[..., Any]:
    """(executor, params, x) -> output: the spec's model as repro layer ops."""
    if spec.model.onnx is None:
        fam = family(spec.model.family)
        return partial(fam.repro_forward, cfg=make_config(spec.model.family, spec.model.sizes))
    from gensyn_py.train.graphs.module import repro_forward

    graph_facts(spec)
    return partial(repro_forward, cfg=graph_of(spec))
