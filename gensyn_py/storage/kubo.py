"""A Kubo-compatible IPFS node (Kubo, or js-ipfs in the tests) over its HTTP RPC API.

Why plain `requests` rather than ``ipfshttpclient`` 0.7: that client's ``connect()``
first asks the daemon for its version and refuses anything outside a range hard-coded
in 2021 (it raises ``VersionMismatch`` for every daemon newer than go-ipfs 0.8.x, i.e.
all Kubo releases and js-ipfs 0.66), and the project is unmaintained. The RPC calls we
need are three POSTs, so we speak them directly:

* ``/api/v0/add``  with ``cid-version=1 raw-leaves=true chunker=size-262144
  trickle=false hash=sha2-256 pin=true`` — the settings `cid.cid_for_bytes` mirrors;
* ``/api/v0/cat?arg=<cid>`` with the daemon-side ``timeout`` option *and* a client-side
  read timeout, so a CID nobody has ends in ContentNotFound, never a hang;
* ``/api/v0/id`` as a health check.
"""

from __future__ import annotations

import json
import math
from typing import Any

import requests

from gensyn_py.errors import ContentNotFound, StorageError
from gensyn_py.storage.base import ContentStore
from gensyn_py.storage.cid import is_valid_cid

ADD_PARAMS: dict[str, str] = {
    "cid-version": "1",
    "cid-base": "base32",
    "raw-leaves": "true",
    "chunker": "size-262144",
    "trickle": "false",
    "hash": "sha2-256",
    "pin": "true",
}

# Phrases daemons use when content could not be found in time (Kubo and js-ipfs).
_NOT_FOUND_HINTS = ("timed out", "deadline exceeded", "not found", "no link named", "offline", "aborted")


class KuboStore(ContentStore):
    """Content in an IPFS node reached at `api_url` (e.g. ``http://127.0.0.1:5001``)."""

    def __init__(self, api_url: str, request_timeout: float = 60.0):
        self.api_url = api_url.rstrip("/")
        self.request_timeout = request_timeout
        self._session = requests.Session()

    def __repr__(self) -> str:
        return f"KuboStore({self.api_url!r})"

    def _url(self, command: str) -> str:
        return f"{self.api_url}/api/v0/{command}"

    def _unreachable(self, exc: Exception) -> StorageError:
        return StorageError(f"IPFS node at {self.api_url} is unreachable: {exc}")

    @staticmethod
    def _error_message(resp: requests.Response) -> str:
        try:
            body = resp.json()
            if isinstance(body, dict) and "Message" in body:
                return str(body["Message"])
        except ValueError:
            pass
        return resp.text.strip()[:500] or resp.reason

    def health(self) -> dict[str, Any]:
        """The node's ``/api/v0/id`` answer; StorageError naming the URL if it does not answer."""
        try:
            resp = self._session.post(self._url("id"), timeout=10)
        except requests.RequestException as exc:
            raise self._unreachable(exc) from exc
        if resp.status_code != 200:
            raise StorageError(
                f"IPFS node at {self.api_url} answered id with {resp.status_code}: "
                f"{self._error_message(resp)}"
            )
        try:
            info = resp.json()
        except ValueError as exc:
            raise StorageError(f"IPFS node at {self.api_url} answered id with non-JSON") from exc
        if not isinstance(info, dict) or "ID" not in info:
            raise StorageError(f"IPFS node at {self.api_url} answered id without an ID")
        return info

    def _put(self, data: bytes, cid: str) -> str:
        # The daemon computes its own id; put() checks it against `cid`.
        files = {"file": ("blob", data, "application/octet-stream")}
        try:
            resp = self._session.post(
                self._url("add"), params=ADD_PARAMS, files=files, timeout=self.request_timeout
            )
        except requests.RequestException as exc:
            raise self._unreachable(exc) from exc
        if resp.status_code != 200:
            raise StorageError(
                f"IPFS add at {self.api_url} failed ({resp.status_code}): {self._error_message(resp)}"
            )
        answered: str | None = None
        for line in resp.text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                entry = json.loads(line)
            except ValueError as exc:
                raise StorageError(f"IPFS add at {self.api_url} answered non-JSON: {line[:200]!r}") from exc
            if isinstance(entry, dict) and "Hash" in entry:
                answered = str(entry["Hash"])
        if answered is None:
            raise StorageError(f"IPFS add at {self.api_url} returned no hash")
        return answered

    def _get(self, cid: str, timeout: float) -> bytes:
        if not is_valid_cid(cid):
            raise ContentNotFound(f"not a valid CID: {cid!r}")
        daemon_timeout = max(1, math.ceil(timeout * 1000))
        params = {"arg": cid, "timeout": f"{daemon_timeout}ms"}
        try:
            # The daemon gives up after `timeout`; the client allows a little more for the reply.
            resp = self._session.post(self._url("cat"), params=params, timeout=(5.0, timeout + 5.0))
        except requests.Timeout as exc:
            raise ContentNotFound(f"{cid} not available from {self.api_url} within {timeout}s") from exc
        except requests.RequestException as exc:
            raise self._unreachable(exc) from exc
        if resp.status_code == 200:
            return resp.content
        message = self._error_message(resp)
        if any(hint in message.lower() for hint in _NOT_FOUND_HINTS):
            raise ContentNotFound(f"{cid} not available from {self.api_url} within {timeout}s: {message}")
        raise StorageError(f"IPFS cat {cid} at {self.api_url} failed ({resp.status_code}): {message}")

    def has(self, cid: str) -> bool:
        """Whether the node holds the root block locally (no network wait)."""
        if not is_valid_cid(cid):
            return False
        try:
            resp = self._session.post(
                self._url("block/stat"), params={"arg": cid, "offline": "true", "timeout": "1s"}, timeout=5
            )
        except requests.RequestException:
            return False
        return resp.status_code == 200
