"""Run the explorer: an indexer thread, a content thread and the web server, stopped together.

The indexer polls the chain every `interval` seconds; a failed poll (a dead RPC) is logged,
shown on the pages, and tried again at the next tick: the pages keep serving the index.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.explorer import schema
from gensyn_py.explorer.app import ExplorerContext, create_app
from gensyn_py.explorer.content import ContentWorker
from gensyn_py.explorer.indexer import Indexer
from gensyn_py.storage.base import ContentStore

log = logging.getLogger(__name__)
STOP_SECONDS = 10.0  # how long stopping waits for the serving threads, all together


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class ExplorerServer:
    protocol: ProtocolContracts
    db_path: Path
    store: ContentStore | None = None
    host: str = "127.0.0.1"
    port: int = 0
    interval: float = 0.5
    compute_losses: bool = True
    follow: bool = True  # False: no indexer or content thread; the caller drives `poll_once` (tests, benchmarks)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _status: dict[str, Any] = field(default_factory=lambda: {"head": None, "error": None})
    _server: uvicorn.Server | None = None

    def __post_init__(self) -> None:
        self.indexer = Indexer(self.protocol, schema.connect(self.db_path))
        self.reader = schema.connect(self.db_path)
        self.port = self.port or free_port(self.host)
        self.content: ContentWorker | None = None
        if self.store is not None:
            self.content = ContentWorker(self.protocol, self.store, schema.connect(self.db_path),
                                         on_change=self.indexer.bump)
        self.content_wake = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def wait_change(self, seen: int, timeout: float) -> int:
        with self.indexer.changed:
            self.indexer.changed.wait_for(lambda: self.indexer.version != seen or self._stop.is_set(), timeout)
            return self.indexer.version

    def poll_once(self) -> None:
        try:
            result = self.indexer.poll()
            self._status.update(head=result.head, error=None)
            if result.events:
                self.content_wake.set()
        except Exception as exc:  # a dead or restarting RPC: keep serving, say so, retry next tick
            if self._status.get("error") is None:
                log.warning("explorer: indexing failed: %s", exc)
                self._status["error"] = str(exc).splitlines()[0][:200]
                self.indexer.bump()

    def _index_loop(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            self._stop.wait(self.interval)

    def _content_loop(self) -> None:
        assert self.content is not None
        while not self._stop.is_set():
            self.content_wake.wait(self.content.retry_after)
            self.content_wake.clear()
            if self._stop.is_set():
                return
            try:
                self.content.run_once()
            except Exception as exc:  # the store or chain being down is retried; never the end of the thread
                log.warning("explorer: content fetch failed: %s", exc)

    def start(self) -> ExplorerServer:
        ctx = ExplorerContext(self.reader, self.protocol, self.store, lambda: self.indexer.version,
                              self.wait_change, lambda: dict(self._status), self._stop.is_set)
        config = uvicorn.Config(create_app(ctx), host=self.host, port=self.port, log_level="warning",
                                timeout_graceful_shutdown=1, lifespan="off")
        self._server = uvicorn.Server(config)
        self.poll_once()  # pages have an index from the first request on
        loops = [self._server.run] + ([self._index_loop] if self.follow else [])
        if self.content is not None and self.compute_losses and self.follow:
            loops.append(self._content_loop)
            self.content_wake.set()
        for target in loops:
            t = threading.Thread(target=target, name=f"explorer-{target.__name__}", daemon=True)
            t.start()
            self._threads.append(t)
        ready = threading.Event()
        while not self._server.started and self._threads[0].is_alive():
            ready.wait(0.05)
        if not self._server.started:
            raise RuntimeError(f"the explorer could not listen on {self.url}")
        return self

    def stop(self) -> None:
        self._stop.set()
        self.content_wake.set()
        with self.indexer.changed:
            self.indexer.changed.notify_all()
        if self._server is not None:
            self._server.should_exit = True
        deadline = time.monotonic() + STOP_SECONDS  # one bound for all threads: Ctrl-C stops within it
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def __enter__(self) -> ExplorerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
