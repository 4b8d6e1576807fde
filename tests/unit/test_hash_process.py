"""State hashes in the helper process (`proof/hash_process.py`): the same hash as on the thread, a fallback
when the helper is broken, and no helper left behind when its parent is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensyn_py.proof import hash_process
from gensyn_py.proof.state import encode_state, state_hash_of_bytes
from gensyn_py.sim.localnet import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _state() -> bytes:
    import torch

    rng = np.random.default_rng(3)
    return encode_state({"model/w": torch.from_numpy(rng.standard_normal((64, 33)).astype(np.float32)),
                         "rng": torch.arange(16, dtype=torch.uint8), "cursor": torch.tensor([0, 0, 5])})


def test_the_helper_hashes_as_the_thread_does() -> None:
    data = _state()
    try:
        assert hash_process.state_hash_beside(data) == state_hash_of_bytes(data)
    finally:
        hash_process.shutdown()


def test_a_broken_helper_falls_back_to_the_thread(caplog: pytest.LogCaptureFixture) -> None:
    data = _state()
    try:
        hash_process.state_hash_beside(data)  # the helper runs now
        pool = hash_process._worker()
        for proc in list(pool._processes.values()):
            proc.kill()
            proc.join()
        assert hash_process.state_hash_beside(data) == state_hash_of_bytes(data)  # on this thread
        assert "hashing on this thread" in caplog.text
        assert hash_process._worker() is not pool  # the next checkpoint gets a fresh helper
        assert hash_process.state_hash_beside(data) == state_hash_of_bytes(data)
    finally:
        hash_process.shutdown()


def test_a_parent_killed_with_sigkill_leaves_no_helper() -> None:
    script = ("from gensyn_py.proof import hash_process\n"
              "from tests.unit.test_hash_process import _state\n"
              "hash_process.state_hash_beside(_state())\n"
              "print(*hash_process._worker()._processes, flush=True)\n"
              "import time\n"
              "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        (helper,) = (int(pid) for pid in parent.stdout.readline().split())
        assert Path(f"/proc/{helper}").exists()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        wait_until(lambda: not Path(f"/proc/{helper}").exists() or _zombie(helper), 15, "the helper to exit")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except OSError:
        return True
