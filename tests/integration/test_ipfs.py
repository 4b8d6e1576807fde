"""The locally computed CIDs match a real IPFS node (js-ipfs from node_modules), end to end.

If the daemon cannot start, these tests fail with the reason — they do not skip.
"""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gensyn_py.errors import ContentNotFound, StorageError
from gensyn_py.storage.cid import CHUNK_SIZE, MAX_LINKS, cid_for_bytes, parse_cid
from gensyn_py.storage.factory import open_store
from gensyn_py.storage.kubo import KuboStore
from gensyn_py.storage.local import LocalStore
from tests.integration.ipfs_daemon import JsIpfsDaemon

pytestmark = pytest.mark.ipfs


def _bytes(n: int, seed: int = 0) -> bytes:
    """Deterministic, incompressible-looking bytes of length n."""
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{counter}".encode()).digest() * 64
        counter += 1
    return bytes(out[:n])


@pytest.fixture(scope="module")
def ipfs_daemon() -> Iterator[JsIpfsDaemon]:
    daemon = JsIpfsDaemon()
    try:
        daemon.start()
    except Exception as exc:  # fail loudly, never skip
        pytest.fail(f"could not start the js-ipfs daemon: {exc}", pytrace=False)
    print(f"js-ipfs daemon ready at {daemon.api_url} in {daemon.startup_seconds:.2f}s")
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def kubo(ipfs_daemon: JsIpfsDaemon) -> KuboStore:
    store = open_store(ipfs_daemon.api_url)
    assert isinstance(store, KuboStore)
    return store


def test_health(kubo: KuboStore) -> None:
    assert kubo.health()["ID"]


@pytest.mark.parametrize("size", [0, 1, CHUNK_SIZE, CHUNK_SIZE + 1, 3_000_000])
def test_same_cid_everywhere(size: int, kubo: KuboStore, tmp_path: Path) -> None:
    data = _bytes(size, seed=size)
    expected = cid_for_bytes(data)
    assert parse_cid(expected).is_raw == (size <= CHUNK_SIZE)
    assert LocalStore(tmp_path).put(data) == expected
    assert kubo.put(data) == expected  # put() itself also checks the node's answer
    assert kubo.get(expected, timeout=30) == data


def test_more_than_174_chunks(kubo: KuboStore, tmp_path: Path) -> None:
    """Two levels of dag-pb nodes: 175 full chunks plus a partial one (~46 MB)."""
    data = _bytes((MAX_LINKS + 1) * CHUNK_SIZE + 12345, seed=7)
    expected = cid_for_bytes(data)
    assert kubo.put(data) == expected
    assert LocalStore(tmp_path).put(data) == expected
    assert kubo.get(expected, timeout=60) == data


def test_round_trip_between_stores(kubo: KuboStore, tmp_path: Path) -> None:
    local = LocalStore(tmp_path)
    data = b"a checkpoint, in some sense" * 1000
    cid = local.put(data)
    assert kubo.put(local.get(cid)) == cid
    assert kubo.has(cid)
    assert kubo.get(cid) == data


def test_missing_cid_times_out_with_content_not_found(kubo: KuboStore) -> None:
    missing = cid_for_bytes(b"nobody ever stored this " + str(time.time_ns()).encode())
    assert not kubo.has(missing)
    started = time.monotonic()
    with pytest.raises(ContentNotFound):
        kubo.get(missing, timeout=1.5)
    assert time.monotonic() - started < 10


def test_dead_url_gives_storage_error_naming_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    store = KuboStore(url)
    for call in (store.health, lambda: store.put(b"x"), lambda: store.get(cid_for_bytes(b"x"), timeout=1)):
        with pytest.raises(StorageError, match=url):
            call()
