"""Proof-generation overhead: a plain PyTorch loop vs our Trainer with checkpoint commitments.

Both train the same model on the same data for the same steps, alternating in
one process, switching every segment so load changes hit both alike; the
figure is the median of the per-segment time ratios. The
trainer side serializes, hashes and stores every checkpoint (file writes
included) and writes the manifest. Prints one JSON line last.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._trainjob import DEFAULT_INTERVAL, bench_job


class PlainLoop:
    """The same model, optimizer and data, trained by a textbook PyTorch loop."""

    def __init__(self, spec, ds) -> None:  # type: ignore[no-untyped-def]
        import torch

        from gensyn_py.train.models import build_model
        from gensyn_py.train.trainer import init_weights

        self.model = build_model(spec.model.family, spec.model.sizes)
        self.model.load_state_dict(init_weights(spec))
        o = spec.optimizer
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=o.lr, weight_decay=o.weight_decay, foreach=False)
        self.x, self.y = torch.from_numpy(ds.x), torch.from_numpy(ds.y)
        self.g = torch.Generator().manual_seed(0)
        self.batch = spec.batch_size

    def run(self, steps: int) -> float:
        import torch
        from torch.nn import functional as F

        start = time.perf_counter()
        for _ in range(steps):
            idx = torch.randint(0, len(self.y), (self.batch,), generator=self.g)
            self.opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(self.model(self.x[idx]), self.y[idx])
            loss.backward()
            self.opt.step()
            float(loss.detach())
        return time.perf_counter() - start


def interleaved(spec, ds, root: Path) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """Per-segment wall times (plain, ours), the two alternating every segment.

    Each of our blocks holds k training steps, one checkpoint (serialize, hash,
    store) and, for the last, the manifest.
    """
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.storage.local import LocalStore
    from gensyn_py.train.trainer import Trainer

    k = spec.checkpoint_interval
    plain = PlainLoop(spec, ds)
    plain.run(5)
    plain_blocks: list[float] = []
    ours_blocks: list[float] = []
    mark = [0.0]

    def on_step(step: int, total: int, loss: float) -> None:
        if step % k == 1:  # just after the previous checkpoint was written
            now = time.perf_counter()
            if step > 1:
                ours_blocks.append(now - mark[0])
            plain_blocks.append(plain.run(k))
            mark[0] = time.perf_counter()

    trainer = Trainer(spec, ds, 0, 0, "cpu")
    commit_segments(trainer, LocalStore(root), job_id=1, on_step=on_step)
    ours_blocks.append(time.perf_counter() - mark[0])  # last segment + final checkpoint + manifest
    return plain_blocks[1:], ours_blocks[1:]  # the first pair warms up


def hash_gbps(nbytes: int) -> float:
    from gensyn_py.proof.hashing import sha256

    data = bytes(nbytes)
    start = time.perf_counter()
    for _ in range(5):
        sha256(data)
    return 5 * nbytes / (time.perf_counter() - start) / 1e9


def main() -> None:
    import statistics

    import torch

    from gensyn_py.proof.state import encode_state
    from gensyn_py.train.determinism import configure_exact
    from gensyn_py.train.trainer import Trainer

    segments = 6
    spec, ds = bench_job(segments * DEFAULT_INTERVAL)
    configure_exact(spec.threads)  # both sides under the same kernels and threads
    with tempfile.TemporaryDirectory() as tmp:
        plain, ours = interleaved(spec, ds, Path(tmp))
        t = Trainer(spec, ds)
        t.run(1)
        state_bytes = len(encode_state(t.state_dict()))
    ratios = [o / p for p, o in zip(plain, ours, strict=True)]
    runs = f"plain {[round(x, 3) for x in plain]} s; trainer+proof {[round(x, 3) for x in ours]} s"
    print(runs, file=sys.stderr)
    print(json.dumps({
        "bench": "overhead",
        "steps": spec.steps_per_unit,
        "checkpoint_interval": DEFAULT_INTERVAL,
        "threads": torch.get_num_threads(),
        "state_bytes": state_bytes,
        "plain_segment_s": round(statistics.median(plain), 4),
        "proof_segment_s": round(statistics.median(ours), 4),
        "proof_overhead_ratio": round(statistics.median(ratios), 4),
        "hash_gbps": round(hash_gbps(64 * 1024 * 1024), 3),
    }))


if __name__ == "__main__":
    main()
