"""Read a job spec file, resolving a local dataset file into its content-addressed `dataset` entry.

A spec file is the JSON of `gensyn_py.train.spec.JobSpec`, except that its
`dataset` may be `{"file": "digits.safetensors"}` (a path relative to the
spec file) instead of a full entry; `--dataset FILE` does the same from the
command line and wins over the file. The dataset file is decoded (safetensors
with exactly `x` and `y`, never pickle) and described by `dataset_entry`; with
a store, its bytes are uploaded so solvers can fetch them by CID.

Likewise a `model` of `{"family": "onnx", "file": "model.onnx"}` names a local
ONNX file: it is parsed and checked against the whitelist here, then described
as `{"family": "onnx", "onnx": {"cid", "size_bytes"}}` and, with a store, uploaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import SpecError
from gensyn_py.requester.errors import DatasetError

if TYPE_CHECKING:
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.spec import JobSpec


@dataclass(frozen=True)
class LoadedSpec:
    spec: JobSpec
    dataset_file: Path | None  # the local file the dataset came from, if any
    uploaded: bool  # whether the dataset bytes were put into the store


def read_spec_json(path: Path) -> dict[str, Any]:
    """The spec file as a JSON object; SpecError naming the file otherwise."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read job spec {path}: {exc.strerror or exc}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"job spec {path} is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise SpecError(f"job spec {path} must be a JSON object")
    return obj


def dataset_file_entry(path: Path, store: ContentStore | None = None) -> dict[str, Any]:
    """The spec's `dataset` entry for a local safetensors file, or a folder of chunks (`gensyn data pack
    --chunk-examples`); uploads it (every chunk, then the manifest) when a store is given."""
    from gensyn_py.train.data import Dataset, dataset_entry

    if path.is_dir():
        return _chunked_entry(path, store)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read dataset file {path}: {exc.strerror or exc}") from None
    try:
        ds = Dataset.from_bytes(data)
    except SpecError as exc:
        raise DatasetError(f"dataset file {path}: {exc}") from None
    entry = dataset_entry(ds, data)
    if store is not None:
        store.put(data)
    return entry


def _chunked_entry(folder: Path, store: ContentStore | None) -> dict[str, Any]:
    from gensyn_py.train.chunks import chunked_entry, parse_manifest, read_chunked
    from gensyn_py.train.data import Dataset

    try:
        manifest_bytes, files = read_chunked(folder)
    except OSError as exc:
        raise DatasetError(f"cannot read chunked dataset {folder}: {exc.strerror or exc}") from None
    except SpecError as exc:
        raise DatasetError(f"chunked dataset {folder}: {exc}") from None
    entry = chunked_entry(Dataset.from_bytes(files[0]), parse_manifest(manifest_bytes), manifest_bytes)
    if store is not None:
        for data in files:
            store.put(data)
        store.put(manifest_bytes)
    return entry


def model_file_entry(path: Path, store: ContentStore | None = None) -> dict[str, Any]:
    """The spec's `model` entry for a local ONNX file, checked and loaded for this process; uploads it when a
    store is given."""
    from gensyn_py.storage.cid import cid_for_bytes
    from gensyn_py.train.graphs.cache import load

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"model.file: cannot read {path}: {exc.strerror or exc}") from None
    cid = cid_for_bytes(data)
    try:
        load(cid, data)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    if store is not None:
        store.put(data)
    return {"family": "onnx", "onnx": {"cid": cid, "size_bytes": len(data)}}


def load_spec(path: Path, store: ContentStore | None = None, dataset_file: Path | None = None) -> LoadedSpec:
    """Parse a spec file; a local dataset (in the file or `dataset_file`) is described and, with a store, uploaded."""
    from gensyn_py.train.spec import parse_spec

    obj = read_spec_json(path)
    local = dataset_file
    if local is None:
        dataset = obj.get("dataset")
        if isinstance(dataset, dict) and set(dataset) == {"file"}:
            if not isinstance(dataset["file"], str) or not dataset["file"]:
                raise SpecError(f"job spec {path}: dataset.file must be a path")
            local = path.parent / dataset["file"]
    if local is not None:
        obj["dataset"] = dataset_file_entry(local, store)
    model = obj.get("model")
    if isinstance(model, dict) and set(model) == {"family", "file"} and model["family"] == "onnx":
        if not isinstance(model["file"], str) or not model["file"]:
            raise SpecError(f"job spec {path}: model.file must be a path")
        obj["model"] = model_file_entry(path.parent / model["file"], store)
    try:
        spec = parse_spec(obj)
    except SpecError as exc:
        raise SpecError(f"job spec {path}: {exc}") from None
    return LoadedSpec(spec, local, local is not None and store is not None)
