"""The end-of-run leftover check (tests/conftest.py) sees what the tests started, and only that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.conftest import SESSION_MARKER, leftover_processes, processes_with_marker

ROOT = Path(__file__).resolve().parents[2]


# Popen returns once exec has begun, but the kernel publishes the new environment (/proc/PID/environ) a little
# later, while loading the program; a child that prints a line has certainly got that far.
UP = "import sys; print('up', flush=True); "


def test_finds_a_live_child_with_the_marker_and_forgets_it_once_killed() -> None:
    value = uuid.uuid4().hex  # not the session's own, so the session check never counts this child
    child = subprocess.Popen(
        [sys.executable, "-c", UP + "sys.stdin.read()", "leftover-probe"],
        env={**os.environ, SESSION_MARKER: value}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        found = leftover_processes(value, grace=0)
        assert list(found) == [child.pid]
        assert found[child.pid].endswith("leftover-probe"), found  # the full command line
    finally:
        child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
    assert leftover_processes(value, grace=0) == {}


def test_a_straggler_that_exits_within_the_grace_is_not_reported() -> None:
    value = uuid.uuid4().hex
    child = subprocess.Popen(
        [sys.executable, "-c", UP + "import time; time.sleep(0.5)"], env={**os.environ, SESSION_MARKER: value},
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        assert child.pid in processes_with_marker(value)
        # The child is ours, so it stays a zombie (skipped) until reaped; the grace outlasts its 0.5 s.
        assert leftover_processes(value, grace=10) == {}
    finally:
        child.kill()
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


def test_ignores_the_current_process_and_its_ancestors() -> None:
    """A process carrying the marker, and its parent carrying it too, never report themselves."""
    value = uuid.uuid4().hex
    probe = (
        "import json; from tests.conftest import processes_with_marker; "
        f"print(json.dumps(processes_with_marker({value!r})))"
    )
    parent = f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {probe!r}]).returncode)"
    out = subprocess.run(
        [sys.executable, "-c", parent], cwd=ROOT, env={**os.environ, SESSION_MARKER: value},
        capture_output=True, text=True, timeout=120, check=True,
    )
    assert json.loads(out.stdout) == {}
    assert processes_with_marker(value) == {}
