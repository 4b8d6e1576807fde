"""The exact float32 matmul on a GPU: the int8 residue path (tensor cores) against the float64 path and
against torch's float32 matmul, with the bits checked against the CPU.

For square products n^3 (and one with K = 2**14) it times, on CUDA:
  torch     torch.matmul in float32 (TF32 off: IEEE float32, the baseline the issue names)
  float64   the rule through two sliced float64 GEMMs (matmul.py's path on CPUs)
  int8      the rule through eight int8 GEMMs on residues (crt_matmul.py)
and checks that both exact paths give the CPU's bits.  It also splits the int8 path into its parts
(residues, GEMMs, epilogue) at the largest size, and times the first call (torch.compile).

Needs a CUDA device; prints `{"cuda": false}` and exits 0 without one.  One JSON line last:
  repro_matmul_slowdown_gpu          4096^3 exact matmul (the default path) / torch float32
  repro_matmul_slowdown_gpu_float64  the same through the float64 path
  crt_crossover_work                 the smallest M*K*N measured where int8 beats float64
Usage: .venv/bin/python bench/gpu_matmul.py
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from gensyn_py.repro import crt_matmul as C  # noqa: E402
from gensyn_py.repro import matmul as M  # noqa: E402

SIZES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
         (1024, 16384, 1024)]


def cuda_time(f: Callable[[], Any], reps: int) -> float:
    """Median seconds of f over reps (CUDA events), after two warm-ups."""
    for _ in range(2):
        f()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def forced(path: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def wanted(a: torch.Tensor, b: torch.Tensor) -> bool:
        return path == "int8"

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        saved = M._crt_wanted
        M._crt_wanted = wanted
        try:
            return M.repro_matmul(a, b)
        finally:
            M._crt_wanted = saved

    return run


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    return bool(torch.equal(x.cpu().view(torch.int32), y.cpu().view(torch.int32)))


def parts(n: int) -> dict[str, float]:
    """Milliseconds of the int8 path's parts at n^3."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(n, n, generator=g).cuda(), torch.randn(n, n, generator=g).cuda()
    prep = C._kernel("prepare", C.prepare, True)
    (xa, ua), (xbt, ubt) = prep(a), prep(b.t().contiguous())
    p = C.residue_products(xa, xbt)
    epi = C._kernel("epilogue", C._epilogue, True)
    return {"prepare_ms": cuda_time(lambda: (prep(a), prep(b.t().contiguous())), 10) * 1e3,
            "gemms_ms": cuda_time(lambda: C.residue_products(xa, xbt), 10) * 1e3,
            "epilogue_ms": cuda_time(lambda: epi(p, ua, ubt.t()), 10) * 1e3}


def int_mm_layouts(n: int) -> dict[str, float]:
    """TOPS of one int8 GEMM n^3 (torch._int_mm) with B row-major against B K-contiguous."""
    x = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    y = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
    ops = 2 * n**3 / 1e12
    return {"int_mm_tops_b_row_major": ops / cuda_time(lambda: torch._int_mm(x, y), 10),
            "int_mm_tops_b_k_contiguous": ops / cuda_time(lambda: torch._int_mm(x, y.t()), 10)}


