"""A library of dishonest solvers, for tests and benchmarks.

Each cheat produces a commitment that looks well-formed (the manifest parses,
the root matches the manifest) but whose work differs from the honest unit in
a way replay must catch. `CHEATS` maps a name to a function with the same
signature as the honest `solve`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.proof.commitment import Manifest, UnitCommitment
from gensyn_py.proof.state import encode_state, state_hash_of_bytes
from gensyn_py.proof.unit import commit_segments, publish
from gensyn_py.train.engine import StepEngine
from gensyn_py.train.exact_step import ExactStep
from gensyn_py.train.trainer import Trainer

if TYPE_CHECKING:
    import torch

    from gensyn_py.proof.segment_side import Flip
    from gensyn_py.proof.trace import Trace
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec

Solve = Callable[["JobSpec", "Dataset", "ContentStore", int, int, int], UnitCommitment]
FAKED_SEGMENT = 1  # cheats that fake part of the work fake this segment (and after)


def solve(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int, shard: int,
          global_weights: Mapping[str, torch.Tensor] | None = None) -> UnitCommitment:
    """The honest solver."""
    return commit_segments(Trainer(spec, dataset, round_, shard, "cpu", global_weights), store, job_id)


class _SkippingTrainer(Trainer):
    """Claims every step but skips the update on the steps `skip(step)` selects."""

    def __init__(self, skip: Callable[[int], bool], *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._skip = skip
        self._last = 0.0

    def train_step(self) -> float:
        if self._skip(self.step):
            self.step += 1
            return self._last
        self._last = super().train_step()
        return self._last


def skipped_steps(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                  shard: int) -> UnitCommitment:
    """Skips one step in the faked segment."""
    first = FAKED_SEGMENT * spec.checkpoint_interval
    t = _SkippingTrainer(lambda s: s == first, spec, dataset, round_, shard, "cpu")
    return commit_segments(t, store, job_id)


def fewer_steps(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                shard: int) -> UnitCommitment:
    """Does only every other step from the faked segment on."""
    first = FAKED_SEGMENT * spec.checkpoint_interval
    t = _SkippingTrainer(lambda s: s >= first and s % 2 == 1, spec, dataset, round_, shard, "cpu")
    return commit_segments(t, store, job_id)


class _OtherDataTrainer(Trainer):
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if step >= FAKED_SEGMENT * self.spec.checkpoint_interval:
            return super().batch(step + 10_000)  # a different (cheaper to pick) batch
        return super().batch(step)


def other_data(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
               shard: int) -> UnitCommitment:
    """Trains the faked segments on batches other than the seeded ones."""
    return commit_segments(_OtherDataTrainer(spec, dataset, round_, shard, "cpu"), store, job_id)


def noisy_weights(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                  shard: int) -> UnitCommitment:
    """Adds tiny noise to the weights at the end of the faked segment."""
    import torch

    def hook(index: int, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if index != FAKED_SEGMENT + 1:
            return state
        g = torch.Generator().manual_seed(1234)
        return {k: v + 1e-6 * torch.randn(v.shape, generator=g) if k.startswith("model/") else v
                for k, v in state.items()}

    t = Trainer(spec, dataset, round_, shard, "cpu")
    return commit_segments(t, store, job_id, state_hook=hook)


def copied_unit(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                shard: int) -> UnitCommitment:
    """Replays another shard's honest checkpoints and relabels them as this unit."""
    other = (shard + 1) % spec.shards
    honest = solve(spec, dataset, store, job_id, round_, other)
    return publish(replace(honest.manifest, shard=shard), store)


class _LowPrecisionStep(ExactStep):
    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        import torch

        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return super().loss(x, y).float()


class _LowPrecisionTrainer(Trainer):
    """In mode `exact` only: a repro step has no loss to autocast, so it trains honestly there."""

    def make_engine(self) -> StepEngine:
        if self.spec.mode == "repro":
            return super().make_engine()
        return _LowPrecisionStep(self.model, self.spec, self.device)


