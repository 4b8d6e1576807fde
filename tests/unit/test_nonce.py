"""NonceManager: consecutive, distinct nonces under threads; resync after a failed send."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from gensyn_py.chain.nonce import NonceManager


class FakeNode:
    """A node's pending count: it only moves when a send 'reaches' it."""

    def __init__(self, start: int = 0) -> None:
        self.pending = start
        self.fetches = 0
        self.lock = threading.Lock()

    def fetch(self) -> int:
        with self.lock:
            self.fetches += 1
            return self.pending

    def accept(self, nonce: int) -> None:
        with self.lock:
            assert nonce == self.pending, f"nonce gap: sent {nonce}, node expects {self.pending}"
            self.pending += 1


def test_first_nonce_comes_from_the_node_then_counts_locally() -> None:
    node = FakeNode(start=7)
    manager = NonceManager(node.fetch)
    for expected in (7, 8, 9):
        with manager.reserve() as nonce:
            assert nonce == expected
            node.accept(nonce)
    assert node.fetches == 1
    assert manager.peek() == 10


def test_concurrent_senders_get_distinct_consecutive_nonces() -> None:
    node = FakeNode(start=3)
    manager = NonceManager(node.fetch)
    used: list[int] = []
    used_lock = threading.Lock()

    def send(_: int) -> None:
        with manager.reserve() as nonce:
            node.accept(nonce)
            with used_lock:
                used.append(nonce)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(send, range(200)))
    assert sorted(used) == list(range(3, 203))
    assert node.pending == 203


def test_a_failed_send_resyncs_from_the_node_without_a_gap() -> None:
    node = FakeNode(start=0)
    manager = NonceManager(node.fetch)
    with manager.reserve() as nonce:
        node.accept(nonce)
    with pytest.raises(RuntimeError), manager.reserve() as nonce:
        assert nonce == 1
        raise RuntimeError("node rejected the transaction")
    assert manager.peek() is None
    with manager.reserve() as nonce:
        assert nonce == 1  # re-read from the node, so the rejected nonce is reused
        node.accept(nonce)
    assert node.fetches == 2


def test_failures_mixed_into_concurrent_sends_leave_no_gap() -> None:
    node = FakeNode(start=0)
    manager = NonceManager(node.fetch)

    def send(i: int) -> bool:
        try:
            with manager.reserve() as nonce:
                if i % 5 == 0:
                    raise ValueError("rejected")
                node.accept(nonce)
                return True
        except ValueError:
            return False

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(send, range(100)))
    assert node.pending == sum(results) == 80


def test_a_nonce_used_elsewhere_is_picked_up_after_resync() -> None:
    node = FakeNode(start=0)
    manager = NonceManager(node.fetch)
    with manager.reserve() as nonce:
        node.accept(nonce)
    node.accept(1)  # another process sent with the same key
    manager.resync()
    with manager.reserve() as nonce:
        assert nonce == 2


def test_a_node_lost_while_a_tx_waits_resyncs_the_sender_nonce() -> None:
    """The node went down with the tx pending and came back without it: the sender's next nonce is read from
    the node again, not one past a tx the chain never kept (which would queue every later tx behind a gap)."""
    from types import SimpleNamespace

    from hexbytes import HexBytes

    from gensyn_py.chain.tx import TxSender
    from gensyn_py.errors import ChainError

    node = FakeNode(start=7)
    manager = NonceManager(node.fetch)
    with manager.reserve() as nonce:  # the tx went out with nonce 7 ...
        assert nonce == 7
    assert manager.peek() == 8

    def lost(*_args: object, **_kw: object) -> None:
        raise ConnectionError("connection refused")  # ... and the node died before mining it

    w3 = SimpleNamespace(eth=SimpleNamespace(wait_for_transaction_receipt=lost))
    sender = TxSender(w3, SimpleNamespace(address="0x" + "00" * 20), nonces=manager)  # type: ignore[arg-type]
    with pytest.raises(ChainError, match="waiting for tx"):
        sender._wait(HexBytes(b"\1" * 32), "commitVerdict()")
    with manager.reserve() as nonce:  # the restarted node never saw 7: it is handed out again
        assert nonce == 7
