"""Checks a job must pass before any money moves: its dataset is stored and fits its model.

`parse_spec` already checked the spec's fields against the registry. Here:

1. the dataset's CID is in the content store (solvers fetch it from there);
2. its bytes are what the spec declares (size, example count, shapes, dtype);
3. the model accepts it: one forward pass on two examples, and every target
   (every token, for a language model) is inside the model's output range.
   This catches what a field-by-field check cannot: an MLP whose `in_features`
   is not the flattened input size, a context longer than the model's, labels
   beyond `num_classes`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gensyn_py.errors import ContentNotFound, SpecError, StorageError
from gensyn_py.requester.errors import DatasetError

if TYPE_CHECKING:
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec


def fetch_dataset(spec: JobSpec, store: ContentStore, timeout: float = 30.0) -> Dataset:
    """The spec's dataset from the store, checked against its declared size and shapes; a chunked one's every
    chunk against its manifest entry (kept: the label check and the step table read them next)."""
    from gensyn_py.train.chunks import ChunkedDataset, open_dataset

    cid = spec.dataset.cid

    def get(name: str) -> bytes:
        try:
            return store.get(name, timeout)
        except ContentNotFound:
            what = "dataset" if name == cid else f"a chunk ({name}) of dataset {cid}"
            raise DatasetError(f"{what} is not in the content store {store!r}: upload it first "
                               "(or reference a local file with --dataset FILE)") from None
        except StorageError as exc:
            raise DatasetError(f"dataset {cid} cannot be read from {store!r}: {exc}") from None

    try:
        ds = open_dataset(spec.dataset, get)
        if isinstance(ds, ChunkedDataset):
            ds.fetch_all()
        return ds
    except SpecError as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"dataset {cid} does not match the spec: {exc}") from None


def check_model_fits(spec: JobSpec, ds: Dataset) -> None:
    """DatasetError unless the spec's model runs on the dataset and its targets are in range."""
    import numpy as np
    import torch

    from gensyn_py.train.global_rng import seeded
    from gensyn_py.train.models import build_model, graph_facts, task_of

    model_name = f"{spec.model.family}{dict(spec.model.sizes)}" if spec.model.onnx is None \
        else f"onnx {spec.model.onnx.cid[:16]}..."
    described = f"x {ds.x.dtype}{list(ds.x.shape[1:])}, y {ds.y.dtype}{list(ds.y.shape[1:])}"
    task = task_of(spec)
    if ds.y.dtype != np.int64:
        raise DatasetError(f"model {model_name} trains on int64 targets; the dataset's are {ds.y.dtype}")
    if spec.model.onnx is not None:  # its input, output and targets' shapes were checked with the graph
        _check_range(model_name, task, graph_facts(spec).outputs, ds)
        return
    try:
        with seeded(0), torch.no_grad():
            model = build_model(spec.model.family, spec.model.sizes)
            out = model(torch.from_numpy(np.ascontiguousarray(ds.x[:2])))
    except Exception as exc:  # any shape or dtype error torch raises
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(f"model {model_name} cannot run on the dataset ({described}): {first}") from None
    outputs = int(out.shape[-1])
    want_y = list(ds.x.shape[1:]) if task == "lm" else []
    if list(ds.y.shape[1:]) != want_y:
        raise DatasetError(f"model {model_name} needs targets shaped {want_y}; the dataset has {described}")
    _check_range(model_name, task, outputs, ds)


def _check_range(model_name: str, task: str, outputs: int, ds: Dataset) -> None:
    from gensyn_py.train.chunks import ChunkedDataset

    parts = list(ds.fetch_all()) if isinstance(ds, ChunkedDataset) else [ds]
    checks = [("target", p.y) for p in parts] + ([("token", p.x) for p in parts] if task == "lm" else [])
    for what, values in checks:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= outputs:
            raise DatasetError(
                f"model {model_name} has {outputs} outputs but the dataset's {what}s range over [{low}, {high}]"
            )


def validate_job(spec: JobSpec, store: ContentStore, timeout: float = 30.0) -> Dataset:
    """Run every pre-flight check; returns the verified dataset."""
    from gensyn_py.train.graphs.cache import fetch_model

    fetch_model(spec.model.onnx, store, timeout)
    ds = fetch_dataset(spec, store, timeout)
    check_model_fits(spec, ds)
    return ds
