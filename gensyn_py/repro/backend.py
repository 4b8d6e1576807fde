"""The backend interface every repro op sequence is written against, and its torch implementation.

A composite op, a layer's forward and backward, and a whole training step are written once over a
``Backend``.  ``TORCH`` runs them with torch kernels (any device); ``reference.NUMPY`` runs the same
sequence in NumPy float32; ``trace.TracingBackend`` records it op by op.  Each method is one op of the
trace: an IEEE float32 primitive, a repro reduction (matmul, sum, index_sum, rowmax), or an exact data
movement (reshape, permute, narrow, cat, take, gather, ...).  ``opset.OP_ARGS`` lists every op and which
of its arguments are tensors.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy as np
import torch
from torch import Tensor

from gensyn_py.repro import primitives as P
from gensyn_py.repro.maps import index_map
from gensyn_py.repro.matmul import repro_index_sum, repro_matmul, repro_sum
from gensyn_py.repro.opset import OP_ARGS

__all__ = ["OP_ARGS", "TORCH", "Arr", "Backend", "TorchBackend"]

Arr = Any  # torch.Tensor or numpy.ndarray, depending on the backend


class Backend(Protocol):
    def const(self, v: float, like: Arr) -> Arr: ...
    def zeros(self, shape: tuple[int, ...], like: Arr) -> Arr: ...
    def index_map(self, kind: str, params: tuple[int, ...], like: Arr) -> Arr: ...
    def add(self, a: Arr, b: Arr) -> Arr: ...
    def sub(self, a: Arr, b: Arr) -> Arr: ...
    def mul(self, a: Arr, b: Arr) -> Arr: ...
    def div(self, a: Arr, b: Arr) -> Arr: ...
    def sqrt(self, a: Arr) -> Arr: ...
    def neg(self, a: Arr) -> Arr: ...
    def abs(self, a: Arr) -> Arr: ...
    def maximum(self, a: Arr, b: Arr) -> Arr: ...
    def minimum(self, a: Arr, b: Arr) -> Arr: ...
    def clamp(self, a: Arr, lo: float, hi: float) -> Arr: ...
    def lt(self, a: Arr, b: Arr) -> Arr: ...
    def gt(self, a: Arr, b: Arr) -> Arr: ...
    def eq(self, a: Arr, b: Arr) -> Arr: ...
    def isnan(self, a: Arr) -> Arr: ...
    def where(self, c: Arr, a: Arr, b: Arr) -> Arr: ...
    def floor(self, a: Arr) -> Arr: ...
    def to_int32(self, a: Arr) -> Arr: ...
    def from_int(self, n: Arr) -> Arr: ...
    def ldexp(self, a: Arr, n: Arr) -> Arr: ...
    def ldexp_f(self, a: Arr, n: Arr) -> Arr: ...
    def frexp(self, a: Arr) -> tuple[Arr, Arr]: ...
    def matmul(self, a: Arr, b: Arr) -> Arr: ...
    def sum(self, x: Arr, dim: int) -> Arr: ...
    def index_sum(self, idx: Arr, g: Arr, n: int) -> Arr: ...
    def rowmax(self, x: Arr) -> Arr: ...
    def first_max(self, w: Arr, m: Arr) -> Arr: ...
    def t(self, x: Arr) -> Arr: ...
    def reshape(self, x: Arr, shape: tuple[int, ...]) -> Arr: ...
    def permute(self, x: Arr, dims: tuple[int, ...]) -> Arr: ...
    def narrow(self, x: Arr, dim: int, start: int, length: int) -> Arr: ...
    def cat(self, xs: list[Arr], dim: int) -> Arr: ...
    def append_ones(self, x: Arr) -> Arr: ...
    def take(self, x: Arr, idx: Arr) -> Arr: ...
    def embed(self, w: Arr, idx: Arr) -> Arr: ...
    def gather(self, x: Arr, labels: Arr) -> Arr: ...
    def onehot(self, labels: Arr, n: int, like: Arr) -> Arr: ...


class TorchBackend:
    """The torch implementation of the backend interface (any device)."""

    def __init__(self) -> None:
        self._maps: dict[tuple[str, tuple[int, ...], torch.device], Tensor] = {}
        self._map_ids: set[int] = set()  # the maps above, which are kept alive (so an id names one map)
        self._takes: dict[tuple[int, int], Tensor] = {}  # (id of a map, source size) -> its index for `take`
        self._ones: dict[tuple[int, torch.device], Tensor] = {}

    def const(self, v: float, like: Tensor) -> Tensor:
        return P.const(v, like.device)

    def zeros(self, shape: tuple[int, ...], like: Tensor) -> Tensor:
        return torch.zeros(shape, dtype=torch.float32, device=like.device)

    def index_map(self, kind: str, params: tuple[int, ...], like: Tensor) -> Tensor:
        key = (kind, params, like.device)
        t = self._maps.get(key)
        if t is None:
            t = torch.from_numpy(np.array(index_map(kind, params))).to(like.device)
            self._maps[key] = t
            self._map_ids.add(id(t))
        return t

    # Plain torch kernels are the primitives themselves (the P.* versions add a dtype check only);
    # binding them directly keeps the per-op Python overhead down.
    add = staticmethod(torch.add)
    sub = staticmethod(torch.sub)
    mul = staticmethod(torch.mul)
    div = staticmethod(torch.div)
    sqrt = staticmethod(P.sqrt)  # not torch.sqrt: see primitives.sqrt
    neg = staticmethod(torch.neg)
    abs = staticmethod(torch.abs)
    maximum = staticmethod(P.maximum)
    minimum = staticmethod(P.minimum)
    clamp = staticmethod(P.clamp)
    lt = staticmethod(torch.lt)
    gt = staticmethod(torch.gt)
    eq = staticmethod(torch.eq)
    isnan = staticmethod(torch.isnan)
    where = staticmethod(torch.where)
    floor = staticmethod(torch.floor)
    to_int32 = staticmethod(P.to_int32)
    from_int = staticmethod(P.from_int)
    ldexp = staticmethod(P.ldexp)
    ldexp_f = staticmethod(P.ldexp_f)
    frexp = staticmethod(P.frexp)
    matmul = staticmethod(repro_matmul)
    sum = staticmethod(repro_sum)
    index_sum = staticmethod(repro_index_sum)

    def rowmax(self, x: Tensor) -> Tensor:
        """Max along the last dim, keepdim, then + 0.0: NaN if any NaN; a zero maximum is returned as +0.
        (A set maximum is order-free except for the sign of zero, which the + 0.0 removes.)"""
        return torch.add(torch.amax(x, dim=-1, keepdim=True), P.const(0.0, x.device))

    def first_max(self, w: Tensor, m: Tensor) -> Tensor:
        """Bool (N, k): True at the first column j with w[i, j] == m[i] (column 0 if there is none)."""
        first = torch.argmax(torch.eq(w, m).to(torch.int32), dim=1, keepdim=True)  # first occurrence
        return torch.zeros(w.shape, dtype=torch.bool, device=w.device).scatter_(1, first, True)

    def t(self, x: Tensor) -> Tensor:
        return x.transpose(-2, -1)

    def reshape(self, x: Tensor, shape: tuple[int, ...]) -> Tensor:
        return x.reshape(shape)

    def permute(self, x: Tensor, dims: tuple[int, ...]) -> Tensor:
        return x.permute(dims)

    def narrow(self, x: Tensor, dim: int, start: int, length: int) -> Tensor:
        return x.narrow(dim, start, length)

    def cat(self, xs: list[Tensor], dim: int) -> Tensor:
        return torch.cat(xs, dim)

    def append_ones(self, x: Tensor) -> Tensor:
        key = (x.shape[0], x.device)
        ones = self._ones.get(key)
        if ones is None:
            ones = torch.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)
            self._ones[key] = ones
        return torch.cat([x, ones], dim=1)

    def take(self, x: Tensor, idx: Tensor) -> Tensor:
        """x.flat[idx], with -1 giving +0 (a zero appended at the end of x.flat).  The gather is one index_select
        with -1 pointing at that zero (three times faster than advanced indexing for a convolution's im2col);
        for the backend's own index maps that flat index is made once per source size."""
        key = (id(idx), x.numel())  # only live maps are ever stored, so their ids are not reused
        flat = self._takes.get(key)
        if flat is None:
            flat = torch.where(idx < 0, key[1], idx).reshape(-1)
            if id(idx) in self._map_ids:
                self._takes[key] = flat
        return torch.index_select(torch.cat([x.reshape(-1), P.const(0.0, x.device).view(1)]), 0, flat).view(idx.shape)

    def embed(self, w: Tensor, idx: Tensor) -> Tensor:
        """Rows of the 2-D w at the 1-D integer ids idx."""
        return torch.index_select(w, 0, idx)

    def gather(self, x: Tensor, labels: Tensor) -> Tensor:
        return torch.gather(x, 1, labels.view(-1, 1).to(torch.int64))

    def onehot(self, labels: Tensor, n: int, like: Tensor) -> Tensor:
        z = torch.zeros(labels.shape[0], n, dtype=torch.float32, device=like.device)
        return z.scatter_(1, labels.view(-1, 1).to(torch.int64), 1.0)


TORCH: Backend = cast(Backend, TorchBackend())  # torch kernels bound directly; see above
