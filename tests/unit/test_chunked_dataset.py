"""Chunked datasets: the same bits as one file, only the chunks a unit reads are fetched, and chunks that do
not match their manifest are refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gensyn_py.errors import SpecError
from gensyn_py.node.preflight import UnfitJob, check_unit_data
from gensyn_py.requester.errors import DatasetError
from gensyn_py.requester.validate import fetch_dataset
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.chunks import ChunkedDataset, ChunkEntry, chunked_entry, open_dataset, split
from gensyn_py.train.data import Dataset, batch_indices, dataset_entry, digits
from gensyn_py.train.spec import JobSpec, parse_spec
from gensyn_py.train.trainer import Trainer
from tests.unit.test_preflight_shape import unit as open_unit
from tests.unit.trainkit import spec_dict


def digits_set() -> Dataset:
    return digits(image=False)[0]


def store_chunked(store: LocalStore, ds: Dataset, n: int) -> dict[str, Any]:
    manifest, files = split(ds, n)
    for f in files:
        store.put(f)
    data = manifest.to_bytes()
    store.put(data)
    return chunked_entry(ds, manifest, data)


def spec_with(entry: dict[str, Any], **over: Any) -> JobSpec:
    return parse_spec(spec_dict("mlp", dataset=entry, rounds=1, shards=2, **over))


class CountingGet:
    def __init__(self, store: LocalStore) -> None:
        self.store = store
        self.cids: list[str] = []

    def __call__(self, cid: str) -> bytes:
        self.cids.append(cid)
        return self.store.get(cid)


@pytest.mark.parametrize("mode", ["exact", "repro"])
def test_a_chunked_dataset_trains_the_same_bits_as_the_same_examples_in_one_file(tmp_path: Path, mode: str) -> None:
    store, ds = LocalStore(tmp_path), digits_set()
    whole = spec_with(dataset_entry(ds, ds.to_bytes()), mode=mode)
    chunked = spec_with(store_chunked(store, ds, 100), mode=mode)
    opened = open_dataset(chunked.dataset, store.get)
    assert isinstance(opened, ChunkedDataset)
    a, b = Trainer(whole, ds, 0, 1, "cpu"), Trainer(chunked, opened, 0, 1, "cpu")
    a.run(whole.steps_per_unit)
    b.run(chunked.steps_per_unit)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(np.array_equal(sa[k].numpy(), sb[k].numpy()) for k in sa)


def test_a_unit_fetches_only_the_chunks_its_steps_read(tmp_path: Path) -> None:
    store, ds = LocalStore(tmp_path), digits_set()
    spec = spec_with(store_chunked(store, ds, 10), steps_per_unit=4, checkpoint_interval=2)
    get = CountingGet(store)
    opened = open_dataset(spec.dataset, get)
    assert isinstance(opened, ChunkedDataset)
    t = Trainer(spec, opened, 0, 0, "cpu")
    read: set[int] = set()
    for step in range(spec.steps_per_unit):
        read |= opened.chunks_of(batch_indices(t.shard_idx, spec.batch_size, spec.seed, 0, 0, step))
    t.run(spec.steps_per_unit)
    total = len(opened.manifest.chunks)
    assert set(opened.held()) == read  # exactly the chunks its batches read, each fetched once
    assert len(get.cids) == 1 + len(read) and len(set(get.cids)) == len(get.cids)
    assert len(read) < total / 2  # 4 steps x 16 examples of 144 chunks


def test_a_chunk_that_does_not_match_its_manifest_is_refused_naming_it(tmp_path: Path) -> None:
    store, ds = LocalStore(tmp_path), digits_set()
    manifest, files = split(ds, 100)
    for f in files:
        store.put(f)
    swapped = manifest.model_copy(update={"chunks": [manifest.chunks[1], *manifest.chunks[1:]]})
    data = swapped.to_bytes()
    store.put(data)
    spec = spec_with(chunked_entry(ds, swapped, data))
    opened = open_dataset(spec.dataset, store.get)
    assert isinstance(opened, ChunkedDataset)
    assert opened.chunk(1).num_examples == 100
    last = len(manifest.chunks) - 1
    bad = manifest.model_copy(update={"chunks": [*manifest.chunks[:last], manifest.chunks[0]]})
    data = bad.to_bytes()
    store.put(data)
    with pytest.raises(SpecError, match=rf"dataset chunk {last} holds 100 examples .* the manifest and spec say 37"):
        open_dataset(spec_with(chunked_entry(ds, bad, data)).dataset, store.get).chunk(last)  # type: ignore[attr-defined]
    liar = manifest.model_copy(update={"chunks": [ChunkEntry(cid=manifest.chunks[0].cid,
                                                             size_bytes=manifest.chunks[0].size_bytes + 1),
                                                  *manifest.chunks[1:]]})
    data = liar.to_bytes()
    store.put(data)
    with pytest.raises(SpecError, match="dataset chunk 0: its bytes do not match its manifest entry"):
        open_dataset(spec_with(chunked_entry(ds, liar, data)).dataset, store.get).chunk(0)  # type: ignore[attr-defined]


def test_the_requester_checks_every_chunk_before_money_moves(tmp_path: Path) -> None:
    store, ds = LocalStore(tmp_path / "all"), digits_set()
    entry = store_chunked(store, ds, 100)
    assert isinstance(fetch_dataset(spec_with(entry), store), ChunkedDataset)
    partial = LocalStore(tmp_path / "partial")
    manifest, files = split(ds, 100)
    for f in files[:-1]:
        partial.put(f)
    partial.put(manifest.to_bytes())
    with pytest.raises(DatasetError, match=rf"a chunk \({manifest.chunks[-1].cid}\) of dataset .* is not in the"):
        fetch_dataset(spec_with(entry), partial)
    with pytest.raises(DatasetError, match="the spec declares 1436 in chunks of 100"):
        fetch_dataset(spec_with({**entry, "num_examples": 1436}), store)


def test_a_unit_reading_more_than_the_per_unit_limit_is_unfit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    import gensyn_py.node.preflight as preflight

    store, ds = LocalStore(tmp_path), digits_set()
    spec = spec_with(store_chunked(store, ds, 10))
    opened = open_dataset(spec.dataset, store.get)
    unit = open_unit(0)
    check_unit_data(spec, opened, unit)  # fits, and fetched what it reads
    assert isinstance(opened, ChunkedDataset) and opened.held()
    monkeypatch.setattr(preflight, "MAX_UNIT_DATA_BYTES", 1000)
    with pytest.raises(UnfitJob, match="a unit may read at most 1,000"):
        check_unit_data(spec, opened, unit)


def test_one_file_is_capped_and_a_chunked_dataset_is_not() -> None:
    ds = digits_set()
    entry = dataset_entry(ds, ds.to_bytes())
    with pytest.raises(SpecError, match="store a larger one in chunks"):
        spec_with({**entry, "size_bytes": 600 * 2**20})
    assert spec_with({**entry, "size_bytes": 600 * 2**20, "chunk_examples": 100}).dataset.chunk_examples == 100
    assert b"chunk_examples" not in spec_with(entry).canonical_bytes()  # one-file specs keep their bytes


def test_data_pack_writes_chunks_a_spec_file_uploads(tmp_path: Path) -> None:
    from gensyn_py.cli.main import cli
    from gensyn_py.requester.spec_file import load_spec

    x = np.random.Generator(np.random.PCG64(0)).random((50, 4), dtype=np.float32)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(50, dtype=np.int64) % 3)
    res = CliRunner().invoke(cli, ["data", "pack", str(tmp_path / "d.npz"), "--out", str(tmp_path / "chunks"),
                                   "--chunk-examples", "16", "-q"])
    assert res.exit_code == 0, res.output
    entry = json.loads(res.stdout)
    assert entry["chunk_examples"] == 16 and entry["num_examples"] == 50
    assert sorted(p.name for p in (tmp_path / "chunks").iterdir()) == [
        "chunk-00000.safetensors", "chunk-00001.safetensors", "chunk-00002.safetensors", "chunk-00003.safetensors",
        "manifest.json"]
    spec = {**spec_dict("mlp"), "model": {"family": "mlp", "sizes": {"in_features": 4, "num_classes": 3}},
            "dataset": {"file": "chunks"}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    store = LocalStore(tmp_path / "store")
    loaded = load_spec(tmp_path / "spec.json", store)
    assert loaded.spec.dataset.model_dump() == {**entry}
    opened = open_dataset(loaded.spec.dataset, store.get)
    assert np.array_equal(opened.x[np.arange(50)], x)


def test_a_manifest_carries_the_packers_metadata_and_without_any_keeps_its_bytes(tmp_path: Path) -> None:
    from gensyn_py.train.chunks import parse_manifest, write_chunked

    ds = digits_set()
    plain = write_chunked(ds, 500, tmp_path / "plain")
    data = (tmp_path / "plain" / "manifest.json").read_bytes()
    assert b"metadata" not in data and parse_manifest(data).metadata is None
    manifest = split(ds, 500)[0]  # the manifest as before metadata existed: the same bytes, the same CID
    assert plain == chunked_entry(ds, manifest, manifest.to_bytes())
    meta = {"kind": "arrays", "classes": json.dumps(["a", "b"])}
    write_chunked(ds, 500, tmp_path / "meta", meta)
    assert parse_manifest((tmp_path / "meta" / "manifest.json").read_bytes()).metadata == meta
    bad = json.loads(data)
    bad["metadata"] = {"kind": 3}
    with pytest.raises(SpecError, match="metadata"):
        parse_manifest(json.dumps(bad).encode())