def large_mlp(hidden: int = 2048, batch: int = 1024, steps: int = 3) -> dict[str, Any]:
    """A repro MLP large enough for its matmuls to take the int8 path (batch x hidden x hidden), AdamW:
    the state after `steps` steps on CUDA against CPU (bit equality), and the step time of both modes on
    CUDA (the repro slowdown where the matmuls, not kernel launches, dominate)."""
    from gensyn_py.proof.state import state_hash
    from gensyn_py.train.trainer import Trainer
    from tests.unit.trainkit import dataset_for, tiny_spec

    adamw = {"name": "adamw", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}

    def trainer(mode: str, device: str) -> Trainer:
        spec = tiny_spec("mlp", mode=mode, optimizer=adamw, batch_size=batch, steps_per_unit=10**6,
                         checkpoint_interval=10**6, model={"family": "mlp", "sizes": {"hidden": hidden}})
        return Trainer(spec, dataset_for("mlp"), 0, 0, device)

    cpu, gpu = trainer("repro", "cpu"), trainer("repro", "cuda")
    cpu.run(steps)
    gpu.run(steps)
    equal = state_hash(cpu.state_dict()) == state_hash(gpu.state_dict())
    ms = {}
    for mode in ("repro", "exact"):
        t = gpu if mode == "repro" else trainer("exact", "cuda")
        ms[mode] = cuda_time(t.train_step, 10) * 1e3
    print(f"MLP hidden {hidden}, batch {batch}, AdamW on CUDA: repro {ms['repro']:.2f} ms, exact "
          f"{ms['exact']:.2f} ms (x{ms['repro'] / ms['exact']:.2f}); state after {steps} steps CPU == CUDA: {equal}")
    return {"large_mlp_repro_slowdown_gpu": round(ms["repro"] / ms["exact"], 3), "large_mlp_cpu_eq_cuda": equal,
            "large_mlp_repro_step_ms": round(ms["repro"], 3), "large_mlp_exact_step_ms": round(ms["exact"], 3)}


def main() -> None:
    if not torch.cuda.is_available():
        print(json.dumps({"cuda": False}))
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    g = torch.Generator().manual_seed(0)
    a0, b0 = torch.randn(512, 512, generator=g).cuda(), torch.randn(512, 512, generator=g).cuda()
    t0 = time.perf_counter()
    forced("int8")(a0, b0)
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - t0
    print(f"first int8-path call (torch.compile of residues and epilogue): {first_call_s:.1f} s")
    rows: list[dict[str, Any]] = []
    for m, k, n in SIZES:
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        cpu = M.repro_matmul(a, b)
        ga, gb = a.cuda(), b.cuda()
        reps = 20 if m * k * n <= 2**30 else 8
        t, f64, i8, default = (cuda_time(functools.partial(f, ga, gb), reps)
                               for f in (torch.matmul, forced("float64"), forced("int8"), M.repro_matmul))
        eq = same_bits(forced("int8")(ga, gb), cpu) and same_bits(forced("float64")(ga, gb), cpu)
        row = {"m": m, "k": k, "n": n, "torch_ms": t * 1e3, "float64_ms": f64 * 1e3, "int8_ms": i8 * 1e3,
               "default_ms": default * 1e3, "bits_equal_cpu": eq}
        rows.append(row)
        print(f"{m}x{k}x{n}: torch fp32 {t * 1e3:.3f} ms | exact: float64 {f64 * 1e3:.3f} ms (x{f64 / t:.2f}), "
              f"int8 {i8 * 1e3:.3f} ms (x{i8 / t:.2f}), default {default * 1e3:.3f} ms (x{default / t:.2f}) | "
              f"bits equal CPU: {eq}")
    split = {**parts(4096), **int_mm_layouts(4096)}
    print("int8 path at 4096^3: " + ", ".join(f"{k} {v:.3f}" for k, v in split.items()))
    mlp = large_mlp()
    big = next(r for r in rows if r["m"] == r["k"] == r["n"] == 4096)
    wins = [r["m"] * r["k"] * r["n"] for r in rows if r["int8_ms"] < r["float64_ms"]]
    print(json.dumps({
        "cuda": True, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "repro_matmul_slowdown_gpu": round(big["default_ms"] / big["torch_ms"], 3),
        "repro_matmul_slowdown_gpu_int8": round(big["int8_ms"] / big["torch_ms"], 3),
        "repro_matmul_slowdown_gpu_float64": round(big["float64_ms"] / big["torch_ms"], 3),
        "crt_crossover_work": min(wins) if wins else None,
        "crt_first_call_s": round(first_call_s, 2),
        "bits_equal_cpu": all(r["bits_equal_cpu"] for r in rows),
        "int8_parts_4096_ms": {k: round(v, 3) for k, v in split.items()},
        **mlp,
        "rows": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
    }))


if __name__ == "__main__":
    main()
