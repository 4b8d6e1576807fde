"""Benchmark repro mode against standard PyTorch (same thread count, alternating runs in one process).

Prints human-readable lines, then one JSON line last:
  repro_slowdown_cpu          Trainer.train_step of the demo MLP (digits, 64-64-10, batch 32, SGD-momentum,
                              weight decay, cosine lr) in mode repro / the same in mode exact   (goal <= 2)
  repro_step_core_slowdown_cpu  the same two steps without the Trainer's batch selection: forward, loss,
                              backward, update on a fixed batch (repro program / torch autograd + SGD)
  repro_matmul_slowdown_cpu   1024^3 repro matmul / torch.matmul fp32                         (target <= 10)
  repro_matmul_slowdown_cpu_512, pairwise_matmul_slowdown_cpu_512 (a fixed pairwise tree, the rejected design)
  trace_*                     one traced demo step: ops, bytes of all tensors, time to record, to hash
                              (every tensor root and the sequence root), and to re-execute with the NumPy
                              reference
  repro_slowdown_gpu, cuda_matches_cpu   only when CUDA is available
Timings are the minimum over alternating runs (robust on a shared, oversubscribed machine); medians too.
Run: .venv/bin/python bench/repro.py   (about a minute; REPRO_BENCH_THREADS sets the thread count, default 1)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.matmul import repro_matmul
from gensyn_py.train.trainer import Trainer


def pairwise_matmul(a: Tensor, b: Tensor, rows: int = 8) -> Tensor:
    """C = A @ B by a fixed pairwise tree over k of exact (float64) products, each node rounded to
    float64, the root rounded to float32.  The order is fixed, so the bits are device-independent."""
    out = torch.empty(a.shape[0], b.shape[1], dtype=torch.float32)
    b64 = b.double()
    for i in range(0, a.shape[0], rows):
        p = a[i : i + rows].double()[:, :, None] * b64[None, :, :]  # (r, K, N), exact products
        while p.shape[1] > 1:
            if p.shape[1] % 2:
                p = torch.cat([p, torch.zeros_like(p[:, :1])], 1)
            p = torch.add(p[:, 0::2], p[:, 1::2])
        out[i : i + rows] = p[:, 0].float()
    return out


def alternate(f: Callable[[], object], g: Callable[[], object], reps: int, warmup: int = 3,
              on_pair: Callable[[int, float, float], None] | None = None) -> tuple[float, float, float]:
    """(min seconds of f, min seconds of g, median of the per-pair ratios f/g), run alternately after `warmup`
    runs of each; `on_pair(i, seconds of f, seconds of g)` after each timed pair."""
    for _ in range(warmup):
        f()
        g()
    tf: list[float] = []
    tg: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        tf.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        g()
        tg.append(time.perf_counter() - t0)
        if on_pair is not None:
            on_pair(len(tf) - 1, tf[-1], tg[-1])
    return min(tf), min(tg), statistics.median(a / b for a, b in zip(tf, tg, strict=True))


def bench_matmul(n: int, reps: int, device: str = "cpu") -> tuple[float, float, float]:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device)
    b = torch.randn(n, n, generator=g).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def rep() -> None:
        repro_matmul(a, b)
        sync()

    def std() -> None:
        torch.matmul(a, b)
        sync()

    return alternate(rep, std, reps)


def bench_pairwise(n: int, reps: int) -> tuple[float, float, float]:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    return alternate(lambda: pairwise_matmul(a, b), lambda: torch.matmul(a, b), reps)


def demo_trainers(device: str = "cpu") -> dict[str, Trainer]:
    from gensyn_py.sim.walkthrough import demo_spec_dict
    from gensyn_py.train.data import dataset_entry, digits
    from gensyn_py.train.spec import parse_spec

    train, _ = digits(image=False)
    base = demo_spec_dict(dataset_entry(train, train.to_bytes()))
    base.update(steps_per_unit=10**6, checkpoint_interval=10**6, threads=torch.get_num_threads())
    return {m: Trainer(parse_spec({**base, "mode": m}), train, 0, 0, device) for m in ("repro", "exact")}


def bench_trainer_step(reps: int, device: str = "cpu") -> tuple[float, float, float]:
    t = demo_trainers(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step(mode: str) -> Callable[[], None]:
        def run() -> None:
            t[mode].train_step()
            sync()

        return run

    return alternate(step("repro"), step("exact"), reps)


def bench_core_step(reps: int) -> tuple[float, float, float]:
    from gensyn_py.train.exact_step import ExactStep
    from gensyn_py.train.repro_step import ReproStep, train_step

    t = demo_trainers()
    r, e = t["repro"].engine, t["exact"].engine
    assert isinstance(r, ReproStep) and isinstance(e, ExactStep)
    x, y = t["repro"].batch(0)
    prog, lr = r.prog, t["repro"].learning_rate(50)
    state: dict[str, Any] = {"flat": r.flat.clone(), "opt": {}}
    opt = e.optimizer

    def repro() -> None:
        with torch.no_grad():
            _, state["flat"], state["opt"] = train_step(TORCH, prog, state["flat"], state["opt"], x, y, lr)

    def standard() -> None:
        opt.zero_grad(set_to_none=True)
        e.loss(x, y).backward()
        opt.step()

    return alternate(repro, standard, reps)


def bench_trace() -> dict[str, float]:
    from gensyn_py.proof.step_trace import trace_step

    r = demo_trainers()["repro"]
    r.run(1)
    t0 = time.perf_counter()
    tr = trace_step(r)
    t1 = time.perf_counter()
    root = tr.root
    t2 = time.perf_counter()
    bad = tr.check()
    t3 = time.perf_counter()
    assert bad is None and len(root) == 32
    return {"trace_ops": len(tr.ops), "trace_bytes": tr.size_bytes, "trace_serialized_bytes": len(tr.to_bytes()),
            "trace_record_ms": round((t1 - t0) * 1e3, 2), "trace_hash_ms": round((t2 - t1) * 1e3, 1),
            "trace_check_ms": round((t3 - t2) * 1e3, 1)}


def cuda_figures() -> dict[str, Any]:
    if not torch.cuda.is_available():
        return {}
    s_r, s_t, med = bench_trainer_step(100, "cuda")
    print(f"GPU trainer step: repro {s_r * 1e3:.2f} ms, exact {s_t * 1e3:.2f} ms, x{s_r / s_t:.2f} (median x{med:.2f})")
    m_r, m_t, _ = bench_matmul(4096, 5, "cuda")
    print(f"GPU matmul 4096^3: repro {m_r * 1e3:.1f} ms, torch fp32 {m_t * 1e3:.2f} ms, x{m_r / m_t:.1f}")
    from gensyn_py.train.repro_step import ReproStep

    cpu, gpu = demo_trainers("cpu")["repro"], demo_trainers("cuda")["repro"]
    same = cpu.run(5) == gpu.run(5)
    c, g = cpu.engine, gpu.engine
    same = same and isinstance(c, ReproStep) and isinstance(g, ReproStep) and bool(
        torch.equal(c.flat.view(torch.int32), g.flat.cpu().view(torch.int32)))
    print(f"5 repro steps on CUDA vs CPU: {'bit-identical' if same else 'DIFFERENT'}")
    return {"repro_slowdown_gpu": round(s_r / s_t, 3), "repro_matmul_slowdown_gpu": round(m_r / m_t, 3),
            "cuda_matches_cpu": same}


def main() -> None:
    threads = int(os.environ.get("REPRO_BENCH_THREADS", "1"))
    torch.set_num_threads(threads)
    s_r, s_t, s_med = bench_trainer_step(400)
    torch.set_num_threads(threads)  # the Trainer sets the spec's thread count; keep ours
    print(f"demo MLP trainer step: repro {s_r * 1e6:.0f} us, exact {s_t * 1e6:.0f} us, x{s_r / s_t:.2f} "
          f"(median of pairs x{s_med:.2f})")
    c_r, c_t, c_med = bench_core_step(400)
    print(f"demo MLP core step (fixed batch): repro {c_r * 1e6:.0f} us, standard {c_t * 1e6:.0f} us, "
          f"x{c_r / c_t:.2f} (median x{c_med:.2f})")
    t_r, t_t, _ = bench_matmul(1024, 9)
    print(f"matmul 1024^3: repro {t_r * 1e3:.1f} ms, torch fp32 {t_t * 1e3:.1f} ms, x{t_r / t_t:.2f}")
    t_rr, t_r5, _ = bench_matmul(512, 21)
    print(f"matmul 512^3: repro {t_rr * 1e3:.1f} ms, torch fp32 {t_r5 * 1e3:.2f} ms, x{t_rr / t_r5:.2f}")
    t_p, t_t5, _ = bench_pairwise(512, 3)
    print(f"pairwise tree 512^3: {t_p * 1e3:.1f} ms, torch fp32 {t_t5 * 1e3:.2f} ms, x{t_p / t_t5:.0f}")
    trace = bench_trace()
    print("trace of one demo step: " + ", ".join(f"{k} {v}" for k, v in trace.items()))
    gpu = cuda_figures()
    print(json.dumps({
        "threads": threads,
        "repro_slowdown_cpu": round(s_r / s_t, 3),
        "repro_slowdown_cpu_median": round(s_med, 3),
        "repro_step_ms": round(s_r * 1e3, 3),
        "exact_step_ms": round(s_t * 1e3, 3),
        "repro_step_core_slowdown_cpu": round(c_r / c_t, 3),
        "repro_matmul_slowdown_cpu": round(t_r / t_t, 3),
        "repro_matmul_slowdown_cpu_512": round(t_rr / t_r5, 3),
        "pairwise_matmul_slowdown_cpu_512": round(t_p / t_t5, 1),
        **trace,
        **gpu,
    }))


if __name__ == "__main__":
    main()
