"""The step engine: what a `Trainer` delegates one optimizer step and the optimizer's state to.

Two engines share this shape: ``exact_step.ExactStep`` (PyTorch's own kernels and optimizers under
deterministic settings: the same bits on the same replay class) and ``repro_step.ReproStep`` (the step as
one repro program: the same bits on any device). The Trainer owns the model, the data cursor and the RNG;
the engine owns how parameters are updated, so the Trainer has no mode branches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.spec import JobSpec


class StepEngine(Protocol):
    """One optimizer step over the trainer's model, and the optimizer state as flat tensors."""

    def step(self, x: torch.Tensor, y: torch.Tensor, lr: float) -> float:
        """Take one step on the batch (x, y) at learning rate `lr`; return the loss as a float32 value."""
        ...

    def optim_state(self, into: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """``optim/<param>/<key>`` entries, CPU float32 copies (none before the first step), into `into`'s tensors
        where they fit (an older snapshot nobody reads any more: `train/snapshot.py`)."""
        ...

    def load_optim_state(self, entries: Mapping[str, torch.Tensor]) -> None:
        """Replace the optimizer state with `entries` (as `optim_state` returns them)."""
        ...


def make_engine(model: torch.nn.Module, spec: JobSpec, device: str) -> StepEngine:
    """The engine of the spec's reproducibility mode."""
    if spec.mode == "repro":
        from gensyn_py.train.repro_step import ReproStep

        return ReproStep(model, spec, device)
    from gensyn_py.train.exact_step import ExactStep

    return ExactStep(model, spec, device)
