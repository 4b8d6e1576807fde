"""The safetensors bytes of a packed dataset, written here rather than by `safetensors.numpy.save`.

That writer emits `__metadata__` in hash-map order, which changes from one process to the next, so the same
input would pack to different bytes and a different CID. This writer emits the same format with sorted keys:
the bytes depend only on the arrays and the metadata. The layout is what safetensors itself does: an
8-byte little-endian header length, the JSON header padded with spaces to a multiple of 8, then each tensor's
little-endian bytes, widest dtype first so that every tensor is aligned. `read_metadata` reads the
header back without touching the tensors.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from gensyn_py.errors import SpecError

_DTYPES = {np.dtype(np.float32): ("F32", "<f4"), np.dtype(np.int64): ("I64", "<i8")}
_MAX_HEADER = 100 * 1024 * 1024  # safetensors refuses larger headers


def serialize(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> bytes:
    """Safetensors bytes for float32/int64 `tensors` and string `metadata`, identical for identical input."""
    order = sorted(tensors, key=lambda name: (-tensors[name].dtype.itemsize, name))
    header: dict[str, object] = {"__metadata__": dict(metadata)} if metadata else {}
    blobs = []
    offset = 0
    for name in order:
        arr = tensors[name]
        tag, little = _DTYPES[arr.dtype]
        blob = np.ascontiguousarray(arr, dtype=little).tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text, *blobs])


def read_metadata(data: bytes) -> dict[str, str]:
    """The `__metadata__` strings of safetensors `data` (empty when it has none), e.g. a packed dataset's
    `kind`, `classes` or `tokenizer`."""
    if len(data) < 8:
        raise SpecError(f"not safetensors: {len(data)} bytes, shorter than the 8-byte header length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > min(len(data) - 8, _MAX_HEADER):
        raise SpecError(f"not safetensors: the header claims {size} bytes, the data has {len(data) - 8} after it")
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SpecError(f"not safetensors: the header is not JSON ({e})") from None
    meta = header.get("__metadata__", {}) if isinstance(header, dict) else None
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise SpecError("not safetensors: __metadata__ must map strings to strings")
    return meta
