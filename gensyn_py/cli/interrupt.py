"""Waiting for Ctrl-C in a process whose other threads serve (the explorer, `gensyn demo --keep`)."""

from __future__ import annotations

import time


def wait_for_ctrl_c() -> None:
    """Block until SIGINT raises KeyboardInterrupt in the main thread.

    A wait with no timeout (``Event().wait()``) sleeps in a lock the signal may never interrupt: when the kernel
    hands SIGINT to a serving thread, Python only sets a flag, which the main thread checks when it next runs.
    Short sleeps make it run at least twice a second.
    """
    while True:
        time.sleep(0.5)
