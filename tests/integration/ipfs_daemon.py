"""Start a private js-ipfs daemon from node_modules for the integration tests.

The repo lives in a temporary IPFS_PATH, initialised with the ``test`` profile
(no bootstrap peers, MDNS off); API, Gateway, RPC and Swarm are bound to free
127.0.0.1 ports and the daemon runs ``--offline``, so it never touches the network.
On Node < 22, js-ipfs needs ``Promise.withResolvers``: the polyfill in
gensyn_py/storage/ipfs_polyfill.cjs is loaded through NODE_OPTIONS=--require.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import requests

from gensyn_py.errors import ToolchainError

REPO_ROOT = Path(__file__).resolve().parents[2]
JSIPFS = REPO_ROOT / "node_modules" / ".bin" / "jsipfs"
POLYFILL = REPO_ROOT / "gensyn_py" / "storage" / "ipfs_polyfill.cjs"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class JsIpfsDaemon:
    """``with JsIpfsDaemon() as d: d.api_url`` — a throwaway offline js-ipfs node."""

    def __init__(self, start_timeout: float = 60.0):
        self.start_timeout = start_timeout
        self.api_url = ""
        self.startup_seconds = 0.0
        self._tmp: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    def _env(self, ipfs_path: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["IPFS_PATH"] = str(ipfs_path)
        env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {POLYFILL}".strip()
        env.pop("IPFS_API", None)
        return env

    def log_tail(self, n: int = 4000) -> str:
        if self._log is None or not self._log.exists():
            return ""
        return self._log.read_text(errors="replace")[-n:]

    def start(self) -> JsIpfsDaemon:
        if not JSIPFS.exists():
            raise ToolchainError(f"{JSIPFS} not found: run `npm ci` (package.json pins ipfs 0.66.1)")
        if shutil.which("node") is None:
            raise ToolchainError("node is not on PATH; js-ipfs needs Node.js")
        began = time.monotonic()
        self._tmp = tempfile.mkdtemp(prefix="gensyn-ipfs-")
        ipfs_path = Path(self._tmp) / "repo"
        env = self._env(ipfs_path)
        init = subprocess.run(
            [str(JSIPFS), "init", "--profile", "test"],
            env=env,
            capture_output=True,
            timeout=self.start_timeout,
            check=False,
        )
        if init.returncode != 0:
            raise ToolchainError(
                f"jsipfs init failed ({init.returncode}): "
                f"{(init.stdout + init.stderr).decode(errors='replace')[-2000:]}"
            )
        config_path = ipfs_path / "config"
        config = json.loads(config_path.read_text())
        api_port = _free_port()
        addresses = config.setdefault("Addresses", {})
        addresses["API"] = f"/ip4/127.0.0.1/tcp/{api_port}"
        addresses["Gateway"] = f"/ip4/127.0.0.1/tcp/{_free_port()}"
        addresses["RPC"] = f"/ip4/127.0.0.1/tcp/{_free_port()}"
        addresses["Swarm"] = [f"/ip4/127.0.0.1/tcp/{_free_port()}"]
        addresses["Delegates"] = []
        config["Bootstrap"] = []
        config.setdefault("Discovery", {}).setdefault("MDNS", {})["Enabled"] = False
        config["Discovery"].setdefault("webRTCStar", {})["Enabled"] = False
        config_path.write_text(json.dumps(config, indent=2))

        self._log = Path(self._tmp) / "daemon.log"
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                [str(JSIPFS), "daemon", "--offline"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.api_url = f"http://127.0.0.1:{api_port}"
        deadline = began + self.start_timeout
        delay = 0.05
        while True:
            rc = self._proc.poll()
            if rc is not None:
                tail = self.log_tail()
                self.stop()
                raise ToolchainError(f"jsipfs daemon exited with {rc}:\n{tail}")
            try:
                resp = requests.post(f"{self.api_url}/api/v0/id", timeout=2)
                if resp.status_code == 200 and "ID" in resp.json():
                    break
            except (requests.RequestException, ValueError):
                pass
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise ToolchainError(
                    f"jsipfs API at {self.api_url} did not answer within {self.start_timeout}s:\n{tail}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> JsIpfsDaemon:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
