"""Integer index maps used by the data-movement ops (im2col, col2im, pooling windows, causal masks).

Every map is a pure function of a few integers, computed here with NumPy, so the torch backend, the
NumPy reference and a verifier that recomputes one element all derive the same map from the same
attributes.  ``-1`` in an index map stands for "+0.0" (a padding position) in ``take``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

IntArr = NDArray[np.int64]


def _im2col(b: int, c: int, h: int, w: int, k: int, pad: int) -> IntArr:
    """(B*OH*OW, C*k*k): row (n, oy, ox), column (ci, ky, kx) -> flat index of x[n, ci, oy+ky-pad, ox+kx-pad]
    in the (B, C, H, W) input, or -1 outside (stride 1, so OH = H + 2*pad - k + 1)."""
    oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    n, oy, ox, ci, ky, kx = np.meshgrid(
        np.arange(b), np.arange(oh), np.arange(ow), np.arange(c), np.arange(k), np.arange(k), indexing="ij"
    )
    y, x = oy + ky - pad, ox + kx - pad
    inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
    flat = ((n * c + ci) * h + y) * w + x
    return np.where(inside, flat, -1).reshape(b * oh * ow, c * k * k).astype(np.int64)


def _col2im(b: int, c: int, h: int, w: int, k: int, pad: int) -> IntArr:
    """(B*C*H*W, k*k): for input element (n, ci, y, x) and kernel offset (ky, kx), the flat index in the
    (B*OH*OW, C*k*k) column matrix of the entry that read it, or -1 (no such output position)."""
    oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    n, ci, y, x, ky, kx = np.meshgrid(
        np.arange(b), np.arange(c), np.arange(h), np.arange(w), np.arange(k), np.arange(k), indexing="ij"
    )
    oy, ox = y - ky + pad, x - kx + pad
    inside = (oy >= 0) & (oy < oh) & (ox >= 0) & (ox < ow)
    flat = ((n * oh + oy) * ow + ox) * (c * k * k) + (ci * k + ky) * k + kx
    return np.where(inside, flat, -1).reshape(b * c * h * w, k * k).astype(np.int64)


def _pool(b: int, c: int, h: int, w: int, k: int) -> IntArr:
    """(B*C*(H/k)*(W/k), k*k): the window of each output (n, ci, py, px), row-major inside the window."""
    n, ci, py, px, ky, kx = np.meshgrid(
        np.arange(b), np.arange(c), np.arange(h // k), np.arange(w // k), np.arange(k), np.arange(k), indexing="ij"
    )
    flat = ((n * c + ci) * h + py * k + ky) * w + px * k + kx
    return flat.reshape(-1, k * k).astype(np.int64)


def _unpool(b: int, c: int, h: int, w: int, k: int) -> IntArr:
    """(B, C, H, W): the inverse of ``pool`` (the windows partition the input): the flat index in the
    (N, k*k) window matrix that holds each input element."""
    inv = np.empty(b * c * h * w, dtype=np.int64)
    inv[_pool(b, c, h, w, k).reshape(-1)] = np.arange(b * c * h * w)
    return inv.reshape(b, c, h, w)


def _causal(t: int) -> NDArray[np.bool_]:
    """(T, T) bool: True where key position <= query position."""
    return np.tril(np.ones((t, t), dtype=bool))


_MAKERS: dict[str, Any] = {"im2col": _im2col, "col2im": _col2im, "pool": _pool, "unpool": _unpool, "causal": _causal}


@cache
def index_map(kind: str, params: tuple[int, ...]) -> NDArray[Any]:
    """The map `kind` for integer parameters `params` (read-only, cached)."""
    if kind not in _MAKERS:
        raise ValueError(f"unknown index map {kind!r}")
    out: NDArray[Any] = _MAKERS[kind](*params)
    out.setflags(write=False)
    return out
