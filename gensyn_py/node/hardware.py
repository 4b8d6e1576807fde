"""A node measures its own hardware and declares it on registration.

- device class: `cuda` when PyTorch sees a GPU, else `cpu` (exact replay
  needs the same class, so the declaration must be true);
- memory: the GPU's memory, or the machine's physical memory, in MiB;
- throughput: sustained float32 matmul speed in MFLOP/s, from a short
  benchmark at the thread count jobs use (a job's `minThroughput` is in the
  same unit).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from gensyn_py.types import DEVICE_CLASSES, Hardware


@dataclass(frozen=True)
class HardwareProfile:
    device_class: str
    memory_mb: int
    throughput_mflops: int
    price_per_unit: int = 0  # wei a solver asks per unit (0 for validators and challengers)

    def declared(self) -> Hardware:
        """What the node declares to the registry (its `Hardware` struct)."""
        return Hardware(device_class=DEVICE_CLASSES[self.device_class], memory_mb=self.memory_mb,
                        throughput=self.throughput_mflops, price_per_unit=self.price_per_unit)

    def describe(self) -> str:
        return f"{self.device_class}, {self.memory_mb} MiB, {self.throughput_mflops / 1000:.1f} GFLOP/s"


def _physical_memory_mb() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20)
    except (ValueError, OSError, AttributeError):
        return 0


def measure(threads: int = 1, size: int = 256, seconds: float = 0.3, price_per_unit: int = 0) -> HardwareProfile:
    """Measure this machine: device class, memory, and float32 matmul MFLOP/s over about `seconds`."""
    import torch

    if torch.cuda.is_available():
        device, cls = "cuda", "cuda"
        memory = int(torch.cuda.get_device_properties(0).total_memory // 2**20)
    else:
        device, cls = "cpu", "cpu"
        memory = _physical_memory_mb()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        own = torch.Generator(device=device).manual_seed(0)  # not the process's generator (train/global_rng.py)
        a = torch.randn(size, size, device=device, generator=own)
        b = torch.randn(size, size, device=device, generator=own)
        torch.matmul(a, b)  # warm-up
        runs = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            torch.matmul(a, b)
            runs += 1
        if device == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    finally:
        torch.set_num_threads(previous)
    mflops = int(2 * size**3 * runs / elapsed / 1e6)
    return HardwareProfile(cls, memory, mflops, price_per_unit)
