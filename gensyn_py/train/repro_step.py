"""`repro` mode in the Trainer: the training step as one repro program over a backend.

All parameters live in one flat float32 vector (the module's parameters are views into it) and so does
each optimizer buffer; the whole step (forward, loss, backward on a ``Tape``, optimizer update) is
``train_step(be, program, ...)``, a fixed sequence of backend ops.  ``TORCH`` runs it for training,
``reference.NUMPY`` runs it without torch, and ``proof.trace.TracingBackend`` records it (``proof/step_trace.py``).  The
state dict keeps the exact-mode layout: model/*, optim/<param>/<key>, rng, cursor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from gensyn_py.errors import TrainingError

if TYPE_CHECKING:
    import torch

    from gensyn_py.repro.backend import Backend
    from gensyn_py.repro.distributed import DataParallelBackend
    from gensyn_py.train.spec import JobSpec, OptimizerSpec

FLAT_KEYS = {"sgd": ("momentum_buffer",), "adamw": ("exp_avg", "exp_avg_sq")}
SCALAR_KEYS = {"sgd": (), "adamw": ("step", "beta1_power", "beta2_power")}


@dataclass(frozen=True)
class StepProgram:
    """What defines a repro training step besides its inputs: the network, the parameter layout and the
    optimizer."""

    forward: Callable[[Any, Mapping[str, Any], Any], Any]  # (executor, params, x) -> logits
    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    optimizer: OptimizerSpec

    @property
    def numels(self) -> tuple[int, ...]:
        return tuple(math.prod(s) for s in self.shapes)


def program_for(spec: JobSpec, model: torch.nn.Module) -> StepProgram:
    from gensyn_py.train.models import repro_forward_of

    named = list(model.named_parameters())
    return StepProgram(
        repro_forward_of(spec),
        tuple(n for n, _ in named),
        tuple(tuple(p.shape) for _, p in named),
        spec.optimizer,
    )


def unflatten(be: Backend, prog: StepProgram, flat: Any) -> dict[str, Any]:
    """Per-parameter views of a flat vector (narrow + reshape)."""
    out: dict[str, Any] = {}
    off = 0
    for name, shape, n in zip(prog.names, prog.shapes, prog.numels, strict=True):
        out[name] = be.reshape(be.narrow(flat, 0, off, n), shape)
        off += n
    return out


def loss_of(ex: Any, prog: StepProgram, params: Mapping[str, Any], x: Any, y: Any) -> Any:
    """Cross-entropy of the network's output on (x, y); LM outputs (B, T, V) are taken as (B*T, V)."""
    out = prog.forward(ex, params, x)
    if len(out.shape) == 3:
        out = ex.op("reshape", out, shape=(-1, out.shape[-1]))
    return ex.op("cross_entropy", out, ex.be.reshape(y, (-1,)))