def low_precision(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                  shard: int) -> UnitCommitment:
    """Computes forward and backward in bfloat16 but claims float32."""
    return commit_segments(_LowPrecisionTrainer(spec, dataset, round_, shard, "cpu"), store, job_id)


class _WrongLrTrainer(Trainer):
    def learning_rate(self, step: int) -> float:
        return 2 * super().learning_rate(step)


def wrong_lr(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
             shard: int) -> UnitCommitment:
    """Trains with twice the specified learning rate, committing under the real spec."""
    return commit_segments(_WrongLrTrainer(spec, dataset, round_, shard, "cpu"), store, job_id)


def tampered_checkpoint(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                        shard: int) -> UnitCommitment:
    """Commits honest hashes but serves altered bytes for the faked segment's start checkpoint."""
    honest = solve(spec, dataset, store, job_id, round_, shard)
    m = honest.manifest
    cids = list(m.checkpoint_cids)
    cids[FAKED_SEGMENT] = store.put(_alter(store.get(cids[FAKED_SEGMENT])))
    return publish(replace(m, checkpoint_cids=tuple(cids)), store)


def uncommitted_checkpoint(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                           shard: int) -> UnitCommitment:
    """Posts the honest root on-chain but a manifest whose checkpoint differs from it."""
    honest = solve(spec, dataset, store, job_id, round_, shard)
    m = honest.manifest
    altered = _alter(store.get(m.checkpoint_cids[FAKED_SEGMENT]))
    cids, hashes = list(m.checkpoint_cids), list(m.state_hashes)
    cids[FAKED_SEGMENT] = store.put(altered)
    hashes[FAKED_SEGMENT] = state_hash_of_bytes(altered)
    fake: Manifest = replace(m, checkpoint_cids=tuple(cids), state_hashes=tuple(hashes))
    published = publish(fake, store)
    return UnitCommitment(honest.checkpoint_root, honest.final_state_hash, published.manifest_cid, fake)


def _misshapen(prefix: str) -> Solve:
    def cheat(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
              shard: int) -> UnitCommitment:
        """Commits (root, hashes and all) a start checkpoint whose first `prefix` tensor has the wrong shape."""
        import torch

        from gensyn_py.proof.state import decode_state

        m = solve(spec, dataset, store, job_id, round_, shard).manifest
        state = decode_state(store.get(m.checkpoint_cids[FAKED_SEGMENT]))
        key = sorted(k for k in state if k.startswith(prefix))[0]
        state[key] = torch.zeros(state[key].numel() + 1, dtype=torch.float32)
        bad = encode_state(state)
        cids, hashes = list(m.checkpoint_cids), list(m.state_hashes)
        cids[FAKED_SEGMENT] = store.put(bad)
        hashes[FAKED_SEGMENT] = state_hash_of_bytes(bad)
        return publish(replace(m, checkpoint_cids=tuple(cids), state_hashes=tuple(hashes)), store)

    return cheat


def _withholding(*, publish_final: bool, publish_manifest: bool) -> Solve:
    def cheat(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
              shard: int) -> UnitCommitment:
        """Trains honestly in a private store and publishes only part of it: the root on-chain is honest, the
        data behind it is not all there (issue 11, attacks 4 and 9), so replay alone never notices."""
        import tempfile

        from gensyn_py.storage.local import LocalStore

        with tempfile.TemporaryDirectory(prefix="withheld-") as private_dir:
            private = LocalStore(private_dir)
            honest = solve(spec, dataset, private, job_id, round_, shard)
            m = honest.manifest
            for cid in dict.fromkeys(m.checkpoint_cids if publish_final else m.checkpoint_cids[:-1]):
                store.put(private.get(cid))
            if publish_manifest:
                store.put(m.to_bytes())
            return honest

    return cheat


def _alter(data: bytes) -> bytes:
    from gensyn_py.proof.state import decode_state

    state = decode_state(data)
    key = sorted(k for k in state if k.startswith("model/"))[0]
    state[key] = state[key].clone()
    state[key].view(-1)[0] += 0.5
    return encode_state(state)


