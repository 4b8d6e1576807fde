"""Datasets larger than memory: fixed-size chunks, each its own CID, under a dataset manifest.

A chunked dataset's spec entry names the **manifest** (`dataset.cid`) and its chunk size
(`dataset.chunk_examples`); `size_bytes` is the sum of the chunks' sizes. The manifest is canonical JSON:

    {"format": "gensyn-chunked-dataset", "version": 1, "chunk_examples": N, "num_examples": M,
     "chunks": [{"cid": ..., "size_bytes": ...}, ...]}

Chunk k is an ordinary dataset file (`train/data.py`: safetensors `x` and `y`) holding examples
[k*N, min((k+1)*N, M)). The example order, shard membership and batch order are the same pure functions of
(seed, round, shard, step) as for a dataset in one file, so the same spec over the same examples trains the same
bits whichever way they are stored. A node fetches a chunk the first time one of its steps reads an example in
it, checks it against its CID and the spec's shapes, and keeps it: it never holds chunks no step of its reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gensyn_py.errors import SpecError
from gensyn_py.train.data import Dataset, batch_indices, shard_indices
from gensyn_py.train.spec import CidV1

if TYPE_CHECKING:
    from gensyn_py.train.spec import DatasetSpec, JobSpec

FORMAT = "gensyn-chunked-dataset"
MAX_CHUNK_BYTES = 512 * 1024 * 1024  # one chunk is decoded whole, so it must fit a node's memory
MAX_CHUNKS = 65_536
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


class ChunkEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    cid: CidV1
    size_bytes: int = Field(gt=0, le=MAX_CHUNK_BYTES)


class ChunkManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: Literal["gensyn-chunked-dataset"] = "gensyn-chunked-dataset"
    version: Literal[1] = 1
    chunk_examples: int = Field(gt=0)
    num_examples: int = Field(gt=0)
    chunks: list[ChunkEntry] = Field(min_length=1, max_length=MAX_CHUNKS)
    # What the packer says of the data (`packing`'s metadata: kind, class names, a text corpus's tokenizer), as a
    # one-file dataset carries it in its header; absent when there is none, so older manifests keep their bytes.
    metadata: dict[str, str] | None = None

    @model_validator(mode="after")
    def _covers(self) -> ChunkManifest:
        want = -(-self.num_examples // self.chunk_examples)
        if len(self.chunks) != want:
            raise ValueError(f"{self.num_examples} examples in chunks of {self.chunk_examples} make {want} chunks, "
                             f"the manifest lists {len(self.chunks)}")
        return self

    @property
    def size_bytes(self) -> int:
        return sum(c.size_bytes for c in self.chunks)

    def examples_in(self, k: int) -> int:
        return min(self.chunk_examples, self.num_examples - k * self.chunk_examples)

    def to_bytes(self) -> bytes:
        from gensyn_py.train.spec import canonical_json

        return canonical_json(self.model_dump(mode="json", exclude_none=True))


def parse_manifest(data: bytes) -> ChunkManifest:
    if len(data) > MAX_MANIFEST_BYTES:
        raise SpecError(f"dataset manifest: {len(data):,} bytes; at most {MAX_MANIFEST_BYTES:,}")
    try:
        return ChunkManifest.model_validate(json.loads(data))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"dataset manifest: not JSON ({e})") from None
    except ValidationError as e:
        where = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'manifest'}: {err['msg']}" for err in e.errors())
        raise SpecError(f"dataset manifest: {where}") from None


def split(ds: Dataset, chunk_examples: int) -> tuple[ChunkManifest, list[bytes]]:
    """`ds` as chunk files of `chunk_examples` examples and the manifest naming them."""
    if chunk_examples <= 0:
        raise SpecError(f"chunk_examples must be positive, got {chunk_examples}")
    encoded = [_encoded(k, ds.subset(np.arange(i, min(i + chunk_examples, ds.num_examples))))
               for k, i in enumerate(range(0, ds.num_examples, chunk_examples))]
    return (ChunkManifest(chunk_examples=chunk_examples, num_examples=ds.num_examples,
                          chunks=[entry for entry, _ in encoded]), [data for _, data in encoded])


def _encoded(k: int, chunk: Dataset) -> tuple[ChunkEntry, bytes]:
    """Chunk `k`'s file and its manifest entry; refused over MAX_CHUNK_BYTES."""
    from gensyn_py.storage.cid import cid_for_bytes

    data = chunk.to_bytes()
    if len(data) > MAX_CHUNK_BYTES:
        raise SpecError(f"chunk {k} is {len(data):,} bytes; a chunk is at most {MAX_CHUNK_BYTES:,} "
                        f"(use fewer examples per chunk)")
    return ChunkEntry(cid=cid_for_bytes(data), size_bytes=len(data)), data


