"""Per-account nonces that stay correct when several threads send at once.

The counter starts from the node's 'pending' transaction count and then lives
locally. A nonce is handed out inside `reserve()`, which holds the lock while
the caller signs and sends: either the send succeeds and the counter moves on,
or it fails and the counter is dropped, to be re-read from the node on the
next use. Holding the lock over the send (not over the wait for a receipt)
means a rejected transaction never leaves a gap that strands later ones.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from eth_typing import ChecksumAddress
from web3 import Web3

from gensyn_py.errors import ChainError


class NonceManager:
    """Hands out consecutive nonces for one account; `fetch` reads the node's pending count."""

    def __init__(self, fetch: Callable[[], int]) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._next: int | None = None

    @classmethod
    def for_account(cls, w3: Web3, address: ChecksumAddress) -> NonceManager:
        return cls(lambda: int(w3.eth.get_transaction_count(address, "pending")))

    @contextmanager
    def reserve(self) -> Iterator[int]:
        """Yield the next nonce with the lock held; commit it on success, resync on failure."""
        with self._lock:
            if self._next is None:
                self._next = self._fetch()
            nonce = self._next
            try:
                yield nonce
            except BaseException:
                self._next = None
                raise
            self._next = nonce + 1

    def resync(self) -> None:
        """Forget the local counter; the next `reserve()` re-reads it from the node."""
        with self._lock:
            self._next = None

    def peek(self) -> int | None:
        """The nonce the next `reserve()` would hand out if known locally (for logs and tests)."""
        with self._lock:
            return self._next


_shared: weakref.WeakKeyDictionary[Web3, dict[str, NonceManager]] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def shared_nonce_manager(w3: Web3, address: ChecksumAddress) -> NonceManager:
    """One manager per (Web3 instance, account), so separate senders for one key never collide."""
    with _shared_lock:
        per_w3 = _shared.setdefault(w3, {})
        manager = per_w3.get(address)
        if manager is None:
            ref = weakref.ref(w3)  # a strong reference here would keep the weak key alive forever

            def fetch() -> int:
                web3 = ref()
                if web3 is None:
                    raise ChainError("the Web3 instance behind this nonce manager is gone")
                return int(web3.eth.get_transaction_count(address, "pending"))

            manager = per_w3[address] = NonceManager(fetch)
        return manager
