"""The allocator setting of training processes: large blocks come from the kept heap, not fresh mappings."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from gensyn_py.train.allocator import keep_freed_memory

# glibc's mallinfo2 counts the blocks served by mmap (hblks); a 32 MB tensor is one of them by default
PROBE = """
import ctypes, torch
from gensyn_py.train.allocator import keep_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info

def mapped_blocks_while_holding():
    before = libc.mallinfo2().hblks
    x = torch.empty(4_000_000, dtype=torch.float64)
    held = libc.mallinfo2().hblks - before
    del x
    return held

default = mapped_blocks_while_holding()
assert keep_freed_memory()
print(default, mapped_blocks_while_holding())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_keep_freed_memory_takes_effect_once() -> None:
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True  # idempotent


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_a_large_tensor_comes_from_the_heap_after_the_setting() -> None:
    """Before: a 32 MB tensor is its own mapping (fresh pages on every allocation); after: a heap block,
    which a later allocation reuses. (The speed this buys is measured in bench/workloads.py.)"""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["1", "0"]
