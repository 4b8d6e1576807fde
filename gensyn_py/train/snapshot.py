"""Copies of live training state for a checkpoint, into an older snapshot's tensors where one is handed back.

A checkpoint's snapshot is taken on the training thread (`Trainer.state_dict`): every tensor copied, since the next
step changes the live ones in place. Fresh copies of a 115 MB state (the 10M LM with AdamW) take 40 ms, most of it
the page faults of new memory; into the tensors of a snapshot the checkpoint writer has finished with, 22 ms. The
writer hands such a snapshot back (`proof/unit.py`); `into` is it, or None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def copied(value: torch.Tensor, key: str, into: Mapping[str, torch.Tensor] | None) -> torch.Tensor:
    """A CPU float32 contiguous copy of `value`: into[key] where it has that shape (and is such a tensor), else new."""
    import torch

    old = into.get(key) if into is not None else None
    if (old is not None and old.shape == value.shape and old.dtype == torch.float32 and old.device.type == "cpu"
            and old.is_contiguous()):
        return old.copy_(value.detach())
    return value.detach().to("cpu", torch.float32, copy=True).contiguous()
