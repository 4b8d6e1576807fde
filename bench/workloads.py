"""Bring-your-own ONNX workloads: proof overhead, replay cost and repro slowdown of a ResNet-style CNN and a GPT LM.

The models are `examples/onnx_models.py`'s `ResNetCNN` and `GPT`, exported to ONNX there (`export`) and trained
from that file as a requester's job would be (`model.family = "onnx"`, `gensyn_py/train/graphs`), on synthetic
data made here with seeded NumPy (images: a class template under noise; tokens: windows of a noisy random
Markov stream). Nothing is downloaded. Per model (the CNN, the LM; with --large also the LM near 100M parameters):

proof_overhead_ratio_<model>   the definition of bench/overhead.py: its `PlainLoop` (any spec, an ONNX one
    included: the graph's own module with the file's initial weights), and its `interleaved_unit` over that loop
    (on `device`, which also returns the commitment); its `WatchedStore` and `checkpoint_costs` as they are.
    Mode `exact`, as in bench/overhead.py. The plain loop and our Trainer with
    checkpoint commitments train the same steps alternately, every segment of k steps, within one unit; before
    our clock stops the bench waits for the segment's checkpoint to be in the store. Figure: the median of the
    per-segment time ratios trainer+proof / plain of all timed repetitions (after a warm-up one), where the
    first and last half-segments form one block. The whole-unit ratio is reported too. The bench checks that
    both sides' losses agree bit for bit.
replay_cost_ratio_<model>      the definition of bench/detection.py: a validator's `replay_segment` of one
    segment (manifest check, Merkle proof, fetch and hash-check the start checkpoint, build the Trainer, load,
    replay k steps, hash the end state, compare) over training one segment with proofs: (Trainer construction +
    the unit with commitments) / segments, here taken from the timed repetitions of the overhead measurement
    (our side's blocks, without the plain loop's), each repetition's unit replayed from its own store, the
    segment alternating as in detection.py. Median over repetitions.
repro_slowdown_onnx_cpu        (the LM) and repro_slowdown_onnx_cnn_cpu: the definition of bench/repro.py's
    repro_slowdown_cpu on the ONNX graph: seconds of `Trainer.train_step` in mode repro (the graph as repro layer
    ops) over the same in mode exact (the graph on PyTorch's kernels), the same graph, batch and step indices,
    run alternately after a warm-up; minimum over the runs of each (its median pair ratio is `_median`).
    Goal: at most 3.
checkpoints                    "overlapped" (default, as bench/overhead.py: the trainer's checkpoint writer,
    `proof/unit.py`, takes a snapshot on the training thread, then encodes, hashes (on the cores the training
    leaves) and stores it on a background thread, all with the GIL released) or "inline" (--inline);
    `checkpoint_writes_overlapped` says whether every checkpoint of every measured unit was in fact stored from
    the writer's background thread.

Every ratio is against a baseline measured in the same run. With CUDA the same figures are measured on the GPU too
(suffix `_gpu`, checkpoint interval --gpu-interval). Both sides run with the spec's torch threads (--threads,
default 1 as in a spec), leaving the other core to the checkpoint writer. Progress goes to stderr; one JSON line
last. --quick: tiny sizes, seconds (a smoke check). The default takes about 5 minutes on 2 cores; --large
adds tens of minutes there (10-20 s per 100M-parameter step, 1.2 GB per checkpoint). On CPU the units are short
(k = 8 steps for the CNN, 4 for the LM, against bench/overhead.py's 100) to fit that time: every checkpoint's
fixed cost is spread over few steps, so both ratios are upper figures for a job with a longer interval.
Run: .venv/bin/python bench/workloads.py [--quick] [--large]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.overhead import UnitRun, WatchedStore, checkpoint_costs, interleaved_unit
from bench.repro import alternate

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec
    from gensyn_py.train.trainer import Trainer

CHECKPOINT_THREAD = "gensyn-checkpoint"  # proof/unit.py's writer thread name prefix
GPU_REPRO_REPS = 10
_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


# ---- the workloads ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """One model at one size: `kind` "cnn" (ResNetCNN on 3xHxW images) or "lm" (GPT on token windows)."""

    name: str  # the figures' suffix: cnn, lm, lm_100m
    kind: str
    dims: dict[str, int]  # the model's constructor arguments
    batch: int
    interval: int  # checkpoint interval on CPU
    image: int = 32  # CNN input height and width
    examples: int = 512


def sizes(quick: bool, large: bool, cnn_interval: int, lm_interval: int) -> list[Size]:
    if quick:
        return [Size("cnn", "cnn", {"width": 8, "stages": 2, "blocks": 1}, 8, 4, image=16, examples=128),
                Size("lm", "lm", {"vocab": 256, "seq_len": 32, "d": 64, "heads": 2, "layers": 2}, 4, 4,
                     examples=128)]
    out = [Size("cnn", "cnn", {"width": 48, "stages": 4, "blocks": 1}, 16, cnn_interval),
           Size("lm", "lm", {"vocab": 4096, "seq_len": 128, "d": 320, "heads": 5, "layers": 6}, 8, lm_interval)]
    if large:
        out.append(Size("lm_100m", "lm", {"vocab": 8192, "seq_len": 128, "d": 768, "heads": 12, "layers": 12}, 8,
                        lm_interval))
    return out


def images(n: int, hw: int, classes: int, seed: int) -> Dataset:
    """n 3 x hw x hw images: a random template per class at half strength under unit Gaussian noise."""
    from gensyn_py.train.data import Dataset

    rng = np.random.Generator(np.random.PCG64(seed))
    templates = rng.standard_normal((classes, 3, hw, hw), dtype=np.float32)
    y = rng.integers(0, classes, size=n).astype(np.int64)
    x = 0.5 * templates[y] + rng.standard_normal((n, 3, hw, hw), dtype=np.float32)
    return Dataset(np.ascontiguousarray(x, dtype=np.float32), y)


def token_windows(n: int, seq_len: int, vocab: int, seed: int) -> Dataset:
    """n windows of a token stream in which each token is one of 4 successors of the previous one (10% of
    tokens uniform instead); y is x shifted by one."""
    from gensyn_py.train.data import Dataset

    rng = np.random.Generator(np.random.PCG64(seed))
    length = max(4 * seq_len, n * seq_len // 2)
    successors = rng.integers(0, vocab, size=(vocab, 4))
    pick, uniform = rng.integers(0, 4, size=length), rng.integers(0, vocab, size=length)
    noise = rng.random(length) < 0.1
    stream = np.empty(length, dtype=np.int64)
    stream[0] = uniform[0]
    for i in range(1, length):
        stream[i] = uniform[i] if noise[i] else successors[stream[i - 1], pick[i]]
    starts = rng.integers(0, length - seq_len - 1, size=n)
    window = starts[:, None] + np.arange(seq_len)[None, :]
    return Dataset(np.ascontiguousarray(stream[window]), np.ascontiguousarray(stream[window + 1]))


def model_entry(data: bytes) -> dict[str, Any]:
    """The spec's `model` entry for ONNX bytes, the graph loaded into this process (tests/unit/onnxkit.py's)."""
    from gensyn_py.storage.cid import cid_for_bytes
    from gensyn_py.train.graphs.cache import load

    cid = cid_for_bytes(data)
    load(cid, data)
    return {"family": "onnx", "onnx": {"cid": cid, "size_bytes": len(data)}}


@dataclass
class Workload:
    size: Size
    ds: Dataset
    base: dict[str, Any]  # the spec as a dict, mode exact
    params: int
    onnx_bytes: int

    def spec(self, segments: int, interval: int, threads: int, mode: str = "exact") -> JobSpec:
        from gensyn_py.train.spec import parse_spec

        steps = segments * interval
        schedule = {"kind": "cosine", "warmup_steps": min(10, steps // 2)}  # bench/_trainjob.py's, for short units
        return parse_spec({**self.base, "schedule": schedule, "steps_per_unit": steps,
                           "checkpoint_interval": interval, "threads": threads, "mode": mode})


def build_workload(size: Size, seed: int = 1) -> Workload:
    import torch

    from examples.onnx_models import GPT, ResNetCNN, export
    from gensyn_py.train.data import dataset_entry

    torch.manual_seed(seed)
    model: torch.nn.Module
    if size.kind == "cnn":
        model = ResNetCNN(in_channels=3, classes=10, **size.dims)
        example = torch.zeros(size.batch, 3, size.image, size.image)
        ds = images(size.examples, size.image, 10, seed)
    else:
        model = GPT(**size.dims)
        example = torch.zeros(size.batch, size.dims["seq_len"], dtype=torch.int64)
        ds = token_windows(size.examples, size.dims["seq_len"], size.dims["vocab"], seed)
    params = sum(p.numel() for p in model.parameters())
    log(f"[{size.name}] exporting {type(model).__name__}({size.dims}) to ONNX: {params:,} parameters")
    data = export(model, example)
    del model
    base: dict[str, Any] = {
        "version": 1,
        "model": model_entry(data),
        "optimizer": {"name": "adamw", "lr": 0.001, "weight_decay": 0.01},  # as bench/_trainjob.py
        "batch_size": size.batch,
        "seed": seed,
        "mode": "exact",
        "dataset": dataset_entry(ds, ds.to_bytes()),
    }
    return Workload(size, ds, base, params, len(data))


# ---- proof overhead (bench/overhead.py's definition) and replay cost (bench/detection.py's) ------------------


class ThreadWatchedStore(WatchedStore):
    """bench/overhead.py's WatchedStore that also notes which thread stored each object, and the largest."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.threads: list[str] = []
        self.largest = 0

    def _put(self, data: bytes, cid: str) -> str:
        self.threads.append(threading.current_thread().name)
        self.largest = max(self.largest, len(data))
        return super()._put(data, cid)


