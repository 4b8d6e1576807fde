"""Do CPU and CUDA agree on a `repro` unit, down to every op of a step's trace? (Issue 13's GPU check.)

Two questions, per model family (mlp, cnn, transformer) and optimizer (SGD-momentum, AdamW):
1. **The game's traces.** The dispute game narrows a disagreement to one op of one step's trace, by the
   tensor roots of each op's output. So a trace recorded on CUDA must equal, op by op, the trace of the
   same step recorded on CPU: the same op codes and the same output root for every op. For each of the
   first `STEPS` steps the bench records both, compares every op's output root and names the first op
   that differs (its index, code and attributes) if any.
2. **A unit trained on CUDA, replayed on CPU.** The solver commits a `repro` unit trained on CUDA; a CPU
   validator replays every segment and must accept it; the same unit trained on CPU must give the same
   commitment (checkpoint root, state hashes, transcript commits).

Needs a CUDA device; prints `{"cuda": false}` and exits 0 without one. One JSON line last.
Usage: .venv/bin/python bench/trace_devices.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from gensyn_py.proof.replay import UnitRef, replay_segment  # noqa: E402
from gensyn_py.proof.step_trace import trace_step  # noqa: E402
from gensyn_py.proof.unit import commit_segments  # noqa: E402
from gensyn_py.storage.local import LocalStore  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

STEPS = 3  # traced steps per case
UNIT_STEPS = 6
ADAMW = {"name": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
JOB = 1


def _spec(family: str, optimizer: str, steps: int, interval: int) -> Any:
    over: dict[str, Any] = {"mode": "repro", "steps_per_unit": steps, "checkpoint_interval": interval}
    if optimizer == "adamw":
        over["optimizer"] = ADAMW
    return tiny_spec(family, **over)


def compare_traces(family: str, optimizer: str) -> dict[str, Any]:
    """Trace the first STEPS steps on both devices; the first op whose output root differs, per step."""
    spec = _spec(family, optimizer, STEPS, STEPS)
    cpu = Trainer(spec, dataset_for(family), 0, 0, "cpu")
    gpu = Trainer(spec, dataset_for(family), 0, 0, "cuda")
    ops = 0
    first_diff: dict[str, Any] | None = None
    for step in range(STEPS):
        tc, tg = trace_step(cpu), trace_step(gpu)
        ops = len(tc.ops)
        if [op.code for op in tc.ops] != [op.code for op in tg.ops]:
            first_diff = first_diff or {"step": step, "what": "op sequence differs"}
        else:
            for i, (rc, rg) in enumerate(zip(tc.tensor_roots, tg.tensor_roots, strict=True)):
                if rc != rg:
                    op = tc.ops[i]
                    first_diff = first_diff or {"step": step, "op": i, "code": op.code, "attrs": repr(op.attrs),
                                                "inputs": list(op.inputs)}
                    break
            if tc.root != tg.root and first_diff is None:
                first_diff = {"step": step, "what": "trace roots differ with equal tensor roots"}
        cpu.train_step()
        gpu.train_step()
    return {"ops_per_step": ops, "traces_equal": first_diff is None, "first_difference": first_diff}


def cuda_unit_on_cpu(family: str, optimizer: str) -> dict[str, Any]:
    """Commit a unit trained on CUDA and one on CPU; replay the CUDA one's segments on CPU."""
    spec = _spec(family, optimizer, UNIT_STEPS, 2)
    with tempfile.TemporaryDirectory() as d:
        store = LocalStore(Path(d))
        t0 = time.perf_counter()
        gpu = commit_segments(Trainer(spec, dataset_for(family), 0, 0, "cuda"), store, JOB)
        cpu = commit_segments(Trainer(spec, dataset_for(family), 0, 0, "cpu"), store, JOB)
        same = (gpu.checkpoint_root == cpu.checkpoint_root
                and gpu.manifest.state_hashes == cpu.manifest.state_hashes
                and gpu.manifest.transcript_commits == cpu.manifest.transcript_commits)
        unit = UnitRef(JOB, 0, 0, gpu.checkpoint_root)
        verdicts = [replay_segment(spec, dataset_for(family), store, unit, gpu.manifest, j, "cpu")
                    for j in range(gpu.manifest.num_segments)]
        return {"commitment_cpu_eq_cuda": same, "cpu_replay_accepts_cuda_unit": all(v.accept for v in verdicts),
                "reasons": [v.reason for v in verdicts if not v.accept], "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    if not torch.cuda.is_available():
        print(json.dumps({"cuda": False}))
        return
    torch.use_deterministic_algorithms(True)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rows: dict[str, Any] = {}
    for family in ("mlp", "cnn", "transformer"):
        for optimizer in ("sgd", "adamw"):
            key = f"{family}/{optimizer}"
            rows[key] = {**compare_traces(family, optimizer), **cuda_unit_on_cpu(family, optimizer)}
            r = rows[key]
            print(f"{key:18s} ops/step {r['ops_per_step']:4d}  traces CPU==CUDA {r['traces_equal']!s:5s}  "
                  f"commitment CPU==CUDA {r['commitment_cpu_eq_cuda']!s:5s}  "
                  f"CPU replay accepts {r['cpu_replay_accepts_cuda_unit']!s:5s}"
                  + (f"  first difference {r['first_difference']}" if r["first_difference"] else ""))
    result = {
        "cuda": True, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "traces_cpu_eq_cuda_all": all(r["traces_equal"] for r in rows.values()),
        "repro_unit_cpu_eq_cuda_all": all(r["commitment_cpu_eq_cuda"] for r in rows.values()),
        "cpu_replays_cuda_units_all": all(r["cpu_replay_accepts_cuda_unit"] for r in rows.values()),
        "cases": rows,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
