"""Model graphs by CID: fetched and checked once per process, then looked up wherever a spec names them.

Content addressing makes a process-wide cache safe: the bytes behind a CID never change, and they are
checked against it before they are parsed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gensyn_py.errors import SpecError, StorageError
from gensyn_py.train.graphs.graph import Graph, parse_graph

if TYPE_CHECKING:
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.spec import OnnxModelRef

_GRAPHS: dict[str, Graph] = {}
_LOCK = threading.Lock()


def load(cid: str, data: bytes, size_bytes: int | None = None) -> Graph:
    """Parse and check the model file `data`, which must be the content of `cid` (and `size_bytes` long)."""
    from gensyn_py.storage.cid import cid_for_bytes

    with _LOCK:
        if cid in _GRAPHS:
            return _GRAPHS[cid]
    if size_bytes is not None and len(data) != size_bytes:
        raise SpecError(f"model.onnx: the file is {len(data):,} bytes, the spec declares {size_bytes:,}")
    got = cid_for_bytes(data)
    if got != cid:
        raise SpecError(f"model.onnx: the file's CID is {got}, the spec names {cid}")
    graph = parse_graph(data)
    with _LOCK:
        return _GRAPHS.setdefault(cid, graph)


def loaded(cid: str) -> Graph:
    """The graph of `cid`, which this process has loaded (`load`)."""
    with _LOCK:
        graph = _GRAPHS.get(cid)
    if graph is None:
        raise SpecError(f"model.onnx: the model {cid} has not been fetched in this process")
    return graph


def is_loaded(cid: str) -> bool:
    with _LOCK:
        return cid in _GRAPHS


def fetch_model(ref: OnnxModelRef | None, store: ContentStore, timeout: float | None = 30.0) -> Graph | None:
    """The model file `ref` names, from the store, checked against its CID and size, parsed against the
    whitelist and loaded for this process; None for a registry family (no `model.onnx`)."""
    if ref is None:
        return None
    if is_loaded(ref.cid):
        return loaded(ref.cid)
    try:
        data = store.get(ref.cid, timeout)
    except StorageError as exc:  # a missing file, or a store that is down: the same kind, naming the field
        raise type(exc)(f"model.onnx: {ref.cid}: {exc}") from None
    return load(ref.cid, data, ref.size_bytes)
