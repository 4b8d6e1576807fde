"""Process-wide settings for mode `exact`: deterministic kernels, fixed threads, no TF32."""

from __future__ import annotations

import os


def pick_device(device: str | None) -> str:
    """The requested device, or CUDA when present else CPU."""
    import torch

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def configure_exact(threads: int) -> None:
    """Make every later op deterministic with `threads` intra-op threads."""
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
