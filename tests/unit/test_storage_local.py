"""LocalStore: content-addressed files, verification on read, and the store factory."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gensyn_py.errors import ConfigError, ContentMismatch, ContentNotFound
from gensyn_py.storage.cid import CHUNK_SIZE, cid_for_bytes
from gensyn_py.storage.factory import open_store
from gensyn_py.storage.kubo import KuboStore
from gensyn_py.storage.local import LocalStore


def test_put_get_has(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "cas")
    cid = store.put(b"hello world")
    assert cid == "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
    assert store.has(cid)
    assert store.get(cid) == b"hello world"
    assert store.put(b"hello world") == cid  # idempotent
    assert not list((tmp_path / "cas").rglob(".*.part"))  # no temp files left behind


def test_missing_is_not_found_immediately(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    missing = cid_for_bytes(b"never stored")
    assert not store.has(missing)
    with pytest.raises(ContentNotFound):
        store.get(missing, timeout=1000)
    with pytest.raises(ContentNotFound):
        store.get("not-a-cid")
    assert not store.has("not-a-cid")


@pytest.mark.parametrize("size", [5, CHUNK_SIZE + 10])
def test_corrupted_file_is_caught(tmp_path: Path, size: int) -> None:
    store = LocalStore(tmp_path)
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    cid = store.put(data)
    path = store.path_for(cid)
    corrupted = bytearray(path.read_bytes())
    corrupted[len(corrupted) // 2] ^= 0x01
    path.write_bytes(bytes(corrupted))
    with pytest.raises(ContentMismatch):
        store.get(cid)
    assert store.put(data) == cid  # putting the bytes again repairs the copy
    assert store.get(cid) == data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2 * CHUNK_SIZE + 100))
def test_round_trip(tmp_path: Path, data: bytes) -> None:
    store = LocalStore(tmp_path)
    cid = store.put(data)
    assert cid == cid_for_bytes(data)
    assert store.get(cid) == data


def test_round_trip_across_chunk_boundary(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for size in (0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 3 * CHUNK_SIZE):
        data = bytes([size % 251]) * size
        assert store.get(store.put(data)) == data


def test_factory(tmp_path: Path) -> None:
    a = open_store(f"local:{tmp_path / 'a'}")
    assert isinstance(a, LocalStore) and a.root == tmp_path / "a"
    b = open_store(str(tmp_path / "b"))
    assert isinstance(b, LocalStore) and b.root == tmp_path / "b"
    assert isinstance(open_store(tmp_path / "c"), LocalStore)
    k = open_store("http://127.0.0.1:5001/")
    assert isinstance(k, KuboStore) and k.api_url == "http://127.0.0.1:5001"
    for bad in ("", "local:", "ftp://x"):
        with pytest.raises(ConfigError):
            open_store(bad)
