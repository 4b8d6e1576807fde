"""Proof-generation overhead: a plain PyTorch loop vs our Trainer with checkpoint commitments.

Both sides do the same training: the same model and initial weights, the same
optimizer and learning rate at every step, the same batches in the same order
(the bench checks their losses agree bit for bit), under the same kernels and
thread count. The plain loop gets its batch indices and learning rates
precomputed outside its timing, so it is the cheapest honest baseline: every
per-step cost of deriving batches from the job seed counts as proof overhead.

The two alternate every segment of k steps within one unit, so load changes on
the machine hit both alike: in the middle of each segment our side pauses, and
the plain loop runs its next k steps. Before our clock stops, the bench waits
until the segment's checkpoint is in the store, so checkpoint work running behind
the training is always charged to our side and never overlaps the plain loop.
Each of our blocks thus holds k steps and one checkpoint (a snapshot taken on the
training thread; encoded, hashed and written with fsync to a fresh store by the
writer, behind the training unless --inline); the first and last half-segments form one
block holding k steps, two checkpoints and the manifest. Per repetition (one
whole unit; one warm-up repetition first) the figures are the per-segment time
ratios and the whole-unit ratio; we report medians. Both sides run with the
job spec's torch threads (--threads, default 1 as in a spec); where that leaves a
core spare, the checkpoint writer runs on it. Prints one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._trainjob import DEFAULT_INTERVAL, bench_job
from gensyn_py.storage.local import LocalStore

if TYPE_CHECKING:
    from gensyn_py.proof.commitment import UnitCommitment
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec


class PlainLoop:
    """The trainer's unit as a textbook PyTorch loop: the spec's model (a registry family's seeded init, or an
    ONNX model's own weights), AdamW, cross-entropy (LM scores (B, T, V) as (B*T, V), as the exact engine takes
    them), backward, step."""

    def __init__(self, spec: JobSpec, ds: Dataset, device: str = "cpu") -> None:
        import torch

        from gensyn_py.train.data import batch_indices, shard_indices
        from gensyn_py.train.models import build_for, task_of
        from gensyn_py.train.schedule import lr_at
        from gensyn_py.train.trainer import init_weights

        self.model = build_for(spec)
        self.model.load_state_dict(init_weights(spec))
        self.model.to(device)
        self.lm = task_of(spec) == "lm"
        o = spec.optimizer
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps,
                                     weight_decay=o.weight_decay, foreach=False)
        self.x, self.y = torch.from_numpy(ds.x).to(device), torch.from_numpy(ds.y).to(device)
        shard = shard_indices(ds.num_examples, spec.shards, 0, spec.seed)
        steps = range(spec.steps_per_unit)
        self.batches = [torch.from_numpy(batch_indices(shard, spec.batch_size, spec.seed, 0, 0, s)).to(device)
                        for s in steps]
        self.lrs = [lr_at(spec, s) for s in steps]
        self.losses: list[float] = []
        self.step = 0

    def run(self, steps: int) -> float:
        """Train the next `steps` steps; their wall time."""
        from torch.nn import functional as F

        end = self.step + steps
        start = time.perf_counter()
        for idx, lr in zip(self.batches[self.step:end], self.lrs[self.step:end], strict=True):
            for group in self.opt.param_groups:
                group["lr"] = lr
            self.opt.zero_grad(set_to_none=True)
            out = self.model(self.x[idx])
            if self.lm:
                out = out.reshape(-1, out.shape[-1])
            loss = F.cross_entropy(out, self.y[idx].reshape(-1))
            loss.backward()
            self.opt.step()
            self.losses.append(loss.item())
        self.step = end
        return time.perf_counter() - start


class WatchedStore(LocalStore):
    """A LocalStore that counts finished writes, so the bench can wait for the checkpoint writer."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.written = 0
        self._cond = threading.Condition()

    def _put(self, data: bytes, cid: str) -> str:
        out = super()._put(data, cid)
        with self._cond:
            self.written += 1
            self._cond.notify_all()
        return out

    def wait_written(self, n: int, timeout: float = 120.0) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.written >= n, timeout):
                raise TimeoutError(f"checkpoint {n - 1} not stored within {timeout} s")


@dataclass
class UnitRun:
    plain: list[float]  # plain block seconds
    ours: list[float]  # trainer+proof block seconds
    same: bool  # the same losses, bit for bit
    init_s: float  # constructing our Trainer
    commitment: UnitCommitment
    store: WatchedStore