def train_step(
    be: Backend, prog: StepProgram, flat: Any, opt: Mapping[str, Any], x: Any, y: Any, lr: float | Any,
    kept: dict[str, Any] | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """One step: forward, loss, backward (tape), optimizer update.  Returns (loss (1, 1), flat, opt).
    `kept`: the caller owns flat and opt's tensors, which the update may then overwrite (``ops.adamw``), and keeps
    this dict between its steps for buffers a step reuses (the flat gradient, which AdamW does not retain)."""
    from gensyn_py.repro.tape import Tape

    tape = Tape(be)
    params = {k: tape.leaf(v, requires_grad=True, name=k) for k, v in unflatten(be, prog, flat).items()}
    loss = loss_of(tape, prog, params, x, y)
    grads = tape.backward(loss)
    g = flat_grads(be, [grads[k] for k in prog.names], kept if prog.optimizer.name == "adamw" else None)
    flat, new_opt = update(be, prog.optimizer, flat, g, opt, lr, kept is not None)
    return loss.value, flat, new_opt


def flat_grads(be: Backend, grads: list[Any], kept: dict[str, Any] | None = None) -> Any:
    """The gradients as one flat vector: the cat of their reshapes to (-1,), which every backend runs and the tracer
    records. The torch backend copies each one straight into its place instead: the same bits (data movement only),
    one copy where reshape and cat made two (a weight's gradient is a transposed view; 33 ms of the 10M LM's step).
    Into kept["grad"] where `kept` is given (the last step's vector, which nobody holds: a fresh one of 40 MB costs
    14 ms of page faults)."""
    import torch

    from gensyn_py.repro.backend import TorchBackend

    if not isinstance(be, TorchBackend) or len({(g.dtype, g.device) for g in grads}) != 1:
        return be.cat([be.reshape(g, (-1,)) for g in grads], 0)
    n, dtype, device = sum(g.numel() for g in grads), grads[0].dtype, grads[0].device
    out = None if kept is None else kept.get("grad")
    if out is None or out.numel() != n or out.dtype != dtype or out.device != device:
        out = torch.empty(n, dtype=dtype, device=device)
        if kept is not None:
            kept["grad"] = out
    off = 0
    for g in grads:
        out[off:off + g.numel()].view(g.shape).copy_(g)
        off += g.numel()
    return out


def update(be: Backend, o: OptimizerSpec, p: Any, g: Any, opt: Mapping[str, Any], lr: float | Any,
           in_place: bool = False) -> tuple[Any, dict[str, Any]]:
    """The optimizer update on the flat vectors (see ``repro.ops.sgd`` and ``repro.ops.adamw``).

    AdamW keeps step, beta1**step and beta2**step as float32 running values (step + 1, products by beta)."""
    from gensyn_py.repro import ops as O

    if o.name == "sgd":
        p, buf = O.sgd(be, p, g, opt.get("momentum_buffer"), lr, o.momentum, o.weight_decay)
        return p, ({} if buf is None else {"momentum_buffer": buf})
    one = be.const(1.0, p)
    step = be.add(opt.get("step", be.const(0.0, p)), one)
    b1t = be.mul(opt.get("beta1_power", one), be.const(o.beta1, p))
    b2t = be.mul(opt.get("beta2_power", one), be.const(o.beta2, p))
    zero = None if "exp_avg" in opt else be.zeros(tuple(p.shape), p)
    cfg = O.AdamWConfig(lr=lr, beta1=o.beta1, beta2=o.beta2, eps=o.eps, weight_decay=o.weight_decay)
    p, m, v = O.adamw(be, p, g, opt.get("exp_avg", zero), opt.get("exp_avg_sq", zero), b1t, b2t, cfg, in_place)
    return p, {"exp_avg": m, "exp_avg_sq": v, "step": step, "beta1_power": b1t, "beta2_power": b2t}


# A registry model's step reduces over batch rows only where `repro.distributed` routes the reduction
# through the group's exact sums. A requester's ONNX graph is not split: its exporter fixes the batch size in
# its shape constants, and its layers' reductions over rows have not been shown to take those routes.
ONE_PROCESS_GRAPHS = ("an ONNX graph trains in one process: its shape constants fix the whole batch, and its "
                      "reductions over rows are not split across a group")


def one_process_reason(spec: JobSpec) -> str | None:
    """Why a repro unit of `spec` must train in one process, or None when it splits over a group."""
    return ONE_PROCESS_GRAPHS if spec.model.onnx is not None else None


class ReproStep:
    """The repro-mode step engine: the flat parameter vector (the module's parameters are views of it) and
    the flat optimizer state."""

    def __init__(self, model: torch.nn.Module, spec: JobSpec, device: str) -> None:
        import torch

        self.prog = program_for(spec, model)
        self.flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(device, torch.float32)
        for p, view in zip(model.parameters(), self.views(self.flat), strict=True):
            p.data = view
        self.opt: dict[str, torch.Tensor] = {}
        self._kept: dict[str, Any] = {}  # buffers train_step reuses from one step to the next
        self._parallel: DataParallelBackend | None = None  # made on the first step in a process group
        self.one_process = one_process_reason(spec)

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        return [v.view(s) for v, s in zip(flat.split(list(self.prog.numels)), self.prog.shapes, strict=True)]

    def step(self, x: torch.Tensor, y: torch.Tensor, lr: float) -> float:
        """One step on the batch (x, y).  In a `torch.distributed` group of several processes (each running
        this same step on the same batch) each takes its share of the rows and the step's reductions over rows
        are exact across the group (`repro.distributed`): every process ends with the state one device gets."""
        import numpy as np
        import torch

        from gensyn_py.repro.unfilled import unfilled_memory

        be, x, y = self._backend(x, y)
        try:
            with torch.no_grad(), unfilled_memory():
                loss, flat, self.opt = train_step(be, self.prog, self.flat, self.opt, x, y, lr, self._kept)
        except ValueError as e:  # a contraction beyond the exact rule's limit, a batch that does not split
            raise TrainingError(f"repro step failed: {e}") from None
        if flat is not self.flat:  # not updated in place (SGD, or no C module)
            self.flat.copy_(flat)  # the module's parameters are views of self.flat
        return float(np.float32(loss.reshape(()).item()))

    def _backend(self, x: torch.Tensor, y: torch.Tensor) -> tuple[Backend, torch.Tensor, torch.Tensor]:
        """The backend for this process and its rows of the batch: all of them on one process."""
        from gensyn_py.repro.backend import TORCH
        from gensyn_py.repro.distributed import DataParallelBackend, rows_of, world

        rank, size = world()
        if size == 1:
            return TORCH, x, y
        if self.one_process is not None:
            raise TrainingError(self.one_process)
        if self._parallel is None:
            self._parallel = DataParallelBackend()
        self._parallel.begin_step()
        try:
            lo, hi = rows_of(int(x.shape[0]), rank, size)
        except ValueError as e:
            raise TrainingError(f"repro step failed: {e}") from None
        return cast("Backend", self._parallel), x[lo:hi], y[lo:hi]

    def optim_state(self, into: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """optim/<param>/<key> entries, like torch's optimizers (none before the first step); copies, into `into`'s
        tensors where they fit (`train/snapshot.py`)."""
        from gensyn_py.train.snapshot import copied

        state: dict[str, torch.Tensor] = {}
        for key, value in sorted(self.opt.items()):
            flat = value.dim() == 1
            parts = self.views(value) if flat else [value] * len(self.prog.names)
            for name, part in zip(self.prog.names, parts, strict=True):
                entry = f"optim/{name}/{key}"
                state[entry] = copied(part, entry, into)
        return state

    def load_optim_state(self, entries: Mapping[str, torch.Tensor]) -> None:
        import torch

        o = self.prog.optimizer.name
        by_key: dict[str, dict[str, torch.Tensor]] = {}
        for key, value in entries.items():
            pname, _, field = key[len("optim/"):].rpartition("/")
            if pname not in self.prog.names or field not in FLAT_KEYS[o] + SCALAR_KEYS[o]:
                raise TrainingError(f"unexpected optimizer state {key!r} in repro mode")
            want = tuple(self.prog.shapes[self.prog.names.index(pname)])
            if (tuple(value.shape) != want) if field in FLAT_KEYS[o] else (value.numel() != 1):
                raise TrainingError(f"optimizer state {key!r} has shape {tuple(value.shape)}, expected {want}")
            by_key.setdefault(field, {})[pname] = value
        opt: dict[str, torch.Tensor] = {}
        for field, parts in by_key.items():
            if set(parts) != set(self.prog.names):
                raise TrainingError(f"optimizer state {field!r} does not cover every parameter")
            if field in FLAT_KEYS[o]:
                opt[field] = torch.cat([parts[n].reshape(-1) for n in self.prog.names]).to(self.flat.device)
            else:
                opt[field] = parts[self.prog.names[0]].clone().reshape(()).to(self.flat.device)
        self.opt = opt
