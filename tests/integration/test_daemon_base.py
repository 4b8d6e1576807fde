"""The daemon base against a real anvil, run as a real process.

A `TickerDaemon` acknowledges every `Ticked` event of the `Ticker` fixture
contract with one transaction, through `Daemon.once()`. The contract counts
acknowledgements per id without reverting, so any repeated action is visible
on-chain. The tests kill -9 the daemon mid-way and restart it, stop it with
SIGTERM mid-batch, scrape its metrics, and take its RPC node away for a while.

Run as a module (`python -m tests.integration.test_daemon_base ...`) it is the
daemon process itself.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from web3 import Web3
from web3.contract import Contract

from gensyn_py.chain.client import connect
from gensyn_py.chain.events import EventRecord
from gensyn_py.chain.nonce import NonceManager
from gensyn_py.chain.tx import TxSender
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode
from gensyn_py.devnet.compiler import compile_contracts
from gensyn_py.node.daemon import Daemon, Handler
from gensyn_py.node.logs import configure_logging
from gensyn_py.node.state import PENDING, DaemonState, StateError

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
DAEMON_KEY = DEV_KEYS[9]  # the daemon's account; the other suites leave it alone
EMITTER_KEY = DEV_KEYS[8]  # deploys the Ticker and emits ticks


# -- the daemon under test ------------------------------------------------------------------


class TickerDaemon(Daemon):
    """Acknowledges each Ticked(id) with exactly one `ack(id)` transaction."""

    def __init__(
        self, ticker: Contract, sender: TxSender, state: DaemonState, work: float, **kw: Any
    ) -> None:
        super().__init__("ticker", sender.w3, {"Ticker": ticker}, state, **kw)
        self.ticker = ticker
        self.sender = sender
        self.work = work

    def handlers(self) -> dict[str, Handler]:
        return {"Ticked": self.on_ticked}

    def on_ticked(self, record: EventRecord) -> None:
        tick_id = int(record.args["id"])
        fns = self.ticker.functions

        def acknowledge() -> Any:
            time.sleep(self.work)  # stands in for real work (training, replay) before the tx
            return self.sender.send(fns.ack(tick_id))

        ran = self.once(("ack", tick_id), acknowledge, already_done=lambda: int(fns.acks(tick_id).call()) > 0)
        if ran:
            self.metrics.unit_done()


def daemon_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rpc", required=True)
    parser.add_argument("--ticker", required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--log-file", type=Path, required=True)
    parser.add_argument("--work", type=float, default=0.0)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--base-backoff", type=float, default=0.2)
    parser.add_argument("--max-backoff", type=float, default=1.0)
    args = parser.parse_args(argv)
    configure_logging("ticker", level="info", file=args.log_file)
    w3 = connect(args.rpc, timeout=2)
    abi = compile_contracts(sources_dir=FIXTURES)["Ticker"]["abi"]
    ticker = w3.eth.contract(address=Web3.to_checksum_address(args.ticker), abi=abi)
    account = Account.from_key(DAEMON_KEY)
    sender = TxSender(w3, account, nonces=NonceManager.for_account(w3, account.address), receipt_timeout=10)
    with DaemonState(args.state) as state:
        daemon = TickerDaemon(
            ticker, sender, state, args.work, poll_interval=args.poll,
            base_backoff=args.base_backoff, max_backoff=args.max_backoff,
        )
        state.put("metrics_port", daemon.metrics.serve(0))
        try:
            return daemon.run_forever()
        finally:
            daemon.metrics.close()


# -- helpers for the tests ------------------------------------------------------------------


def wait_for(condition: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)  # polling a condition, bounded by the deadline


@dataclass
class Chain:
    node: AnvilNode
    w3: Web3
    ticker: Contract
    emitter: TxSender

    def tick(self, n: int) -> int:
        """Emit n Ticked events; return their block."""
        return int(self.emitter.send(self.ticker.functions.tick(n))["blockNumber"])

    def acks(self, tick_id: int) -> int:
        return int(self.ticker.functions.acks(tick_id).call())

    def total_acks(self) -> int:
        return int(self.ticker.functions.totalAcks().call())

    def acked_events(self) -> list[int]:
        logs = self.ticker.events.Acked().get_logs(from_block=0)
        return [int(entry["args"]["id"]) for entry in logs]


@dataclass
class DaemonProcess:
    chain: Chain
    workdir: Path
    work: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    runs: int = field(default=0)

    @property
    def state_path(self) -> Path:
        return self.workdir / "ticker.sqlite"

    @property
    def log_path(self) -> Path:
        return self.workdir / "ticker.log"

    def start(self) -> DaemonProcess:
        self.runs += 1
        python = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
        cmd = [
            str(python), "-m", "tests.integration.test_daemon_base",
            "--rpc", self.chain.node.url, "--ticker", self.chain.ticker.address,
            "--state", str(self.state_path), "--log-file", str(self.log_path), "--work", str(self.work),
        ]
        stderr = open(self.workdir / f"stderr.{self.runs}", "wb")  # noqa: SIM115 - the child owns it
        self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
        stderr.close()
        return self

    def view(self) -> DaemonState | None:
        """A read-only view of the daemon's state, or None before the daemon has created it."""
        try:
            return DaemonState(self.state_path, readonly=True)
        except StateError:
            return None

    def read(self, fn: Callable[[DaemonState], Any], default: Any = None) -> Any:
        view = self.view()
        if view is None:
            return default
        try:
            return fn(view)
        except StateError:  # the schema is not there yet
            return default
        finally:
            view.close()

    def done(self) -> int:
        return int(self.read(lambda s: s.count_actions(), 0))

    def logs(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        text = self.log_path.read_text()
        complete = text[: text.rfind("\n") + 1]  # the daemon may be half-way through a line
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.alive_or_fail()
        self.process.send_signal(sig)

    def wait(self, timeout: float = 15.0) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def alive_or_fail(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            err = (self.workdir / f"stderr.{self.runs}").read_text()[-3000:]
            raise AssertionError(f"daemon exited early with {self.process.returncode}:\n{err}")

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        def check() -> bool:
            self.alive_or_fail()
            return condition()

        wait_for(check, timeout, what)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def ticker_artifact() -> dict[str, Any]:
    return compile_contracts(sources_dir=FIXTURES)["Ticker"]


@pytest.fixture
def chain(tmp_path: Path, ticker_artifact: dict[str, Any]) -> Iterator[Chain]:
    node = AnvilNode(state_path=tmp_path / "anvil-state.json").start()
    try:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 10}))
        account = Account.from_key(EMITTER_KEY)
        nonces = NonceManager.for_account(w3, account.address)
        emitter = TxSender(w3, account, nonces=nonces, receipt_timeout=10)
        ticker, _ = emitter.deploy(ticker_artifact["abi"], ticker_artifact["bytecode"])
        chain = Chain(node, w3, ticker, emitter)
        yield chain
        node = chain.node  # a test may have restarted it
    finally:
        node.stop()


