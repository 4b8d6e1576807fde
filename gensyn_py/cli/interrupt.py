"""Waiting for Ctrl-C (or SIGTERM) in a process whose other threads serve (the explorer, `gensyn demo --keep`)."""

from __future__ import annotations

import signal
import time
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def wait_for_ctrl_c() -> None:
    """Block until SIGINT or SIGTERM, then raise KeyboardInterrupt in the main thread (handlers restored).

    The handlers are installed here, not left to Python's default: a process started with SIGINT ignored (a
    background job of a shell without job control) gets no KeyboardInterrupt from Python, and SIGTERM (what
    `kill`, systemd and docker send) should stop it as cleanly as Ctrl-C. The wait is in short sleeps: a wait
    with no timeout (``Event().wait()``) sleeps in a lock the signal may never interrupt when the kernel hands it
    to a serving thread (Python then only sets a flag, which the main thread checks when it next runs).
    """
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            time.sleep(0.5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