def replay_seconds(spec: JobSpec, ds: Dataset, run: UnitRun, segment: int, device: str) -> float:
    """A validator's replay of `segment` of the unit `run` committed (bench/detection.py's verify side)."""
    from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment

    c = run.commitment
    start = time.perf_counter()
    verdict = replay_segment(spec, ds, run.store, UnitRef(1, 0, 0, c.checkpoint_root),
                             fetch_manifest(run.store, c.manifest_cid), segment, device)
    seconds = time.perf_counter() - start
    if not verdict.accept:
        raise RuntimeError(f"replay of segment {segment} rejected: {verdict.reason}")
    return seconds


@dataclass
class ProofFigures:
    segment_ratios: list[float] = field(default_factory=list)
    unit_ratios: list[float] = field(default_factory=list)
    plain_units: list[float] = field(default_factory=list)
    proof_units: list[float] = field(default_factory=list)
    train_segments: list[float] = field(default_factory=list)  # (init + unit) / segments, detection.py's
    replays: list[float] = field(default_factory=list)
    replay_ratios: list[float] = field(default_factory=list)
    same: bool = True
    overlapped: bool = True
    state_bytes: int = 0


def proof_figures(w: Workload, spec: JobSpec, reps: int, overlap: bool, device: str, tmp: Path,
                  replay: bool = True) -> ProofFigures:
    """Overhead (and replay cost) of `spec`: `reps` timed repetitions after one warm-up."""
    f = ProofFigures()
    n = spec.num_segments
    for rep in range(reps + 1):  # repetition 0 warms both sides up
        tag = "warm-up" if rep == 0 else f"{rep}/{reps}"
        label = f"[{w.size.name}/{device}] overhead rep {tag}"
        root = tmp / f"{w.size.name}-{device}-{rep}"
        store = ThreadWatchedStore(root)

        def on_block(step: int, total: int, ours: float, plain: float, loss: float, label: str = label) -> None:
            log(f"{label}: steps to {step} of {total}: trainer+proof {ours:.2f} s, then plain "
                f"{spec.checkpoint_interval} steps {plain:.2f} s (loss {loss:.4f})")

        run = interleaved_unit(spec, w.ds, root, overlap, device, store, on_block)
        writer = [t for t in store.threads if t.startswith(CHECKPOINT_THREAD)]
        f.overlapped = f.overlapped and len(writer) == n + 1  # every checkpoint stored behind the training
        f.state_bytes = store.largest
        f.same = f.same and run.same
        if rep > 0:
            f.segment_ratios += [o / p for p, o in zip(run.plain, run.ours, strict=True)]
            f.unit_ratios.append(sum(run.ours) / sum(run.plain))
            f.plain_units.append(sum(run.plain))
            f.proof_units.append(sum(run.ours))
            log(f"{label}: unit trainer+proof {sum(run.ours):.2f} s, plain {sum(run.plain):.2f} s, "
                f"x{f.unit_ratios[-1]:.3f}; same losses {run.same}")
            if replay:
                segment = rep % n
                log(f"[{w.size.name}/{device}] replaying segment {segment} of rep {rep} ({spec.checkpoint_interval} "
                    f"steps)")
                r = replay_seconds(spec, w.ds, run, segment, device)
                train = (run.init_s + sum(run.ours)) / n
                f.replays.append(r)
                f.train_segments.append(train)
                f.replay_ratios.append(r / train)
                log(f"[{w.size.name}/{device}] replay {r:.2f} s vs train {train:.2f} s per segment: x{r / train:.3f}")
        shutil.rmtree(root, ignore_errors=True)
    return f


