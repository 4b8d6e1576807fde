"""A minimal reverse-mode tape over the layer ops of ``layers``, on any backend.

``Tape(be).op(name, *inputs, **attrs)`` runs a layer's forward on backend ``be`` and, when an input
needs a gradient, records it.  ``backward(loss)`` then runs the recorded layers' backward passes in
reverse order.  Where a tensor feeds several layers, its gradient contributions are added with ``be.add``
in the order they arrive (the reverse of the forward order; for two contributions the order does not
change the bits).  So the whole backward pass is itself a fixed op sequence, the same on every backend.
The tape is also the executor the model families' ``repro_forward`` functions are written against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gensyn_py.repro.backend import Arr, Backend
from gensyn_py.repro.layers import LAYERS, Layer


class Var:
    """A value on the tape and whether gradients flow to it."""

    __slots__ = ("name", "requires_grad", "value")

    def __init__(self, value: Arr, requires_grad: bool = False, name: str = "") -> None:
        self.value = value
        self.requires_grad = requires_grad
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)


@dataclass
class _Node:
    layer: Layer
    inputs: tuple[Any, ...]
    needs: tuple[bool, ...]
    saved: Any
    output: Var


class Tape:
    """Forward executor that records what backward needs; ``be`` is the backend every op runs on."""

    def __init__(self, be: Backend) -> None:
        self.be = be
        self._nodes: list[_Node] = []

    def leaf(self, value: Arr, requires_grad: bool = False, name: str = "") -> Var:
        return Var(value, requires_grad, name)

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Var:
        layer = LAYERS[name]
        values = [v.value if isinstance(v, Var) else v for v in inputs]
        out, saved = layer.forward(self.be, *values, **attrs)
        needs = tuple(isinstance(v, Var) and v.requires_grad for v in inputs)
        var = Var(out, any(needs))
        if var.requires_grad:
            self._nodes.append(_Node(layer, inputs, needs, saved, var))
        return var

    def backward(self, loss: Var) -> dict[str, Arr]:
        """Gradients of the (1, 1) `loss` with respect to every named leaf that requires one."""
        be = self.be
        grads: dict[int, Arr] = {id(loss): be.const(1.0, loss.value)}
        leaves: dict[int, Var] = {}
        for node in reversed(self._nodes):
            g = grads.pop(id(node.output), None)
            if g is None:
                continue
            for inp, gi, need in zip(node.inputs, node.layer.backward(be, node.saved, g, node.needs), node.needs,
                                     strict=True):
                if not need or gi is None:
                    continue
                key = id(inp)
                grads[key] = gi if key not in grads else be.add(grads[key], gi)
                if inp.name:
                    leaves[key] = inp
        return {v.name: grads[k] for k, v in leaves.items()}
