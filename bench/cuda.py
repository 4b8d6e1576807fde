"""CUDA checks and figures: the same training on CPU and GPU, per model family, optimizer and mode.

For every family (mlp, cnn, transformer) x optimizer (sgd, adamw) x mode (repro, exact) it trains a few
steps on CPU and on CUDA from the same spec and compares the state hashes (weights, optimizer state, RNG,
cursor: what a commitment is made of). The protocol's claim: `repro` states are bit-identical across
devices; `exact` states are bit-identical only within a replay class, so CUDA is checked against a second
CUDA run (run-to-run determinism) and its CPU comparison is reported, not required. Then the step time of
both modes on CUDA (the repro slowdown on a GPU).

Needs a CUDA device; prints `{"cuda": false}` and exits 0 without one. One JSON line last.
Usage: .venv/bin/python bench/cuda.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from gensyn_py.proof.state import state_hash  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

STEPS = 6
ADAMW = {"name": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}


def final_hash(family: str, optimizer: str, mode: str, device: str) -> tuple[bytes, list[float]]:
    over: dict[str, Any] = {"mode": mode, "steps_per_unit": STEPS, "checkpoint_interval": STEPS}
    if optimizer == "adamw":
        over["optimizer"] = ADAMW
    t = Trainer(tiny_spec(family, **over), dataset_for(family), 0, 0, device)
    losses = t.run(STEPS)
    return state_hash(t.state_dict()), losses


def equality_table() -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for family in ("mlp", "cnn", "transformer"):
        for optimizer in ("sgd", "adamw"):
            for mode in ("repro", "exact"):
                cpu, cpu_losses = final_hash(family, optimizer, mode, "cpu")
                gpu, gpu_losses = final_hash(family, optimizer, mode, "cuda")
                gpu2, _ = final_hash(family, optimizer, mode, "cuda")
                key = f"{family}/{optimizer}/{mode}"
                rows[key] = {"cpu_eq_cuda": cpu == gpu, "cuda_run_to_run": gpu == gpu2,
                             "max_loss_diff": max(abs(a - b) for a, b in zip(cpu_losses, gpu_losses, strict=True))}
                r = rows[key]
                print(f"{key:28s} CPU==CUDA {r['cpu_eq_cuda']!s:5s}  CUDA run-to-run {r['cuda_run_to_run']!s:5s}  "
                      f"max |loss diff| {r['max_loss_diff']:.3g}")
    return rows


SIZES = {"mlp": {"hidden": 512}, "transformer": {"d_model": 128, "n_heads": 4, "n_layers": 2}}


def step_times(reps: int = 30) -> dict[str, float]:
    """Median milliseconds per training step in each mode, on CUDA and CPU (MLP 64-512-10 and a 2-layer
    transformer, batch 64, AdamW)."""
    out: dict[str, float] = {}
    for family, sizes in SIZES.items():
        for device in ("cuda", "cpu"):
            for mode in ("repro", "exact"):
                spec = tiny_spec(family, mode=mode, optimizer=ADAMW, batch_size=64, steps_per_unit=10**6,
                                 checkpoint_interval=10**6, model={"family": family, "sizes": sizes})
                t = Trainer(spec, dataset_for(family), 0, 0, device)
                times = []
                for i in range(reps + 3):
                    t0 = time.perf_counter()
                    t.train_step()
                    if device == "cuda":
                        torch.cuda.synchronize()
                    if i >= 3:
                        times.append(time.perf_counter() - t0)
                times.sort()
                out[f"{family}_{device}_{mode}_step_ms"] = round(1e3 * times[len(times) // 2], 3)
    return out


def main() -> None:
    if not torch.cuda.is_available():
        print(json.dumps({"cuda": False}))
        return
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rows = equality_table()
    times = step_times()
    print(times)
    repro_ok = all(r["cpu_eq_cuda"] for k, r in rows.items() if k.endswith("/repro"))
    exact_det = all(r["cuda_run_to_run"] for k, r in rows.items() if k.endswith("/exact"))
    result = {
        "cuda": True, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "repro_cpu_eq_cuda_all": repro_ok, "exact_cuda_deterministic_all": exact_det,
        "exact_cpu_eq_cuda": {k: r["cpu_eq_cuda"] for k, r in rows.items() if k.endswith("/exact")},
        **{f"{f}_repro_slowdown_{d}": round(times[f"{f}_{d}_repro_step_ms"] / times[f"{f}_{d}_exact_step_ms"], 3)
           for f in SIZES for d in ("cuda", "cpu")},
        **times,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
