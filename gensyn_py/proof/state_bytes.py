"""A state's canonical bytes, the safetensors format, gathered without holding the GIL.

The checkpoint writer (`proof/unit.py`) encodes each checkpoint on its own thread while training goes on. The
safetensors library copies every tensor into the result with the GIL held, and the training thread needs the GIL
between every op it runs: for the copy's whole length (1.5 s for a 1.2 GB state here) training stalls. So the
bytes are gathered here by one C call (`_gather_native.c`) that copies with the GIL released.

The bytes are exactly `safetensors.torch.save`'s for the canonical dtypes (float32, int64, uint8) and plain ASCII
names: the 8-byte little-endian header length; the header, compact JSON of each tensor's dtype, shape and data
offsets in layout order, padded with spaces to a multiple of 8; the data. The layout is safetensors': larger
dtypes first (int64, float32, uint8), then by name. tests/unit/test_state_bytes.py checks the equality on
generated states. Anything else, or a machine where the C module was not built, goes through safetensors itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

try:
    from gensyn_py.proof import _gather_native as _c  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler
    _c = None

if TYPE_CHECKING:
    import torch

# dtype name -> (rank in safetensors' layout, its header name)
_LAYOUT = {"torch.int64": (0, "I64"), "torch.float32": (1, "F32"), "torch.uint8": (2, "U8")}


def native_module() -> Any:
    """The C module, or None where it was not built."""
    return _c


def _plain(name: str) -> bool:
    """A name JSON writes the same in every encoder: printable ASCII, nothing escaped."""
    return name.isascii() and name.isprintable() and '"' not in name and "\\" not in name


def safetensors_bytes(tensors: Mapping[str, torch.Tensor]) -> bytes:
    """`safetensors.torch.save(tensors)`, for contiguous CPU tensors."""
    if _c is None or not all(str(t.dtype) in _LAYOUT and _plain(k) for k, t in tensors.items()):
        from safetensors.torch import save

        return save(dict(tensors))
    order = sorted(tensors, key=lambda k: (_LAYOUT[str(tensors[k].dtype)][0], k))
    header: dict[str, Any] = {}
    parts: list[tuple[int, int]] = []
    offset = 0
    for k in order:
        t = tensors[k]
        if not t.is_contiguous() or t.device.type != "cpu":
            raise ValueError(f"tensor {k!r} must be contiguous and on the CPU")
        n = t.numel() * t.element_size()
        header[k] = {"dtype": _LAYOUT[str(t.dtype)][1], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        if n:  # an empty tensor has no data to copy (and maybe no address)
            parts.append((t.data_ptr(), n))
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    head = len(text).to_bytes(8, "little") + text
    return bytes(_c.gather(len(head) + offset, head, parts))
