"""The op trace of one repro training step: what a dispute narrows down to a single operation.

The trace's named inputs and outputs are the checkpoint's own tensors, by their state keys
(``model/<param>``, ``optim/<param>/<key>``; ``proof/state.py``): the step concatenates the parameters into
the flat vector ``train_step`` works on (``cat`` of ``reshape``s) and cuts the results back into per-parameter
tensors (``narrow`` and ``reshape``, as ``unflatten``).  So an input's leaf is the state tree's entry of the
same key at step t, and an output's tensor root the entry at t + 1: a dispute binds the trace to the
committed state roots with Merkle paths alone.  The step's other inputs are the batch (``x``, ``y``) and
its learning rate (``lr``, a float32 scalar): the schedule's value is an input, not an attribute, so every
step of a unit but its first (which has no optimizer state yet) runs one program.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gensyn_py.errors import TrainingError
from gensyn_py.proof.trace import Trace, TracingBackend

if TYPE_CHECKING:
    from gensyn_py.train.repro_step import ReproStep
    from gensyn_py.train.trainer import Trainer


def trace_step(trainer: Trainer, tracer: TracingBackend | None = None) -> Trace:
    """Record the trainer's next step (without taking it) as a trace: inputs are the state's parameters and
    optimizer state by their state keys, the batch (``x``, ``y``) and ``lr``; outputs the loss and the next state's
    parameters and optimizer state by the same keys. `tracer` (a fresh ``TracingBackend`` over the torch backend
    by default) records it: a subclass may change what an op computes, as a cheat does."""
    import torch

    from gensyn_py.train.repro_step import ReproStep

    rt = trainer.engine
    if not isinstance(rt, ReproStep):
        raise TrainingError("trace_step needs a trainer in repro mode")
    # As the engine's own step: the repro step runs its own backward (`repro.tape`), and torch's autograd
    # bookkeeping would cost every traced op a few microseconds (a quarter of tracing a small step).
    with torch.no_grad():
        return _trace(trainer, rt, tracer)


def _trace(trainer: Trainer, rt: ReproStep, tracer: TracingBackend | None) -> Trace:
    from gensyn_py.repro.backend import TORCH
    from gensyn_py.train.repro_step import FLAT_KEYS, train_step, unflatten

    prog = rt.prog
    flat_keys = FLAT_KEYS[prog.optimizer.name]
    x, y = trainer.batch(trainer.step)
    # state_dict() is on CPU (what a checkpoint holds); the step runs where the batch is (a CUDA trainer)
    state = {k: v.to(x.device) for k, v in trainer.state_dict().items() if k.startswith(("model/", "optim/"))}
    tb = TracingBackend(TORCH) if tracer is None else tracer
    be = tb.backend

    def flat_of(field: str) -> Any:
        key = "model/{}" if field == "" else "optim/{}/" + field
        return be.cat([be.reshape(tb.input(key.format(n), state[key.format(n)]), (-1,)) for n in prog.names], 0)

    flat = flat_of("")
    # A scalar (AdamW's step and powers) is stored once per parameter, all equal: the step reads the first.
    first = "optim/" + prog.names[0] + "/{}"
    opt = {k: flat_of(k) if k in flat_keys else tb.input(first.format(k), state[first.format(k)])
           for k in sorted(rt.opt)}
    lr = tb.input("lr", TORCH.const(trainer.learning_rate(trainer.step), x))
    loss, flat, new_opt = train_step(be, prog, flat, opt, tb.input("x", x), tb.input("y", y), lr)
    tb.output("loss", loss)
    for n, v in unflatten(be, prog, flat).items():
        tb.output(f"model/{n}", v)
    for k, v in sorted(new_opt.items()):
        parts = unflatten(be, prog, v) if k in flat_keys else dict.fromkeys(prog.names, v)
        for n, part in parts.items():
            tb.output(f"optim/{n}/{k}", part)
    return tb.trace()
