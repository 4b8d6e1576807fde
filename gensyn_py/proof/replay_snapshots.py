"""Cheap copies of a repro trainer's state after each step of a replay (`proof/segment_side.py`).

``Trainer.state_dict()`` walks the module and copies tensor by tensor: for the demo's small model a fifth of a
step's time, paid on every step a dispute game replays. These snapshots copy the repro engine's flat parameter and
optimizer vectors, the RNG state and the step instead, and lay them out as ``canonical_arrays(state_dict())`` once
the replay is done. They are used only where that layout is checked equal, byte for byte, at the replay's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gensyn_py.train.trainer import Trainer

_Shot = tuple["np.ndarray[Any, Any]", dict[str, "np.ndarray[Any, Any]"], "np.ndarray[Any, Any]", int]


class Snapshots:
    """A repro trainer's state after each step of a replay, taken cheaply (copies of its engine's flat parameter and
    optimizer vectors, its RNG state and its step) and laid out as ``canonical_arrays(trainer.state_dict())`` once
    the replay is done: ``state_dict()`` walks the module and copies tensor by tensor, a fifth of the time of a
    small model's step, where these copies cost a fiftieth."""

    def __init__(self, trainer: Trainer) -> None:
        from itertools import accumulate

        prog = trainer.engine.prog  # type: ignore[attr-defined]  # a ReproStep (``of``)
        self.names, self.shapes = prog.names, prog.shapes
        self.at = [0, *accumulate(prog.numels)]
        self.round, self.shard = trainer.round, trainer.shard

    @classmethod
    def of(cls, trainer: Trainer, start: Mapping[str, np.ndarray[Any, Any]]) -> Snapshots | None:
        """Snapshots of `trainer` when they lay out its state now (`start`, from ``state_dict()``) exactly, else None
        (another engine, or a model with buffers, whose state the replay takes with ``state_dict()``)."""
        from gensyn_py.train.repro_step import ReproStep

        if not isinstance(trainer.engine, ReproStep):
            return None
        snapshots = cls(trainer)
        try:
            now = snapshots.state(snapshots.take(trainer))
        except (ValueError, TypeError, AttributeError):  # a layout these snapshots do not know
            return None
        same = list(now) == list(start) and all(
            now[k].dtype == start[k].dtype and now[k].shape == start[k].shape and now[k].tobytes() == start[k].tobytes()
            for k in now)
        return snapshots if same else None

    @staticmethod
    def take(trainer: Trainer) -> _Shot:
        import torch

        engine: Any = trainer.engine

        def copied(t: torch.Tensor) -> np.ndarray[Any, Any]:
            return t.detach().to("cpu", torch.float32, copy=True).numpy()

        return (copied(engine.flat), {k: copied(v) for k, v in engine.opt.items()},
                trainer.generator.get_state().numpy(), trainer.step)

    def state(self, shot: _Shot) -> dict[str, np.ndarray[Any, Any]]:
        """A snapshot's state dict, laid out as ``Trainer.state_dict`` (and ``ReproStep.optim_state``) lay it out."""
        flat, opt, rng, step = shot
        out = dict(zip([f"model/{n}" for n in self.names], self._split(flat), strict=True))
        for key, value in sorted(opt.items()):
            parts = self._split(value) if value.ndim == 1 else [value.copy() for _ in self.names]
            out.update(zip([f"optim/{n}/{key}" for n in self.names], parts, strict=True))
        out["rng"] = rng
        out["cursor"] = np.array([self.round, self.shard, step], dtype=np.int64)
        return out

    def _split(self, flat: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
        return [flat[a:b].reshape(s) for a, b, s in zip(self.at[:-1], self.at[1:], self.shapes, strict=True)]
