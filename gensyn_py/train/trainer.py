"""The Trainer: runs a work unit's steps bit-exactly and exposes its full state.

State covers model, optimizer, RNG and data cursor, so loading any
checkpoint and continuing gives the same bits as never having stopped.
The step itself is the job of a step engine (``train/engine.py``): mode
`exact` trains with PyTorch's own kernels under deterministic settings
(``train/exact_step.py``: same bits on the same hardware and software); mode
`repro` runs the step as a repro program (``train/repro_step.py``: same bits
on any device, thread count or BLAS). Both keep the same state layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.errors import TrainingError
from gensyn_py.train.data import Dataset, batch_indices, shard_indices, to_tensors
from gensyn_py.train.schedule import lr_at

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.engine import StepEngine
    from gensyn_py.train.spec import JobSpec

BATCH_PREFETCH = 64  # steps whose batch indices are derived together

StepCallback = Callable[[int, int, float], None]  # (step, total, loss)
CheckpointCallback = Callable[[int, "Trainer"], None]  # (step, trainer)


def init_weights(spec: JobSpec) -> dict[str, torch.Tensor]:
    """The round-0 global model: the registry's init under a generator seeded by the job seed, or an ONNX
    model's own initial weights."""
    from gensyn_py.train.global_rng import seeded
    from gensyn_py.train.models import build_for

    with seeded(spec.seed):  # no other thread's draws in between (global_rng.py)
        model = build_for(spec)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