# ---- repro vs exact (bench/repro.py's definition) ----------------------------------------------------------


def repro_vs_exact(w: Workload, threads: int, reps: int, warmup: int, device: str) -> tuple[float, float, float]:
    """Trainer.train_step of the graph in mode repro vs mode exact, alternating (the same batches, step by step)."""
    import torch

    from gensyn_py.train.trainer import Trainer

    label = f"[{w.size.name}/{device}] repro vs exact step"
    log(f"{label}: building both trainers (mode repro checks the graph's exact forms)")
    steps = 10**6  # as bench/repro.py: a unit long enough never to end
    trainers: dict[str, Trainer] = {m: Trainer(w.spec(1, steps, threads, m), w.ds, 0, 0, device)
                                    for m in ("repro", "exact")}
    sync: Callable[[], None] = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step(mode: str) -> Callable[[], None]:
        def run() -> None:
            trainers[mode].train_step()
            sync()

        return run

    return alternate(step("repro"), step("exact"), reps, warmup,
                     lambda i, a, b: log(f"{label} pair {i + 1}/{reps}: repro {a:.3f} s, exact {b:.3f} s"))


# ---- one device's figures ----------------------------------------------------------------------------------


def device_figures(work: list[Workload], args: argparse.Namespace, device: str, tmp: Path) -> dict[str, Any]:
    from gensyn_py.train.determinism import configure_exact

    gpu = device == "cuda"
    suffix = "_gpu" if gpu else ""
    out: dict[str, Any] = {}
    details: dict[str, Any] = {}
    overlapped = True
    for w in work:
        name = w.size.name
        interval = args.gpu_interval if gpu else w.size.interval
        spec = w.spec(args.segments, interval, args.threads)
        configure_exact(spec.threads)  # both sides under the same kernels and threads
        f = proof_figures(w, spec, args.reps, not args.inline, device, tmp)
        overlapped = overlapped and f.overlapped
        out[f"proof_overhead_ratio_{name}{suffix}"] = round(statistics.median(f.segment_ratios), 4)
        out[f"replay_cost_ratio_{name}{suffix}"] = round(statistics.median(f.replay_ratios), 4)
        d: dict[str, Any] = {
            "checkpoint_interval": interval,
            "steps": spec.steps_per_unit,
            "same_losses": f.same,
            "state_bytes": f.state_bytes,
            "plain_unit_s": round(statistics.median(f.plain_units), 4),
            "proof_unit_s": round(statistics.median(f.proof_units), 4),
            "unit_overhead_ratio": round(statistics.median(f.unit_ratios), 4),
            "segment_ratios": [round(r, 4) for r in f.segment_ratios],
            "train_segment_s": round(statistics.median(f.train_segments), 4),
            "replay_segment_s": round(statistics.median(f.replays), 4),
        }
        if not gpu:
            log(f"[{name}/cpu] per-checkpoint costs ({args.cost_steps} checkpoints)")
            d["checkpoint_ms"] = checkpoint_costs(spec, w.ds, tmp / f"costs-{name}",
                                                 n=min(args.cost_steps, spec.steps_per_unit))
            shutil.rmtree(tmp / f"costs-{name}", ignore_errors=True)
        if w.size.name != "lm_100m" and not args.no_repro:  # the 100M LM: overhead and replay only
            reps = GPU_REPRO_REPS if gpu else args.repro_reps
            s_r, s_e, med = repro_vs_exact(w, args.threads, reps, 2 if gpu else 1, device)
            key = ("repro_slowdown_onnx" if w.size.kind == "lm" else f"repro_slowdown_onnx_{name}") + (
                "_gpu" if gpu else "_cpu")
            out[key] = round(s_r / s_e, 3)
            out[f"{key}_median"] = round(med, 3)
            d["repro_step_s"] = round(s_r, 4)
            d["exact_step_s"] = round(s_e, 4)
            log(f"[{name}/{device}] repro {s_r:.3f} s/step, exact {s_e:.3f} s/step: x{s_r / s_e:.2f} "
                f"(median of pairs x{med:.2f}; goal <= 3)")
        log(f"[{name}/{device}] proof overhead x{out[f'proof_overhead_ratio_{name}{suffix}']} (unit "
            f"x{d['unit_overhead_ratio']}), replay cost x{out[f'replay_cost_ratio_{name}{suffix}']}")
        details[name] = d
    out[f"checkpoint_writes_overlapped{suffix}"] = overlapped
    out[f"details{suffix}"] = details
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny models, one repetition: a smoke check")
    ap.add_argument("--large", action="store_true", help="also the LM near 100M parameters (its proof overhead)")
    ap.add_argument("--only", action="append", choices=["cnn", "lm", "lm_100m"],
                    help="measure only these models (repeatable; default all of the chosen sizes)")
    ap.add_argument("--segments", type=int, default=3, help="checkpoint intervals per unit")
    ap.add_argument("--cnn-interval", type=int, default=8, help="steps per checkpoint interval, the CNN on CPU")
    ap.add_argument("--lm-interval", type=int, default=4, help="steps per checkpoint interval, the LMs on CPU")
    ap.add_argument("--gpu-interval", type=int, default=100, help="steps per checkpoint interval on CUDA")
    ap.add_argument("--reps", type=int, default=2, help="timed unit repetitions after one warm-up")
    ap.add_argument("--repro-reps", type=int, default=3, help="timed repro/exact step pairs on CPU, after one")
    ap.add_argument("--cost-steps", type=int, default=2, help="checkpoints timed for the per-checkpoint costs")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads on both sides (the spec's; 1 is its default, leaving a core to hashing)")
    ap.add_argument("--inline", action="store_true", help="write each checkpoint before training goes on")
    ap.add_argument("--no-repro", action="store_true", help="skip the repro/exact step timings")
    ap.add_argument("--no-gpu", action="store_true", help="skip the CUDA figures even where CUDA is available")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.repro_reps, args.cost_steps, args.gpu_interval = 1, 2, 2, 4
    intervals = (args.cnn_interval, args.lm_interval, args.gpu_interval)
    if min(intervals) < 2:
        ap.error("checkpoint intervals must be at least 2 (the plain loop runs mid-segment)")

    import torch

    torch.set_num_threads(args.threads)
    chosen = [s for s in sizes(args.quick, args.large, args.cnn_interval, args.lm_interval)
              if not args.only or s.name in args.only]
    if not chosen:
        ap.error("--only names no model of the chosen sizes (lm_100m needs --large)")
    load_start = os.getloadavg()[0]
    work = [build_workload(s) for s in chosen]
    result: dict[str, Any] = {
        "bench": "workloads",
        "threads": args.threads,
        "segments": args.segments,
        "repetitions": args.reps,
        "checkpoints": "inline" if args.inline else "overlapped",
        "models": {w.size.name: {"params": w.params, "onnx_bytes": w.onnx_bytes, "batch": w.size.batch,
                                 "dims": w.size.dims,
                                 "input": [3, w.size.image, w.size.image] if w.size.kind == "cnn"
                                 else [w.size.dims["seq_len"]]} for w in work},
    }
    with tempfile.TemporaryDirectory() as tmp:
        result.update(device_figures(work, args, "cpu", Path(tmp)))
        if torch.cuda.is_available() and not args.no_gpu:
            try:
                result.update(device_figures(work, args, "cuda", Path(tmp)))
            except Exception as e:  # the CPU figures still get their JSON line
                log(f"CUDA figures failed: {e!r}")
                result["gpu_error"] = f"{type(e).__name__}: {e}"
        else:
            log("no CUDA device" + (" wanted" if args.no_gpu else "") + ": no _gpu figures")
    log(f"done in {time.perf_counter() - _T0:.0f} s")
    result["cpu_count"] = os.cpu_count()
    result["load_avg_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]  # at start and end: others' load
    print(json.dumps(result))


if __name__ == "__main__":
    main()
