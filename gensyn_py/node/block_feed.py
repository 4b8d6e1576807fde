"""New blocks pushed by the node, so a daemon's cycle starts the moment a block lands instead of up to a poll later.

A daemon that polls every `poll_interval` seconds sees each event half an interval late on average, and a job pays
that delay at every hop: a commitment, the draw, each validator starting its replay, the verdicts' commits and
reveals, the next phase's commitment, the finalize. With a websocket URL (`--ws-url`), a thread holds an
`eth_subscribe("newHeads")` subscription and wakes the cycle at every new block. The poll stays as the fallback:
the feed only adds cycles and never holds one back, so a node without websockets, or a dropped connection, costs
latency, never correctness. The thread reconnects with backoff and logs when the feed goes down and comes back
(once per change, not per retry).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

SUBSCRIBE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]})
OPEN_TIMEOUT_S = 5.0
FIRST_RETRY_S = 1.0
LAST_RETRY_S = 30.0


class FeedError(Exception):
    """The node refused the subscription."""


class BlockFeed:
    """Calls `on_block()` from its own thread for every block the node at `url` announces."""

    def __init__(self, url: str, on_block: Callable[[], None], log: Any) -> None:
        self.url = url
        self.on_block = on_block
        self.log = log
        self.blocks = 0  # announcements received
        self.live = threading.Event()  # set while subscribed
        self._stop = threading.Event()
        self._ws: ClientConnection | None = None
        self._thread = threading.Thread(target=self._run, name="block-feed", daemon=True)

    def start(self) -> BlockFeed:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        ws = self._ws
        if ws is not None:
            ws.close()
        self._thread.join(timeout)

    def _run(self) -> None:
        retry, down = FIRST_RETRY_S, False
        while not self._stop.is_set():
            error: Exception | None = None
            try:
                self._follow()
            except (OSError, TimeoutError, ConnectionClosed, FeedError, ValueError) as exc:
                error = exc
            finally:
                went_live = self.live.is_set()
                self.live.clear()
                self._ws = None
            if self._stop.is_set():
                return
            if went_live:  # a live spell ended: a new outage, retried soon
                retry, down = FIRST_RETRY_S, False
            if not down:  # log the change, not every retry
                why = f"{type(error).__name__}: {error}" if error is not None else "the node closed the connection"
                self.log.warning("feed.down", url=self.url, error=why, fallback="polling")
                down = True
            if self._stop.wait(retry):
                return
            retry = min(LAST_RETRY_S, retry * 2)

    def _follow(self) -> None:
        ws = connect(self.url, open_timeout=OPEN_TIMEOUT_S, close_timeout=1.0)
        self._ws = ws
        with ws:
            if self._stop.is_set():
                return
            ws.send(SUBSCRIBE)
            reply = json.loads(ws.recv(timeout=OPEN_TIMEOUT_S))
            if "error" in reply or "result" not in reply:
                raise FeedError(f"the node refused eth_subscribe(newHeads): {reply.get('error', reply)}")
            self.live.set()
            self.log.info("feed.live", url=self.url)
            for _ in ws:  # one message per new block; ends when the connection closes
                self.blocks += 1
                self.on_block()