class Trainer:
    """Trains shard `shard` of round `round_` from the round's global weights."""

    def __init__(
        self,
        spec: JobSpec,
        dataset: Dataset,
        round_: int = 0,
        shard: int = 0,
        device: str | None = None,
        global_weights: Mapping[str, torch.Tensor] | None = None,
    ) -> None:
        """`global_weights`: the model weights to start from (None: the spec's seeded init), with the optimizer
        state to start with as `optim/*` entries where the spec carries it across rounds."""
        import torch

        from gensyn_py.train.allocator import keep_freed_memory
        from gensyn_py.train.determinism import configure_exact, pick_device
        from gensyn_py.train.global_rng import GLOBAL_RNG
        from gensyn_py.train.models import build_for

        if not 0 <= round_ < spec.rounds:
            raise TrainingError(f"round {round_} out of range for {spec.rounds} rounds")
        configure_exact(spec.threads)
        keep_freed_memory()
        self.spec = spec
        self.dataset = dataset
        self.round = round_
        self.shard = shard
        self.device = pick_device(device)
        self.shard_idx = shard_indices(dataset.num_examples, spec.shards, shard, spec.seed)
        self.step = 0
        self._data: tuple[torch.Tensor, torch.Tensor] | None = None
        self._ahead: dict[int, torch.Tensor] = {}  # batch indices derived ahead, by step
        self.generator = torch.Generator().manual_seed(_unit_seed(spec.seed, round_, shard))
        with GLOBAL_RNG:  # the build draws from torch's default generator: not while another thread seeds it
            self.model = build_for(spec, repro=spec.mode == "repro")
        start = dict(global_weights) if global_weights is not None else init_weights(spec)
        # A carried inner optimizer state (`aggregation.inner_state = carry`) comes as optim/* entries.
        optim = {k: start.pop(k) for k in [k for k in start if k.startswith("optim/")]}
        self.model.load_state_dict(start)
        self.model.to(self.device)
        self.engine = self.make_engine()
        if optim:
            try:
                self.engine.load_optim_state(optim)
            except (KeyError, ValueError, TypeError, RuntimeError) as e:
                raise TrainingError(f"carried optimizer state does not fit this model: {_first_line(e)}") from None

    def make_engine(self) -> StepEngine:
        """The step engine of the spec's mode (a subclass may supply another, as the cheat library does)."""
        from gensyn_py.train.engine import make_engine

        return make_engine(self.model, self.spec, self.device)

    # ---- one step -------------------------------------------------------------------------

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        from gensyn_py.train.chunks import ChunkedDataset  # here: pydantic is not worth importing for every trainer

        if isinstance(self.dataset, ChunkedDataset):  # gathered per step: only the chunks the steps read are fetched
            s = self.spec
            idx = batch_indices(self.shard_idx, s.batch_size, s.seed, self.round, self.shard, step)
            return to_tensors(self.dataset, idx, self.device)
        if self._data is None:
            self._data = to_tensors(self.dataset, np.arange(self.dataset.num_examples), self.device)
        sel = self._ahead.pop(step, None)
        if sel is None:
            # The same pure function of (seed, round, shard, step) (the sampler of batch_sampler.py),
            # derived for the next steps in one loop: the hashing code stays hot instead of running cold after
            # every step's matmuls.
            s = self.spec
            last = max(step + 1, min(step + BATCH_PREFETCH, s.steps_per_unit))
            self._ahead = {
                t: torch.from_numpy(batch_indices(self.shard_idx, s.batch_size, s.seed, self.round, self.shard, t))
                .to(self.device)
                for t in range(step, last)
            }
            sel = self._ahead.pop(step)
        return self._data[0].index_select(0, sel), self._data[1].index_select(0, sel)

    def learning_rate(self, step: int) -> float:
        return lr_at(self.spec, self.round * self.spec.steps_per_unit + step)

    def train_step(self) -> float:
        """One optimizer step; returns the loss as a float32 value."""
        if self.step >= self.spec.steps_per_unit:
            raise TrainingError(f"unit already ran all {self.spec.steps_per_unit} steps")
        x, y = self.batch(self.step)
        loss = self.engine.step(x, y, self.learning_rate(self.step))
        self.step += 1
        return loss

    def run(
        self,
        num_steps: int,
        on_step: StepCallback | None = None,
        on_checkpoint: CheckpointCallback | None = None,
        bar: bool = False,
    ) -> list[float]:
        """Run `num_steps` steps; call `on_checkpoint` at every multiple of the interval (start included)."""
        k = self.spec.checkpoint_interval
        end = self.step + num_steps
        losses: list[float] = []
        progress = _bar(num_steps) if bar else None
        if on_checkpoint is not None and self.step % k == 0:
            on_checkpoint(self.step, self)
        while self.step < end:
            losses.append(self.train_step())
            if on_step is not None:
                on_step(self.step, end, losses[-1])
            if progress is not None:
                progress.update(1)
            if on_checkpoint is not None and self.step % k == 0:
                on_checkpoint(self.step, self)
        if progress is not None:
            progress.close()
        return losses

    # ---- state --------------------------------------------------------------------------

    def state_dict(self, into: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        """Flat, CPU, float32 state: model/*, optim/<param>/<key>, rng (uint8), cursor (int64). Every tensor is a
        copy: on CPU a plain ``to`` would return the live parameter, which the next step changes in place. `into`:
        an older snapshot nobody reads any more, whose float32 tensors take the copies where they fit
        (`train/snapshot.py`)."""
        import torch

        from gensyn_py.train.snapshot import copied

        state: dict[str, torch.Tensor] = {}
        for name, t in self.model.state_dict().items():
            state[f"model/{name}"] = copied(t, f"model/{name}", into)
        state.update(self.engine.optim_state(into))
        state["rng"] = self.generator.get_state().clone()
        state["cursor"] = torch.tensor([self.round, self.shard, self.step], dtype=torch.int64)
        return state

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore a state from `state_dict()`; the cursor must name this unit.

        A state that does not fit this unit's layout (a missing or misshapen tensor, a bad cursor or RNG
        state) raises `TrainingError`: it came from a checkpoint, so it is the checkpoint's fault."""
        import torch

        try:
            cursor = [int(v) for v in state["cursor"].tolist()]
            steps = self.spec.steps_per_unit
            if len(cursor) != 3 or cursor[:2] != [self.round, self.shard] or not 0 <= cursor[2] <= steps:
                raise TrainingError(f"state cursor {cursor} does not name a step of round/shard "
                                    f"{[self.round, self.shard]}")
            model_sd = {k[len("model/"):]: v for k, v in state.items() if k.startswith("model/")}
            self.model.load_state_dict(model_sd)
            self.engine.load_optim_state({k: v for k, v in state.items() if k.startswith("optim/")})
            self.generator.set_state(state["rng"].to(torch.uint8).clone())
        except torch.OutOfMemoryError:
            raise  # this node's own trouble, not the state's
        except (KeyError, IndexError, ValueError, TypeError, RuntimeError) as e:
            raise TrainingError(f"state does not fit this unit: {_first_line(e)}") from None
        self.step = cursor[2]

    def weights(self) -> dict[str, torch.Tensor]:
        import torch

        return {k: v.detach().to("cpu", torch.float32).clone() for k, v in self.model.state_dict().items()}


def _unit_seed(seed: int, round_: int, shard: int) -> int:
    ss = np.random.SeedSequence([seed, round_, shard])
    return int(ss.generate_state(2, dtype=np.uint32).astype(np.uint64).view(np.uint64)[0] & ((1 << 63) - 1))


def _bar(total: int):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, unit="step", leave=False)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    return line if len(line) <= 300 else line[:297] + "..."
