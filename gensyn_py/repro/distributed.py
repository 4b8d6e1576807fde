"""A repro step split data-parallel over the processes of a `torch.distributed` group, bit-identical to the
step on one device whatever the world size.

Each rank holds an equal, contiguous share of the batch's rows (samples; a language model's rows are a
sample's positions, so they stay together).  Everything a step computes per row is local.  The reductions
over rows are exactly where a split could change a bit, and the repro rules make them order-free:

- `sum(x, 0)` (a loss mean, bias and layer-norm gradients), a weight gradient `t(gy) @ x` (the only 2-D
  matmuls whose first operand is a transpose), and `index_sum` (embedding gradients) align every term to
  the block exponent of its whole row or column, add the aligned integers exactly, and round once
  (docs/repro.md section 2).  A rank takes the block exponents over all ranks (an all-reduce of the
  largest exponent field, MAX), aligns its own terms to them, sums its integers exactly, and the exact
  integer sums are added across ranks (an all-reduce SUM in int64, or in float64 where every partial sum
  is an integer multiple of the unit below 2**53), then rounded once: the same integers and the same single
  rounding as on one device.
- A mean divides by the whole batch's row count (`batch_rows`), not the rank's.
- Non-finite terms take the rule's slow path on the whole operands (gathered from every rank).

The gloo backend runs it on CPUs (tests), NCCL on GPUs.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from gensyn_py.repro.backend import TorchBackend
from gensyn_py.repro.crt_matmul import round_int
from gensyn_py.repro.matmul import _unit, exact_integers, repro_index_sum, repro_matmul, repro_sum

F32 = torch.float32
F64 = torch.float64
I32 = torch.int32
I64 = torch.int64
MASK = 0x7F800000
MAGIC = 1.5 * 2.0**29


def world() -> tuple[int, int]:
    """(rank, world size) of the default process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def rows_of(n: int, rank: int, size: int) -> tuple[int, int]:
    """The rows [lo, hi) of an n-row batch that `rank` holds (equal shares; n must divide evenly)."""
    if n % size:
        raise ValueError(f"a batch of {n} rows does not split evenly over {size} processes")
    share = n // size
    return rank * share, (rank + 1) * share


class DataParallelBackend(TorchBackend):
    """The torch backend for one rank's share of a repro step (see the module docstring)."""

    def __init__(self, group: Any = None) -> None:
        super().__init__()
        self.group = group
        self.size = dist.get_world_size(group)
        self._transposes: dict[int, Tensor] = {}  # this step's transposes (kept alive, so ids stay unique)

    def begin_step(self) -> None:
        self._transposes.clear()

    def batch_rows(self, x: Tensor) -> int:
        return int(x.shape[0]) * self.size

    def t(self, x: Tensor) -> Tensor:
        out = x.transpose(-2, -1)
        if x.dim() == 2:
            self._transposes[id(out)] = out
        return out

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        if a.dim() == 2 and self._transposes.get(id(a)) is a:
            return self._rows_matmul(a, b)
        return repro_matmul(a, b)

    def sum(self, x: Tensor, dim: int) -> Tensor:
        return self._rows_sum(x) if dim == 0 else repro_sum(x, dim)

    def index_sum(self, idx: Tensor, g: Tensor, n: int) -> Tensor:
        members = torch.eq(idx.view(1, -1), torch.arange(n, device=g.device).view(-1, 1))
        r, c = self._aligned(g, 0)
        if not bool(torch.isfinite(c).all()):
            return repro_index_sum(self._gather(idx, 0), self._gather(g, 0), n)
        return self._exact_float_sum(torch.mm(members.double(), r))

    # ---- the reductions over rows ----

    def _aligned(self, x: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """x rounded to its block units, the blocks taken along `dim` over every rank (`matmul._rounded` with
        an all-reduced block exponent), and c = 1.5 * 2**52 * unit per block."""
        p = torch.amax(torch.bitwise_and(x.view(I32), MASK), dim=dim, keepdim=True)
        dist.all_reduce(p, dist.ReduceOp.MAX, group=self.group)
        c = torch.mul(p.view(F32).double(), MAGIC)
        return torch.sub(torch.add(x, c), c), c

    def _exact_float_sum(self, s: Tensor) -> Tensor:
        """Sum over ranks of float64 integer multiples of a unit, each partial sum below 2**53 units (exact in
        any order), rounded once to float32 (+ 0.0: a zero sum is +0)."""
        dist.all_reduce(s, dist.ReduceOp.SUM, group=self.group)
        return torch.add(s, 0.0).float()

    def _rows_sum(self, x: Tensor) -> Tensor:
        r, c = self._aligned(x, 0)
        if not bool(torch.isfinite(c).all()):
            return repro_sum(self._gather(x, 0), 0)
        return self._exact_float_sum(torch.sum(r, dim=0, keepdim=True))

    def _rows_matmul(self, a: Tensor, b: Tensor) -> Tensor:
        """a @ b with the contraction over the batch rows (a = t(gy)): local exact integer sums, added in
        int64 across ranks, rounded once."""
        ra, ca = self._aligned(a, -1)
        rb, cb = self._aligned(b, -2)
        if not (bool(torch.isfinite(ca).all()) and bool(torch.isfinite(cb).all())):
            return repro_matmul(self._gather(a, 1), self._gather(b, 0))
        ua, ub = _unit(ca), _unit(cb)
        n = exact_integers(torch.div(ra, ua), torch.div(rb, ub))  # int64, |n| < 2**62
        dist.all_reduce(n, dist.ReduceOp.SUM, group=self.group)
        return round_int(n, ua, ub)

    def _gather(self, x: Tensor, dim: int) -> Tensor:
        """Every rank's share of x, concatenated along `dim` in rank order (the whole operand)."""
        parts = [torch.empty_like(x) for _ in range(self.size)]
        dist.all_gather(parts, x.contiguous(), group=self.group)
        return torch.cat(parts, dim)