def interleaved_unit(spec: JobSpec, ds: Dataset, root: Path, overlap: bool, device: str = "cpu",
                     store: WatchedStore | None = None,
                     on_block: Callable[[int, int, float, float, float], None] | None = None) -> UnitRun:
    """One unit on each side, alternating every segment (`on_block(step, total, ours s, plain s, loss)` after
    each): both sides' block times, whether their losses agree, the Trainer's construction time, the commitment
    and the store it went to (`store`, or a `WatchedStore` at `root`)."""
    from gensyn_py.proof.unit import UnitRecord, commit_segments
    from gensyn_py.train.trainer import Trainer

    k, half = spec.checkpoint_interval, spec.checkpoint_interval // 2
    plain, record = PlainLoop(spec, ds, device), UnitRecord()
    store = store if store is not None else WatchedStore(root)
    start = time.perf_counter()
    trainer = Trainer(spec, ds, 0, 0, device)
    init_s = time.perf_counter() - start
    plain_blocks: list[float] = []
    ours_blocks: list[float] = []
    mark = [0.0]

    def on_step(step: int, total: int, loss: float) -> None:
        if step % k == half:  # mid-segment j: checkpoint j was taken at step j * k
            store.wait_written(step // k + 1)
            ours_blocks.append(time.perf_counter() - mark[0])
            plain_blocks.append(plain.run(k))
            if on_block is not None:
                on_block(step, total, ours_blocks[-1], plain_blocks[-1], loss)
            mark[0] = time.perf_counter()

    mark[0] = time.perf_counter()
    commitment = commit_segments(trainer, store, job_id=1, on_step=on_step, record=record, overlap=overlap)
    ours_blocks.append(time.perf_counter() - mark[0])
    ours = [ours_blocks[0] + ours_blocks[-1], *ours_blocks[1:-1]]
    return UnitRun(plain_blocks, ours, record.losses == plain.losses, init_s, commitment, store)


def checkpoint_costs(spec: JobSpec, ds: Dataset, root: Path, n: int = 10) -> dict[str, float]:
    """Median ms per checkpoint: state_dict (on the training thread), then the writer's work (encode, hash, put),
    here one after the other on this thread."""
    from gensyn_py.proof.state import encode_state, state_hash_of_bytes
    from gensyn_py.storage.local import LocalStore
    from gensyn_py.train.trainer import Trainer

    t, store = Trainer(spec, ds, 0, 0, "cpu"), LocalStore(root)
    parts: dict[str, list[float]] = {"state_dict_ms": [], "encode_ms": [], "hash_ms": [], "put_ms": []}
    for _ in range(n):
        t.train_step()
        a = time.perf_counter()
        state = t.state_dict()
        b = time.perf_counter()
        data = encode_state(state)
        c = time.perf_counter()
        state_hash_of_bytes(data)
        d = time.perf_counter()
        store.put(data)  # CID (sha256 per chunk), write, fsync, rename
        e = time.perf_counter()
        for key, v in zip(parts, (b - a, c - b, d - c, e - d), strict=True):
            parts[key].append(v * 1e3)
    return {key: round(statistics.median(v), 2) for key, v in parts.items()}


def hash_gbps(nbytes: int) -> float:
    from gensyn_py.crypto.hashing import sha256

    data = bytes(nbytes)
    start = time.perf_counter()
    for _ in range(5):
        sha256(data)
    return 5 * nbytes / (time.perf_counter() - start) / 1e9


def state_bytes(spec: JobSpec, ds: Dataset) -> int:
    from gensyn_py.proof.state import encode_state
    from gensyn_py.train.trainer import Trainer

    t = Trainer(spec, ds)
    t.run(1)
    return len(encode_state(t.state_dict()))


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=6, help="checkpoint intervals per unit")
    ap.add_argument("--interval", type=int, default=DEFAULT_INTERVAL, help="steps per checkpoint interval")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions after one warm-up")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads on both sides (the spec's; 1 is its default, leaving a core to hashing)")
    ap.add_argument("--inline", action="store_true", help="write each checkpoint before training goes on")
    args = ap.parse_args()

    if args.interval < 2:
        ap.error("--interval must be at least 2 (the plain loop runs mid-segment)")

    from gensyn_py.train.determinism import configure_exact

    spec, ds = bench_job(args.segments * args.interval, args.interval, threads=args.threads)
    configure_exact(spec.threads)  # both sides under the same kernels and threads
    segment_ratios: list[float] = []
    unit_ratios: list[float] = []
    plain_units: list[float] = []
    proof_units: list[float] = []
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps + 1):  # repetition 0 warms both sides up
            run = interleaved_unit(spec, ds, Path(tmp) / f"store-{rep}", overlap=not args.inline)
            plain, ours = run.plain, run.ours
            same = same and run.same
            if rep == 0:
                continue
            segment_ratios += [o / p for p, o in zip(plain, ours, strict=True)]
            unit_ratios.append(sum(ours) / sum(plain))
            plain_units.append(sum(plain))
            proof_units.append(sum(ours))
        costs = checkpoint_costs(spec, ds, Path(tmp) / "costs")
    print(f"plain units {[round(x, 3) for x in plain_units]} s; trainer+proof units "
          f"{[round(x, 3) for x in proof_units]} s; segment ratios {[round(r, 3) for r in segment_ratios]}",
          file=sys.stderr)
    print(json.dumps({
        "bench": "overhead",
        "steps": spec.steps_per_unit,
        "checkpoint_interval": args.interval,
        "threads": _threads(),
        "checkpoints": "inline" if args.inline else "overlapped",
        "repetitions": args.reps,
        "same_losses": same,
        "state_bytes": state_bytes(spec, ds),
        "plain_unit_s": round(statistics.median(plain_units), 4),
        "proof_unit_s": round(statistics.median(proof_units), 4),
        "proof_overhead_ratio": round(statistics.median(segment_ratios), 4),
        "unit_overhead_ratio": round(statistics.median(unit_ratios), 4),
        "checkpoint_ms": costs,
        "hash_gbps": round(hash_gbps(64 * 1024 * 1024), 3),
    }))


if __name__ == "__main__":
    main()
