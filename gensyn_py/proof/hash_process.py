"""State hashes computed in a helper process, so that hashing a checkpoint runs beside training.

Used only where the C Merkle module (`crypto/_merkle_native.c`) was not built: with it, the checkpoint writer
hashes on its own thread with the GIL released, which is cheaper (no pipe copy, no process waiting for a core:
`proof/unit.py`, `_CheckpointWriter._hash`).

The state hash (``proof/state.py``) is keccak over every 32-byte chunk of a checkpoint: a Python loop
that holds the GIL for its whole run (0.3 s for a 3.6 MB state on these cores). On a thread it stops the
training thread's Python just as long, so checkpoints cost their full hashing time; in a process it costs
the training only the copy of the bytes to the pipe.

One worker per process, started on first use with ``spawn`` (never ``fork``: torch's thread pools do not
survive a fork), and reused by every unit after. The worker exits on its own when its parent is gone, however
the parent ended (a daemon killed with SIGKILL included). If the worker cannot start or dies, hashing falls
back to the calling thread: a checkpoint is never lost to the helper.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from gensyn_py.proof.state import state_hash_of_bytes

log = logging.getLogger(__name__)

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


PARENT_POLL_S = 0.5


def _exit_with(parent: int) -> None:
    """In the worker: a daemon thread that ends the process once `parent` is no longer its parent."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="gensyn-parent-watch", daemon=True).start()


def _worker() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_exit_with,
                                        initargs=(os.getpid(),))
        return _pool


def _drop(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


def state_hash_beside(data: bytes) -> bytes:
    """``state_hash_of_bytes(data)``, computed in the helper process (in this thread if the helper fails)."""
    pool = _worker()
    try:
        return pool.submit(state_hash_of_bytes, data).result()
    except (BrokenProcessPool, OSError, RuntimeError) as e:
        log.warning("state-hash helper process failed (%r); hashing on this thread", e)
        _drop(pool)
        return state_hash_of_bytes(data)


def shutdown() -> None:
    """Stop the helper process (it is also stopped at interpreter exit)."""
    with _lock:
        pool = _pool
    if pool is not None:
        _drop(pool)
