"""The content store interface: public get() verifies bytes against the id.

Backends implement only `_get()` and `_put()`; ids are real IPFS CIDs computed
locally (see `cid.py`), so the same bytes give the same id in every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from gensyn_py.errors import ContentMismatch


class ContentStore(ABC):
    """Content-addressed bytes. `put` returns the CID; `get` returns verified bytes."""

    default_timeout: float = 30.0

    def put(self, data: bytes) -> str:
        from gensyn_py.storage.cid import cid_for_bytes

        expected = cid_for_bytes(data)
        stored = self._put(data, expected)
        if stored != expected:
            raise ContentMismatch(f"backend stored {len(data)} bytes as {stored}, expected {expected}")
        return stored

    def get(self, cid: str, timeout: float | None = None) -> bytes:
        from gensyn_py.storage.cid import cid_for_bytes

        data = self._get(cid, self.default_timeout if timeout is None else timeout)
        actual = cid_for_bytes(data)
        if actual != cid:
            raise ContentMismatch(f"content for {cid} hashes to {actual}")
        return data

    @abstractmethod
    def _put(self, data: bytes, cid: str) -> str:
        """Store bytes whose CID `put` already computed; return the CID the backend assigned."""

    @abstractmethod
    def _get(self, cid: str, timeout: float) -> bytes:
        """Fetch bytes for a CID or raise ContentNotFound within `timeout` seconds."""

    def has(self, cid: str) -> bool:
        """Whether the content is available here without waiting on the network."""
        return False
