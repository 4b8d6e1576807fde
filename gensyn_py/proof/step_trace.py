"""The op trace of one repro training step: what a dispute narrows down to a single operation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gensyn_py.errors import TrainingError
from gensyn_py.proof.trace import Trace, TracingBackend

if TYPE_CHECKING:
    from gensyn_py.train.trainer import Trainer


def trace_step(trainer: Trainer) -> Trace:
    """Record the trainer's next step (without taking it) as a trace: inputs are the flat parameters,
    the optimizer state, the batch and the learning rate; outputs the loss, parameters and state."""
    from gensyn_py.repro.backend import TORCH
    from gensyn_py.train.repro_step import ReproStep, train_step

    rt = trainer.engine
    if not isinstance(rt, ReproStep):
        raise TrainingError("trace_step needs a trainer in repro mode")
    x, y = trainer.batch(trainer.step)
    tb = TracingBackend(TORCH)
    flat = tb.input("params", rt.flat)
    opt = {k: tb.input(f"optim/{k}", v) for k, v in sorted(rt.opt.items())}
    loss, flat, new_opt = train_step(tb.backend, rt.prog, flat, opt, tb.input("x", x), tb.input("y", y),
                                     trainer.learning_rate(trainer.step))
    tb.output("loss", loss)
    tb.output("params", flat)
    for k, v in sorted(new_opt.items()):
        tb.output(f"optim/{k}", v)
    return tb.trace()