def _flip_step(spec: JobSpec) -> int:
    """The step the `flipped_bit` cheat flips a bit in: the middle of the faked segment."""
    return FAKED_SEGMENT * spec.checkpoint_interval + spec.checkpoint_interval // 2


def bit_flip(spec: JobSpec, dataset: Dataset, round_: int, shard: int) -> Flip:
    """The `flipped_bit` cheat of a unit: bit 22 of the middle element of the largest elementwise output in the
    middle of step `_flip_step` (`segment_side.middle_elementwise`). A pure function of the unit, so the cheating
    daemon defends in the dispute game the very cheat it committed."""
    from gensyn_py.proof.segment_side import Flip, middle_elementwise

    step = _flip_step(spec)
    tr = _traced(spec, dataset, round_, shard, step)
    op = middle_elementwise(tr)
    return Flip(step, op, int(tr.values[op].size) // 2, bit=22)


def sum_flip(spec: JobSpec, dataset: Dataset, round_: int, shard: int) -> Flip:
    """The `wrong_partial_sum` cheat of a unit: in step `_flip_step`, the middle element of the longest matmul
    whose change reaches the next state (a forward product can be clipped away by a ReLU) computed from a partial
    sum off from multiply-add K/3 on (`segment_side.partial_sum_flip`), with the sums the cheating daemon answers a
    dot challenge with."""
    from gensyn_py.proof.segment_side import matmuls, partial_sum_flip

    step = _flip_step(spec)
    return _reaching(spec, dataset, round_, shard, step,
                     lambda tr: (partial_sum_flip(tr, step, op) for op in matmuls(tr)), "matmul")


def row_flip(spec: JobSpec, dataset: Dataset, round_: int, shard: int) -> Flip:
    """The `wrong_row_max` cheat of a unit: in step `_flip_step`, a row maximum (`rowmax`, the softmax's shift) set
    to its row's second largest entry, the first such change that reaches the next state: an entry of the row, so
    the cheating daemon can answer a row challenge with it, and the counter refutes it with the larger one."""
    step = _flip_step(spec)

    def candidates(tr: Trace) -> Iterator[Flip]:
        from gensyn_py.proof.segment_side import Flip

        for i, op in enumerate(tr.ops):
            if op.code != "rowmax":
                continue
            x = tr.values[op.inputs[0]]
            for r, row in enumerate(x.reshape(-1, x.shape[-1])):
                below = np.unique(row[np.isfinite(row)])[:-1]  # ascending: the largest under the maximum last
                if below.size:
                    yield Flip(step, i, r, value=float(below[-1]))

    return _reaching(spec, dataset, round_, shard, step, candidates, "rowmax")


def _reaching(spec: JobSpec, dataset: Dataset, round_: int, shard: int, step: int,
              candidates: Callable[[Trace], Iterable[Flip]], what: str) -> Flip:
    """The first of the `candidates` flips of step `step`'s trace that changes the state after the step (a change
    that rounds away before it reaches the state is no cheat: the state, all that is committed, is honest)."""
    from gensyn_py.proof.segment_side import flipped_step
    from gensyn_py.proof.state import state_hash
    from gensyn_py.proof.step_trace import trace_step

    t = _at_step(spec, dataset, round_, shard, step)
    before = {k: v.clone() for k, v in t.state_dict().items()}  # copies: each try below steps the same trainer
    tr = trace_step(t)

    def after(flip: Flip | None) -> bytes:
        """The state root after the step from `before`, taken honestly or with `flip`."""
        t.load_state_dict(before)
        if flip is None:
            t.train_step()
        else:
            flipped_step(t, flip)
        return state_hash(t.state_dict())

    honest = after(None)
    for flip in candidates(tr):
        if after(flip) != honest:
            return flip
    raise ValueError(f"no {what} of the step reaches the state")


def _traced(spec: JobSpec, dataset: Dataset, round_: int, shard: int, step: int) -> Trace:
    from gensyn_py.proof.step_trace import trace_step

    return trace_step(_at_step(spec, dataset, round_, shard, step))


def _at_step(spec: JobSpec, dataset: Dataset, round_: int, shard: int, step: int) -> Trainer:
    t = Trainer(spec, dataset, round_, shard, "cpu")
    t.run(step)
    return t


FLIPS: dict[str, Callable[[JobSpec, Dataset, int, int], Flip]] = {"flipped_bit": bit_flip,
                                                                   "wrong_partial_sum": sum_flip,
                                                                   "wrong_row_max": row_flip}


class _FlippingTrainer(Trainer):
    """Trains honestly but for step `step`: in repro mode one bit of one traced op's output is flipped there (`flip`;
    everything after follows); an exact step has no trace, so one bit of its first parameter is flipped after it."""

    def __init__(self, flip: Flip | None, step: int, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self._flip, self._at = flip, step

    def train_step(self) -> float:
        import torch

        from gensyn_py.proof.segment_side import flipped_step

        if self.step != self._at:
            return super().train_step()
        if self._flip is not None:
            return flipped_step(self, self._flip)
        loss = super().train_step()
        state = self.state_dict()
        key = next(k for k in sorted(state) if k.startswith("model/"))
        state[key].view(-1).view(torch.int32)[0] ^= 1 << 22
        self.load_state_dict(state)
        return loss


def flipped_bit(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                shard: int, solver: str | None = None) -> UnitCommitment:
    """Flips one bit of one op's output in one step of the faked segment and trains on from the flipped state: a
    repro unit's smallest cheat, which the dispute game narrows to that op. With `solver` its transcripts are bound
    to the committing address as an honest solver's are, so that only the faked segment differs from a replay."""
    return solve_flipped("flipped_bit", spec, dataset, store, job_id, round_, shard, solver)


def wrong_partial_sum(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                      shard: int, solver: str | None = None) -> UnitCommitment:
    """Computes one element of one matmul of one step of the faked segment from a wrong partial sum, and trains on
    from there: a cheat the dispute game narrows to one integer multiply-add (bound to `solver` as `flipped_bit`)."""
    return solve_flipped("wrong_partial_sum", spec, dataset, store, job_id, round_, shard, solver)


def wrong_row_max(spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                  shard: int, solver: str | None = None) -> UnitCommitment:
    """Takes a row's second largest entry for its maximum in one step of the faked segment, and trains on from there:
    a cheat the dispute game decides with the row's witnesses (bound to `solver` as `flipped_bit`)."""
    return solve_flipped("wrong_row_max", spec, dataset, store, job_id, round_, shard, solver)


def solve_flipped(cheat: str, spec: JobSpec, dataset: Dataset, store: ContentStore, job_id: int, round_: int,
                  shard: int, solver: str | None) -> UnitCommitment:
    """The work of the `FLIPS` cheat `cheat`: trained honestly but for its flip, committed as `solver`'s."""
    flip = FLIPS[cheat](spec, dataset, round_, shard) if spec.mode == "repro" else None
    return commit_segments(_FlippingTrainer(flip, _flip_step(spec), spec, dataset, round_, shard, "cpu"), store, job_id,
                           solver=solver)


CHEATS: dict[str, Solve] = {
    "flipped_bit": flipped_bit,
    "wrong_partial_sum": wrong_partial_sum,
    "wrong_row_max": wrong_row_max,
    "skipped_steps": skipped_steps,
    "fewer_steps": fewer_steps,
    "other_data": other_data,
    "noisy_weights": noisy_weights,
    "copied_unit": copied_unit,
    "low_precision": low_precision,
    "wrong_lr": wrong_lr,
    "tampered_checkpoint": tampered_checkpoint,
    "uncommitted_checkpoint": uncommitted_checkpoint,
    "misshapen_weights": _misshapen("model/"),

    "misshapen_optimizer_state": _misshapen("optim/"),
}

# Cheats that replay cannot catch (the work is honest), only the availability checks: the data is withheld.
WITHHOLDING: dict[str, Solve] = {
    "withheld_final_checkpoint": _withholding(publish_final=False, publish_manifest=True),
    "withheld_manifest": _withholding(publish_final=True, publish_manifest=False),
}
