"""A repro step allocates without torch's NaN fill of fresh memory.

With ``torch.use_deterministic_algorithms(True)`` (mode exact's setting, process-wide: ``train/determinism.py``)
torch fills every fresh tensor's memory with NaN, or the largest integer, before handing it out, so that an op
that reads memory it never wrote reads the same values every run. Mode repro does not lean on that: each of its
results is defined bit for bit by its own ops (``repro/ops.py``, the C passes), which write every element they
return. The fill is then a pass over every output for nothing: on the 10M-parameter LM's repro step it was 1,852
fills a step, among them the three AdamW buffers of 10M entries each (``bench/workloads.py``).

The switch is process-wide, so it is counted: the first step to enter turns the fill off, the last to leave
restores the setting it found (a validator may replay in several threads). Mode exact's steps in other threads
meanwhile run without the fill too; it matters only to an op that reads memory it did not write.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_inside = 0
_saved = True


@contextmanager
def unfilled_memory() -> Iterator[None]:
    """Run the body with ``torch.utils.deterministic.fill_uninitialized_memory`` off."""
    import torch.utils.deterministic

    det: Any = torch.utils.deterministic  # the switch is not in torch's type stubs
    global _inside, _saved
    with _lock:
        if _inside == 0:
            _saved = det.fill_uninitialized_memory
            det.fill_uninitialized_memory = False
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                det.fill_uninitialized_memory = _saved
