"""Benchmark repro mode against standard PyTorch on CPU (same thread count, alternating runs).

Prints human-readable lines, then one JSON line last:
  repro_matmul_slowdown_cpu   1024^3 repro matmul / torch.matmul fp32          (target <= 10)
  repro_slowdown_cpu          repro MLP 64-128-10 batch-64 SGD-momentum step / standard (target <= 3)
  pairwise_matmul_slowdown_cpu_512   fixed pairwise tree of exact products, 512^3, / torch.matmul
Run: .venv/bin/python bench/repro.py   (about a minute)
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor

from gensyn_py.repro import ops as O
from gensyn_py.repro.matmul import repro_matmul

STAT = "min"


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


def alternate(f: Callable[[], object], g: Callable[[], object], reps: int) -> tuple[float, float]:
    """Seconds of f and g, run alternately after one warm-up each: the minimum over reps when
    STAT == "min" (robust on a shared, oversubscribed machine), else the median."""
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
    if STAT == "min":
        return min(tf), min(tg)
    return statistics.median(tf), statistics.median(tg)


def bench_matmul(n: int, reps: int) -> tuple[float, float]:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    return alternate(lambda: repro_matmul(a, b), lambda: torch.matmul(a, b), reps)


def bench_pairwise(n: int, reps: int) -> tuple[float, float]:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    return alternate(lambda: pairwise_matmul(a, b), lambda: torch.matmul(a, b), reps)


def bench_step(reps: int, d: int = 64, h: int = 128, c: int = 10, batch: int = 64) -> tuple[float, float]:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(batch, d, generator=g)
    y = torch.randint(0, c, (batch,), generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.ReLU(), torch.nn.Linear(h, c))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def standard() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    l1, l2 = model[0], model[2]
    assert isinstance(l1, torch.nn.Linear) and isinstance(l2, torch.nn.Linear)
    params = {
        "w1": l1.weight.detach().clone(),
        "b1": l1.bias.detach().clone().view(1, -1),
        "w2": l2.weight.detach().clone(),
        "b2": l2.bias.detach().clone().view(1, -1),
    }
    state = {"p": params, "b": {k: torch.zeros_like(v) for k, v in params.items()}}
    cfg = O.SgdConfig()

    def repro() -> None:
        _, state["p"], state["b"] = O.mlp_sgd_step(O.TORCH, state["p"], state["b"], x, y, cfg)

    return alternate(repro, standard, reps)


def main() -> None:
    threads = int(os.environ.get("REPRO_BENCH_THREADS", "1"))
    torch.set_num_threads(threads)
    t_r, t_t = bench_matmul(1024, 11)
    print(f"matmul 1024^3: repro {t_r * 1e3:.1f} ms, torch fp32 {t_t * 1e3:.1f} ms, x{t_r / t_t:.2f}")
    t_p, t_t5 = bench_pairwise(512, 3)
    print(f"pairwise tree 512^3: {t_p * 1e3:.1f} ms, torch fp32 {t_t5 * 1e3:.2f} ms, x{t_p / t_t5:.0f}")
    t_rr, t_r5 = bench_matmul(512, 25)
    print(f"matmul 512^3: repro {t_rr * 1e3:.1f} ms, torch fp32 {t_r5 * 1e3:.2f} ms, x{t_rr / t_r5:.2f}")
    s_r, s_t = bench_step(300)
    print(f"MLP step: repro {s_r * 1e6:.0f} us, standard {s_t * 1e6:.0f} us, x{s_r / s_t:.2f}")
    print(
        json.dumps(
            {
                "threads": threads,
                "repro_matmul_slowdown_cpu": round(t_r / t_t, 3),
                "repro_matmul_slowdown_cpu_512": round(t_rr / t_r5, 3),
                "pairwise_matmul_slowdown_cpu_512": round(t_p / t_t5, 1),
                "repro_slowdown_cpu": round(s_r / s_t, 3),
                "repro_step_ms": round(s_r * 1e3, 3),
                "standard_step_ms": round(s_t * 1e3, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