@pytest.fixture
def daemon(chain: Chain, tmp_path: Path) -> Iterator[DaemonProcess]:
    proc = DaemonProcess(chain, tmp_path)
    yield proc
    proc.kill()


def assert_each_acked_once(chain: Chain, n: int) -> None:
    assert [chain.acks(i) for i in range(n)] == [1] * n
    assert chain.total_acks() == n
    assert sorted(chain.acked_events()) == list(range(n))  # one ack transaction per tick, no more


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.slow
def test_daemon_killed_mid_way_resumes_without_repeating_actions(chain: Chain, daemon: DaemonProcess) -> None:
    for _ in range(4):
        chain.tick(5)
    daemon.work = 0.05
    daemon.start().wait_until(lambda: daemon.done() >= 5, "five acks recorded")
    daemon.kill()  # SIGKILL: no chance to clean up
    assert 5 <= chain.total_acks() < 20, "the kill should land mid-way"

    daemon.start()
    last_tick_block = chain.tick(3)  # new events while the restarted daemon runs
    daemon.wait_until(lambda: daemon.done() == 23 and chain.total_acks() >= 23, "all 23 ticks acknowledged")
    daemon.wait_until(lambda: daemon.read(lambda s: s.next_block, 0) > last_tick_block, "cursor past ticks")
    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    assert_each_acked_once(chain, 23)
    assert daemon.read(lambda s: s.count_actions(PENDING)) == 0


