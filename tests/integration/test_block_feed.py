"""New blocks pushed over a websocket wake a daemon's cycle (`node/block_feed.py`): against a real anvil, and against
a node that refuses the subscription or drops the connection (the poll then stays the fallback)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from web3 import Web3
from websockets.sync.server import Server, ServerConnection, serve

from gensyn_py.devnet.anvil import AnvilNode
from gensyn_py.node import block_feed
from gensyn_py.node.block_feed import BlockFeed

WAIT = 30.0  # seconds a test waits for the feed before it fails (it never sleeps)


class Log:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []
        self.changed = threading.Condition()

    def _record(self, event: str, **fields: Any) -> None:
        with self.changed:
            self.records.append((event, fields))
            self.changed.notify_all()

    debug = info = warning = error = exception = _record

    def names(self) -> list[str]:
        return [e for e, _ in self.records]

    def wait_for(self, names: list[str]) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.names()[:len(names)] == names, WAIT), self.names()


class Counter:
    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_for(self, n: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.count >= n, WAIT), self.count


@pytest.fixture
def fast_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(block_feed, "FIRST_RETRY_S", 0.05)


def test_each_block_anvil_mines_wakes_the_cycle(anvil_node: AnvilNode, w3: Web3) -> None:
    woken, log = Counter(), Log()
    feed = BlockFeed(anvil_node.ws_url, woken, log).start()
    try:
        assert feed.live.wait(WAIT)
        for n in range(1, 4):
            w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
            woken.wait_for(n)
        assert feed.blocks == woken.count >= 3
        assert log.names() == ["feed.live"]
    finally:
        feed.stop()
    assert not feed.live.is_set()
    assert not any(t.name == "block-feed" for t in threading.enumerate())


def test_a_node_without_websockets_leaves_the_poll_and_logs_once(fast_retry: None) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Log()
    feed = BlockFeed(f"ws://127.0.0.1:{port}", lambda: None, log).start()
    try:
        log.wait_for(["feed.down"])
        assert not feed.live.is_set()
    finally:
        feed.stop()
    assert log.names() == ["feed.down"]  # retried with backoff, logged once
    assert log.records[0][1]["fallback"] == "polling"


@pytest.fixture
def node() -> Iterator[tuple[str, list[str]]]:
    """A websocket 'node' whose behaviour each test sets: "refuse" the subscription, or "drop" the connection after
    announcing one block (once), then serve normally."""
    script: list[str] = []

    def handler(ws: ServerConnection) -> None:
        request = json.loads(ws.recv())
        assert request["method"] == "eth_subscribe" and request["params"] == ["newHeads"]
        mode = script.pop(0) if script else "serve"
        if mode == "refuse":
            ws.send(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                "error": {"code": -32601, "message": "Method not found"}}))
            return
        ws.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": "0x1"}))
        ws.send(json.dumps({"jsonrpc": "2.0", "method": "eth_subscription", "params": {"subscription": "0x1"}}))
        if mode == "drop":
            return
        for _ in ws:  # hold the connection until the client closes it
            pass

    server: Server = serve(handler, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{server.socket.getsockname()[1]}", script
    finally:
        server.shutdown()
        thread.join(WAIT)


def test_a_refused_subscription_is_logged_with_the_nodes_answer(node: tuple[str, list[str]],
                                                                fast_retry: None) -> None:
    url, script = node
    script[:] = ["refuse"] * 100
    log = Log()
    feed = BlockFeed(url, lambda: None, log).start()
    try:
        log.wait_for(["feed.down"])
    finally:
        feed.stop()
    assert "Method not found" in log.records[0][1]["error"] and not feed.live.is_set()


def test_a_dropped_feed_is_logged_and_followed_again(node: tuple[str, list[str]], fast_retry: None) -> None:
    url, script = node
    script[:] = ["drop"]
    woken, log = Counter(), Log()
    feed = BlockFeed(url, woken, log).start()
    try:
        log.wait_for(["feed.live", "feed.down", "feed.live"])  # dropped after one block, then back
        woken.wait_for(2)  # the block before the drop and the one after
        assert feed.live.is_set()
    finally:
        feed.stop()
    assert log.names() == ["feed.live", "feed.down", "feed.live"]
