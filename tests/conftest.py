"""Shared fixtures: a real anvil node, the real compiled contracts, funded accounts.

Also the end-of-run check that the suite leaves no process behind: at session start a
unique marker goes into os.environ, so every process the tests start (anvil, js-ipfs,
role daemons, brownie, and their children) inherits it; at session end any live
process still carrying it fails the run. Under pytest-xdist (`make test` runs two
workers) the workers share the controller's marker and the controller checks once,
after every worker has exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode
from gensyn_py.devnet.compiler import compile_contracts

SESSION_MARKER = "GENSYN_TEST_SESSION"
# How long processes stopped at the very end (session fixtures) get to finish exiting.
LEFTOVER_GRACE_S = 5.0


@pytest.fixture(scope="session")
def anvil_node() -> Iterator[AnvilNode]:
    with AnvilNode() as node:
        yield node


@pytest.fixture(scope="session")
def anvil_url(anvil_node: AnvilNode) -> str:
    return anvil_node.url


@pytest.fixture(scope="session")
def w3(anvil_url: str) -> Web3:
    web3 = Web3(Web3.HTTPProvider(anvil_url, request_kwargs={"timeout": 30}))
    assert web3.is_connected()
    return web3


@pytest.fixture(scope="session")
def accounts() -> list[LocalAccount]:
    return [Account.from_key(k) for k in DEV_KEYS]


@pytest.fixture(scope="session")
def artifacts() -> dict[str, dict[str, Any]]:
    return compile_contracts()


@pytest.fixture
def snapshot(w3: Web3) -> Iterator[None]:
    """Each test starts from the chain state before it and leaves nothing behind."""
    snap = w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    yield
    w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


# -- nothing left running ----------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces): [state, ppid, ...]."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()


def _self_and_ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 0 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(_stat_fields(pid)[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _command_line(pid: int) -> str:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return " ".join(arg.decode(errors="replace") for arg in raw.rstrip(b"\0").split(b"\0"))


def processes_with_marker(value: str, name: str = SESSION_MARKER) -> dict[int, str]:
    """Live processes whose environment holds `name=value`, as pid -> full command line.

    Skips this process and its ancestors (they may carry the marker without being
    started by the tests) and zombies (already dead, waiting to be reaped).
    """
    needle = f"\0{name}={value}\0".encode()
    skip = _self_and_ancestors()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        pid = int(entry.name)
        try:
            if needle not in b"\0" + (entry / "environ").read_bytes() or _stat_fields(pid)[0] in "ZX":
                continue
            found[pid] = _command_line(pid)
        except (OSError, ValueError, IndexError):  # exited while we looked, or not ours to read
            continue
    return found


def leftover_processes(value: str, grace: float = LEFTOVER_GRACE_S, name: str = SESSION_MARKER) -> dict[int, str]:
    """processes_with_marker, after giving stragglers up to `grace` seconds to exit."""
    deadline = time.monotonic() + grace
    while True:
        found = processes_with_marker(value, name)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)  # polling for the stragglers' exit, bounded by the deadline


def _is_xdist_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under pytest-xdist the controller's session starts before it spawns its workers (xdist's own hook is
    # trylast), so the workers inherit its marker: one marker for the whole run, checked once at its end.
    if not (_is_xdist_worker() and os.environ.get(SESSION_MARKER)):
        os.environ[SESSION_MARKER] = uuid.uuid4().hex


@pytest.hookimpl(trylast=True)  # after xdist's session end, which waits for its workers to exit
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if anything a test started is still alive; then kill it so nothing lingers.

    A worker does not check: its neighbour's processes carry the same marker and may still be running."""
    if _is_xdist_worker():
        return
    value = os.environ.get(SESSION_MARKER)
    if not value or not Path("/proc").is_dir():
        return
    leftovers = leftover_processes(value)
    if not leftovers:
        return
    lines = [f"  pid {pid}: {cmd}" for pid, cmd in sorted(leftovers.items())]
    message = "\n".join([
        f"{len(leftovers)} process(es) started by this test session still running {LEFTOVER_GRACE_S:g}s after it "
        f"ended (environment holds {SESSION_MARKER}={value}); a test or fixture did not stop them:",
        *lines,
        "They are killed now (SIGKILL) so nothing lingers; the run fails.",
    ])
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_sep("=", "processes left running", red=True)
        reporter.write_line(message)
    else:
        print(message)
    for pid in leftovers:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
