"""A node's replay class: what decides the bits of an `exact`-mode training step, measured and hashed.

`exact` mode runs stock torch kernels, which are bit-exact only between machines that pick the same kernels
and run them the same way. What decides that, and so what the description holds:

- ``torch``: the version and build (``torch.__version__``, its git commit), the BLAS/LAPACK it was built with
  (``BLAS_INFO``/``LAPACK_INFO`` of ``torch.__config__.show()``) and the CPU kernel level it dispatches to
  (``torch.backends.cpu.get_cpu_capability()``: DEFAULT, AVX2, AVX512...);
- ``device``: ``cpu`` or ``cuda``;
- on a CPU: the CPU model and the ISA features that change which kernels run (avx*, fma, amx*, from
  ``/proc/cpuinfo``);
- on a GPU: its name and compute capability, the CUDA runtime torch was built for, cuDNN's version and the
  driver version (from ``nvidia-smi`` when it is installed; ``unknown`` otherwise: nothing is downloaded).

The description is canonical JSON (sorted keys, no spaces) of those string fields; the class id is its
keccak256, the same hash `NodeRegistry.setReplayClass` computes on chain, so the `ReplayClassSet` event holds
the preimage of every class id. `repro` mode (the project's own kernels) is bit-exact across classes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gensyn_py.crypto.hashing import keccak256

SCHEMA = "gensyn-replay-class/1"
# CPU features that change which kernels torch/oneDNN/MKL run (and so the order of float operations).
ISA_FLAGS = frozenset({
    "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve",
    "sve2",
})
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ReplayClass:
    """A measured replay class: its fields (all strings) and, derived from them, description and id."""

    fields: Mapping[str, str]

    @property
    def description(self) -> str:
        """Canonical JSON of the fields: what `setReplayClass` takes and the `ReplayClassSet` event shows."""
        return json.dumps(dict(self.fields), sort_keys=True, separators=(",", ":"))

    @property
    def class_id(self) -> bytes:
        """keccak256 of the description (bytes32), as `NodeRegistry.setReplayClass` computes it."""
        return class_id_of(self.description)

    def summary(self) -> str:
        """One line for logs: the fields that tell classes apart at a glance."""
        f = self.fields
        if f.get("device") == "cuda":
            hw = f"{f.get('gpu', UNKNOWN)} sm_{f.get('capability', '?')}, driver {f.get('driver', UNKNOWN)}, " \
                 f"cuda {f.get('cuda', UNKNOWN)}, cudnn {f.get('cudnn', UNKNOWN)}"
        else:
            hw = f"{f.get('cpu_model', UNKNOWN)} [{f.get('cpu_flags', '')}]"
        return f"{short(self.class_id)}: torch {f.get('torch', UNKNOWN)} ({f.get('blas', UNKNOWN)}, " \
               f"{f.get('cpu_capability', UNKNOWN)}), {f.get('device', UNKNOWN)}: {hw}"


def class_id_of(description: str) -> bytes:
    """The class id of a description; 32 zero bytes for "" (no class)."""
    return keccak256(description.encode()) if description else bytes(32)


def short(class_id: bytes) -> str:
    """The first 6 bytes of a class id in hex, for tables and logs."""
    return "0x" + class_id[:6].hex()


def measure(device: str | None = None, overrides: Mapping[str, str] | None = None,
            cpuinfo: Path = Path("/proc/cpuinfo")) -> ReplayClass:
    """Measure this machine's replay class for `device` ("cpu" or "cuda"; default: cuda when torch sees one).
    `overrides` replace measured fields (tests; an operator pinning a field `unknown` here)."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    fields = {"schema": SCHEMA, "device": device, **torch_fields()}
    fields.update(cuda_fields() if device == "cuda" else cpu_fields(_read(cpuinfo)))
    fields.update(overrides or {})
    return ReplayClass(fields)


def torch_fields() -> dict[str, str]:
    """The torch build: version, commit, BLAS/LAPACK and the CPU kernel level it dispatches to."""
    import torch

    config = build_settings(torch.__config__.show())
    return {
        "torch": str(torch.__version__),
        "torch_commit": str(getattr(torch.version, "git_version", UNKNOWN)),
        "blas": config.get("BLAS_INFO", UNKNOWN),
        "lapack": config.get("LAPACK_INFO", UNKNOWN),
        "cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
    }


def build_settings(config: str) -> dict[str, str]:
    """The `KEY=value` pairs of the "Build settings:" line of `torch.__config__.show()`."""
    for line in config.splitlines():
        line = line.strip().removeprefix("- ")
        if line.startswith("Build settings:"):
            pairs = (p.strip().split("=", 1) for p in line.removeprefix("Build settings:").split(", "))
            return {p[0]: p[1].strip().rstrip(",") for p in pairs if len(p) == 2}
    return {}


def cpu_fields(cpuinfo: str) -> dict[str, str]:
    """CPU model and the kernel-relevant ISA flags (sorted) from the text of /proc/cpuinfo."""
    model, flags = UNKNOWN, set[str]()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "CPU part") and model == UNKNOWN:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split()) & ISA_FLAGS
    return {"cpu_model": model, "cpu_flags": ",".join(sorted(flags))}


def cuda_fields(index: int = 0) -> dict[str, str]:
    """GPU name and compute capability, CUDA runtime, cuDNN and driver versions."""
    import torch

    major, minor = torch.cuda.get_device_capability(index)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "gpu": torch.cuda.get_device_name(index),
        "capability": f"{major}.{minor}",
        "cuda": str(torch.version.cuda or UNKNOWN),
        "cudnn": str(cudnn) if cudnn is not None else UNKNOWN,
        "driver": driver_version(index),
    }


def driver_version(index: int = 0) -> str:
    """The NVIDIA driver version from `nvidia-smi` when it is installed, else `unknown` (nothing is fetched)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return UNKNOWN
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader", f"--id={index}"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return out.strip().splitlines()[0] if out.strip() else UNKNOWN


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