class ChunkedArray:
    """`x` or `y` of a chunked dataset: indexing by an array of example indices fetches only their chunks."""

    def __init__(self, owner: ChunkedDataset, field: str, inner: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self._owner, self._field = owner, field
        self.shape = (owner.manifest.num_examples, *inner)
        self.dtype = dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx: Any) -> np.ndarray:
        rows = np.arange(self.shape[0])[idx] if isinstance(idx, slice) else np.asarray(idx, dtype=np.int64)
        flat = rows.reshape(-1)
        out = np.empty((len(flat), *self.shape[1:]), dtype=self.dtype)
        n = self._owner.manifest.chunk_examples
        for k in np.unique(flat // n):
            sel = flat // n == k
            part = getattr(self._owner.chunk(int(k)), self._field)
            out[sel] = part[flat[sel] - int(k) * n]
        return out.reshape(*rows.shape, *self.shape[1:])


class ChunkedDataset(Dataset):
    """A chunked dataset read through `get(cid) -> bytes`, each chunk fetched once, checked, then kept.

    A `Dataset` whose `x` and `y` fetch on indexing, so the trainer and everything above it take either."""

    def __init__(self, manifest: ChunkManifest, spec: DatasetSpec, get: Callable[[str], bytes]) -> None:
        object.__setattr__(self, "manifest", manifest)  # a frozen dataclass: fields are set this way
        object.__setattr__(self, "spec", spec)
        x = ChunkedArray(self, "x", tuple(spec.x_shape), np.dtype(spec.x_dtype))
        y = ChunkedArray(self, "y", tuple(spec.y_shape), np.dtype(np.int64))
        object.__setattr__(self, "x", cast("np.ndarray", x))
        object.__setattr__(self, "y", cast("np.ndarray", y))
        object.__setattr__(self, "_get", get)
        object.__setattr__(self, "_chunks", {})
        object.__setattr__(self, "on_chunk", None)  # (k, chunk) -> None, e.g. a label check, on each chunk fetched

    manifest: ChunkManifest
    spec: DatasetSpec
    _get: Callable[[str], bytes]
    _chunks: dict[int, Dataset]
    on_chunk: Callable[[int, Dataset], None] | None

    def to_bytes(self) -> bytes:
        raise SpecError("a chunked dataset has no single file: its manifest names its chunks")

    @property
    def num_examples(self) -> int:
        return int(self.manifest.num_examples)

    def held(self) -> dict[int, Dataset]:
        """The chunks fetched so far, by index."""
        return dict(self._chunks)

    def chunk(self, k: int) -> Dataset:
        if k not in self._chunks:
            self._chunks[k] = self._fetch(k)
        return self._chunks[k]

    def _fetch(self, k: int) -> Dataset:
        from gensyn_py.storage.cid import cid_for_bytes

        entry = self.manifest.chunks[k]
        data = self._get(entry.cid)
        if len(data) != entry.size_bytes or cid_for_bytes(data) != entry.cid:
            raise SpecError(f"dataset chunk {k}: its bytes do not match its manifest entry ({entry.cid})")
        try:
            ds = Dataset.from_bytes(data)
        except SpecError as e:
            raise SpecError(f"dataset chunk {k}: {e}") from None
        want = self.manifest.examples_in(k)
        s = self.spec
        if ds.num_examples != want or list(ds.x.shape[1:]) != s.x_shape or str(ds.x.dtype) != s.x_dtype \
                or list(ds.y.shape[1:]) != s.y_shape:
            raise SpecError(f"dataset chunk {k} holds {ds.num_examples} examples of x {ds.x.dtype}"
                            f"{list(ds.x.shape[1:])}, y {list(ds.y.shape[1:])}; the manifest and spec say {want} of "
                            f"x {s.x_dtype}{s.x_shape}, y {s.y_shape}")
        if self.on_chunk is not None:
            self.on_chunk(k, ds)
        return ds

    def fetch_all(self) -> list[Dataset]:
        """Every chunk, in order, each fetched and checked once (a requester's whole-dataset checks)."""
        return [self.chunk(k) for k in range(len(self.manifest.chunks))]

    def subset(self, idx: np.ndarray) -> Dataset:
        return Dataset(self.x[idx], self.y[idx])

    def chunks_of(self, indices: np.ndarray) -> set[int]:
        """The chunks holding these example indices."""
        return {int(k) for k in np.unique(np.asarray(indices).reshape(-1) // self.manifest.chunk_examples)}


def unit_chunks(dataset: ChunkedDataset, spec: JobSpec, round_: int, shard: int) -> set[int]:
    """The chunks that the steps of unit (round_, shard) read: its batches are a pure function of the spec."""
    members = shard_indices(dataset.num_examples, spec.shards, shard, spec.seed)
    chunks: set[int] = set()
    for step in range(spec.steps_per_unit):
        chunks |= dataset.chunks_of(batch_indices(members, spec.batch_size, spec.seed, round_, shard, step))
    return chunks


def open_dataset(entry: DatasetSpec, get: Callable[[str], bytes]) -> Dataset | ChunkedDataset:
    """The dataset a spec's entry names, read through `get(cid)`: decoded whole, or its manifest (chunks on
    demand), each checked against the entry."""
    if entry.chunk_examples is None:
        return Dataset.from_bytes(get(entry.cid), entry)
    manifest = parse_manifest(get(entry.cid))
    if (manifest.chunk_examples, manifest.num_examples, manifest.size_bytes) != \
            (entry.chunk_examples, entry.num_examples, entry.size_bytes):
        raise SpecError(f"dataset manifest {entry.cid}: {manifest.num_examples} examples in chunks of "
                        f"{manifest.chunk_examples}, {manifest.size_bytes:,} bytes; the spec declares "
                        f"{entry.num_examples} in chunks of {entry.chunk_examples}, {entry.size_bytes:,} bytes")
    return ChunkedDataset(manifest, entry, get)


MANIFEST_NAME = "manifest.json"


def chunk_name(k: int) -> str:
    return f"chunk-{k:05d}.safetensors"


def chunked_entry(sample: Dataset, manifest: ChunkManifest, manifest_bytes: bytes) -> dict[str, Any]:
    """The spec's `dataset` entry of a chunked dataset: the shapes of `sample` (the whole dataset, or any one
    chunk), the counts of the manifest."""
    from gensyn_py.storage.cid import cid_for_bytes

    return {"cid": cid_for_bytes(manifest_bytes), "x_shape": list(sample.x.shape[1:]),
            "x_dtype": str(sample.x.dtype), "y_shape": list(sample.y.shape[1:]),
            "num_examples": manifest.num_examples, "size_bytes": manifest.size_bytes,
            "chunk_examples": manifest.chunk_examples}


def write_chunked(ds: Dataset, chunk_examples: int, folder: Path, metadata: dict[str, str] | None = None
                  ) -> dict[str, Any]:
    """`ds` as a folder of chunk files and their manifest (with the packer's `metadata`); returns the spec's
    `dataset` entry."""
    writer = ChunkWriter(folder, chunk_examples, metadata)
    for i in range(0, ds.num_examples, chunk_examples):
        writer.add(ds.subset(np.arange(i, min(i + chunk_examples, ds.num_examples))))
    return writer.close()


class ChunkWriter:
    """Writes a chunked dataset one chunk at a time, so that a packer holds one chunk in memory however large
    the dataset: `add` each chunk's examples in order (every chunk but the last exactly `chunk_examples`), then
    `close` writes the manifest (last: a folder with a manifest has every chunk it names) and returns the spec's
    `dataset` entry."""

    def __init__(self, folder: Path, chunk_examples: int, metadata: dict[str, str] | None = None) -> None:
        if chunk_examples <= 0:
            raise SpecError(f"chunk_examples must be positive, got {chunk_examples}")
        self.folder, self.chunk_examples, self.metadata = folder, chunk_examples, metadata or None
        self.entries: list[ChunkEntry] = []
        self.examples = 0
        self.short = False  # a chunk shorter than chunk_examples was added: it must be the last
        self.sample: Dataset | None = None

    def add(self, chunk: Dataset) -> None:
        from gensyn_py.storage.atomic import atomic_write

        k = len(self.entries)
        n = chunk.num_examples
        if self.short or n == 0 or n > self.chunk_examples:
            raise SpecError(f"chunk {k}: {n} examples after {self.examples}; every chunk but the last holds "
                            f"exactly {self.chunk_examples}")
        if self.sample is not None and (chunk.x.shape[1:], chunk.x.dtype, chunk.y.shape[1:]) != \
                (self.sample.x.shape[1:], self.sample.x.dtype, self.sample.y.shape[1:]):
            raise SpecError(f"chunk {k}: examples of x {chunk.x.dtype}{list(chunk.x.shape[1:])}, y "
                            f"{list(chunk.y.shape[1:])}, unlike the first chunk's")
        if len(self.entries) >= MAX_CHUNKS:
            raise SpecError(f"more than {MAX_CHUNKS:,} chunks; use more examples per chunk")
        entry, data = _encoded(k, chunk)
        atomic_write(self.folder / chunk_name(k), data)
        self.entries.append(entry)
        self.examples += n
        self.short = n < self.chunk_examples
        if self.sample is None:
            self.sample = chunk.subset(np.arange(1))

    def close(self) -> dict[str, Any]:
        from gensyn_py.storage.atomic import atomic_write

        if self.sample is None:
            raise SpecError("no examples: a dataset holds at least one")
        manifest = ChunkManifest(chunk_examples=self.chunk_examples, num_examples=self.examples,
                                 chunks=self.entries, metadata=self.metadata)
        data = manifest.to_bytes()
        if len(data) > MAX_MANIFEST_BYTES:  # a tokenizer of a huge vocabulary, say: nodes would refuse it
            raise SpecError(f"the manifest would be {len(data):,} bytes; at most {MAX_MANIFEST_BYTES:,}")
        atomic_write(self.folder / MANIFEST_NAME, data)
        return chunked_entry(self.sample, manifest, data)


def read_chunked(folder: Path) -> tuple[bytes, list[bytes]]:
    """A chunked dataset folder's manifest bytes and chunk files, each chunk checked against its entry."""
    from gensyn_py.storage.cid import cid_for_bytes

    data = (folder / MANIFEST_NAME).read_bytes()
    manifest = parse_manifest(data)
    files = []
    for k, entry in enumerate(manifest.chunks):
        chunk = (folder / chunk_name(k)).read_bytes()
        if cid_for_bytes(chunk) != entry.cid:
            raise SpecError(f"{folder / chunk_name(k)} does not match its manifest entry {entry.cid}")
        files.append(chunk)
    return data, files
