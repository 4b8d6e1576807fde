"""Keep freed memory in the process heap, so that large tensors are not page-faulted in afresh on every op.

PyTorch's CPU tensors come from the C allocator. glibc serves every block above its mmap threshold (128 KiB to
32 MiB, adapted at run time) with a fresh mmap and unmaps it on free, so an op writing a 30 MB result touches
7,500 new pages, each a page fault, which costs several times the arithmetic (measured in this project: one
float64 add over 4M elements 25 ms with fresh pages, 4 ms into kept ones). The bit-exact mode
(`gensyn_py/repro`) makes several float64 temporaries per matmul, so it pays this most. Raising the mmap
threshold and never trimming the heap makes freed blocks serve the next allocation, as the caching allocators
that PyTorch's CPU performance guide recommends (jemalloc, tcmalloc) do, without loading another library.

The cost: the process keeps its peak heap after a step instead of returning it to the system between ops,
the usual trade of a training process (the CUDA caching allocator does the same). No result changes: only
where memory comes from. Elsewhere than glibc (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # glibc malloc.h: the free memory at the top of the heap before it is returned
M_MMAP_THRESHOLD = -3  # glibc malloc.h: the request size served by mmap instead of the heap
MMAP_THRESHOLD = 1 << 30  # only blocks of a GiB and more are mapped (and unmapped) on their own

_done: bool | None = None


def keep_freed_memory() -> bool:
    """Set the process's allocator as the module docstring says (once); True when it took effect."""
    global _done
    if _done is None:
        _done = False
        if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _done = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, -1))
    return _done
