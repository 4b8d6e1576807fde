"""Train one repro unit with a group of processes on this machine (data parallel, `repro/distributed.py`).

The calling process is rank 0: it keeps its trainer and everything around it (checkpoints, commitments,
progress). `TrainingGroup` starts ranks 1..N-1 as helper processes (`python -m gensyn_py.train.process_group`)
from the trainer's exact state (spec bytes, dataset bytes and the full state written to a private
folder; for a chunked dataset its manifest and the chunks the unit reads, as the node's store holds
them), joins the `torch.distributed` group with them, and leaves it when the unit
is done. A helper runs
the same training steps in lockstep and keeps nothing: every rank holds the same state after every step.

On CPUs the group uses gloo; with CUDA, NCCL, rank r on device `cuda:r`.  A helper that dies makes rank 0's
next collective fail within `timeout` seconds, which ends the unit's training with a `TrainingError`.
"""

from __future__ import annotations

import contextlib
import datetime
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from gensyn_py.errors import TrainingError

if TYPE_CHECKING:
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.trainer import Trainer


class TrainingGroup:
    """`with TrainingGroup(trainer, size):` makes `trainer` rank 0 of a group of `size` processes.

    `get(cid) -> bytes` reads content the helpers need besides the trainer's state (a chunked dataset's
    manifest and chunks) from the node's store; a job on a dataset in one file needs no `get`."""

    def __init__(self, trainer: Trainer, size: int, timeout: float = 120.0,
                 get: Callable[[str], bytes] | None = None) -> None:
        if trainer.spec.mode != "repro":
            raise TrainingError("only a repro unit trains data parallel (mode 'exact' is one process)")
        from gensyn_py.train.repro_step import one_process_reason

        if (reason := one_process_reason(trainer.spec)) is not None:
            raise TrainingError(reason)
        self.trainer = trainer
        self.get = get
        self.size = size
        self.timeout = timeout
        self._dir: Path | None = None
        self._helpers: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> TrainingGroup:
        import torch
        import torch.distributed as dist
        from safetensors.torch import save

        t = self.trainer
        cuda = str(t.device).startswith("cuda")
        if cuda and torch.cuda.device_count() < self.size:
            raise TrainingError(f"{self.size} processes need {self.size} GPUs; this machine has "
                                f"{torch.cuda.device_count()}")
        self._dir = Path(tempfile.mkdtemp(prefix="gensyn-group-"))
        (self._dir / "spec.json").write_bytes(t.spec.canonical_bytes())
        try:
            self._write_content(self._dir)
        except Exception:
            self._stop()
            raise
        (self._dir / "state.safetensors").write_bytes(save(t.state_dict()))
        for rank in range(1, self.size):
            self._helpers.append(subprocess.Popen(
                [sys.executable, "-m", "gensyn_py.train.process_group", str(self._dir), str(rank), str(self.size),
                 str(t.round), str(t.shard), f"cuda:{rank}" if cuda else "cpu", str(self.timeout)],
                preexec_fn=_die_with_parent))
        try:
            dist.init_process_group("nccl" if cuda else "gloo", init_method=f"file://{self._dir / 'init'}", rank=0,
                                    world_size=self.size, timeout=datetime.timedelta(seconds=self.timeout))
        except (RuntimeError, ValueError) as e:
            self._stop()
            raise TrainingError(f"the training group of {self.size} processes did not form: {e}") from None
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
        self._stop(wait=kind is None)
        if isinstance(exc, RuntimeError) and not isinstance(exc, TrainingError):
            # a collective that failed (a helper died or hung): the unit's training failed, not this node
            raise TrainingError(f"data-parallel training failed: {str(exc).splitlines()[0]}") from None

    def _write_content(self, folder: Path) -> None:
        """The dataset as the helpers read it: a one-file dataset as bytes; a chunked one as its manifest and
        the chunks the unit reads, by CID under `content/` (checked again there against the spec, as any node
        checks what it fetches)."""
        from gensyn_py.train.chunks import ChunkedDataset, unit_chunks

        t = self.trainer
        if not isinstance(t.dataset, ChunkedDataset):
            (folder / "dataset.safetensors").write_bytes(t.dataset.to_bytes())
            return
        if self.get is None:
            raise TrainingError("a data-parallel unit of a chunked dataset needs its chunks from the node's store "
                                "(TrainingGroup's get)")
        content = folder / "content"
        content.mkdir()
        chunks = sorted(unit_chunks(t.dataset, t.spec, t.round, t.shard))
        for cid in [t.spec.dataset.cid, *(t.dataset.manifest.chunks[k].cid for k in chunks)]:
            (content / cid).write_bytes(self.get(cid))

    @property
    def helper_pids(self) -> list[int]:
        """The process ids of the running helpers (ranks 1..N-1)."""
        return [p.pid for p in self._helpers]

    def _stop(self, wait: bool = False) -> None:
        for p in self._helpers:
            if wait:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=self.timeout)
            p.kill()
            p.wait()
        self._helpers = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _die_with_parent() -> None:
    """In a helper, before it runs: the kernel kills it when the process that started it dies (Linux), so a
    killed node leaves no helper waiting on a collective."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


def helper(folder: Path, rank: int, size: int, round_: int, shard: int, device: str, timeout: float) -> None:
    """Rank `rank` of the group: load the trainer's state and take the unit's remaining steps."""
    import torch
    import torch.distributed as dist
    from safetensors.torch import load

    from gensyn_py.train.chunks import open_dataset
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import parse_spec_bytes
    from gensyn_py.train.trainer import Trainer

    def get(cid: str) -> bytes:
        return (folder / "content" / cid).read_bytes()

    spec = parse_spec_bytes((folder / "spec.json").read_bytes())
    dataset: Dataset
    if spec.dataset.chunk_examples is not None:
        dataset = open_dataset(spec.dataset, get)
    else:
        dataset = Dataset.from_bytes((folder / "dataset.safetensors").read_bytes(), spec.dataset)
    trainer = Trainer(spec, dataset, round_, shard, device)
    trainer.load_state_dict(load((folder / "state.safetensors").read_bytes()))
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo", init_method=f"file://{folder / 'init'}",
                            rank=rank, world_size=size, timeout=datetime.timedelta(seconds=timeout))
    try:
        for _ in range(spec.steps_per_unit - trainer.step):
            trainer.train_step()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    helper(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
           float(sys.argv[7]))