@pytest.mark.slow
def test_sigterm_mid_batch_exits_zero_with_cursor_saved_and_metrics_served(
    chain: Chain, daemon: DaemonProcess
) -> None:
    tick_block = chain.tick(8)  # one block, one batch
    daemon.work = 0.2
    daemon.start().wait_until(lambda: daemon.done() >= 2, "two acks recorded")
    port = daemon.read(lambda s: s.get("metrics_port"))
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'gensyn_units_done_total{daemon="ticker"}' in body
    assert "gensyn_last_block_seen" in body

    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    with DaemonState(daemon.state_path) as state:  # the lock is free again: the daemon has exited
        handled = state.count_actions()
        assert 2 <= handled < 8, "SIGTERM should land mid-batch"
        assert state.count_actions(PENDING) == 0  # the handler it was in finished first
        assert state.last_position is not None and state.last_position[0] == tick_block
    assert chain.total_acks() == handled
    assert any(e["event"] == "daemon.signal" and e["fields"] == {"signal": "SIGTERM"} for e in daemon.logs())

    daemon.work = 0.0
    daemon.start().wait_until(lambda: chain.total_acks() >= 8 and daemon.done() == 8, "the rest acknowledged")
    port = daemon.read(lambda s: s.get("metrics_port"))
    head = chain.w3.eth.block_number

    def scraped_last_block() -> float:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        line = next(x for x in body.splitlines() if x.startswith('gensyn_last_block_seen{daemon="ticker"}'))
        return float(line.split()[-1])

    daemon.wait_until(lambda: scraped_last_block() >= head, "metrics show the head as last block seen")
    daemon.signal(signal.SIGINT)
    assert daemon.wait() == 0
    assert_each_acked_once(chain, 8)


@pytest.mark.slow
def test_daemon_backs_off_while_the_rpc_node_is_down_and_carries_on(
    chain: Chain, daemon: DaemonProcess, tmp_path: Path
) -> None:
    chain.tick(3)
    daemon.start().wait_until(lambda: daemon.done() == 3, "first three acks")
    chain.node.stop()  # SIGTERM: anvil dumps its state to disk

    def retries() -> list[dict[str, Any]]:
        return [e for e in daemon.logs() if e["event"] == "cycle.retry"]

    daemon.wait_until(lambda: len(retries()) >= 2, "two failed cycles logged", timeout=30)
    chain.node = AnvilNode(port=chain.node.port, state_path=tmp_path / "anvil-state.json").start()
    chain.tick(3)
    daemon.wait_until(lambda: daemon.done() == 6 and chain.total_acks() >= 6, "acks after the node came back")
    daemon.wait_until(lambda: any(e["event"] == "cycle.recovered" for e in daemon.logs()), "recovery logged")

    logged = retries()
    delays = [e["fields"]["delay_s"] for e in logged]
    assert delays[:2] == [0.2, 0.4] and max(delays) <= 1.0  # exponential, capped at --max-backoff
    assert [e["fields"]["failures"] for e in logged] == list(range(1, len(logged) + 1))
    assert all(e["level"] == "warning" and e["fields"]["error"] for e in logged)
    daemon.signal(signal.SIGTERM)
    assert daemon.wait() == 0
    assert_each_acked_once(chain, 6)


if __name__ == "__main__":
    sys.exit(daemon_main(sys.argv[1:]))
