"""NumPy arrays as a dataset: an `.npz` holding `x` and `y`, or an `.npy` of x with an `.npy` of y.

Files are loaded with `allow_pickle=False`: an array file can carry pickled Python objects, and unpickling
runs code, so an object array is refused rather than read. Floating x becomes float32 and integer x int64
(token ids); y must already be integers (class or token ids, never negative) and becomes int64. Nothing is
rounded or guessed: a float y is refused, so a regression target or a mis-saved label never trains quietly.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from gensyn_py.train.packing.common import Packed, PackError, finish

ARRAYS_METADATA = {"kind": "arrays"}

_INT64_MAX = np.iinfo(np.int64).max


def pack_arrays(source: Path, y_path: Path | None = None) -> Packed:
    """Pack `source` (an .npz, or the x .npy with `y_path` the y .npy)."""
    check_sources(source, y_path)
    if y_path is None:  # an .npz
        x, y = _load_npz(source)
        x_name = y_name = str(source)
    else:
        x, y = load_npy(source), load_npy(y_path)
        x_name, y_name = str(source), str(y_path)
    x = inputs(x, x_name)
    y = targets(y, y_name)
    check_lengths(x, y, x_name, y_name)
    return finish(x, y, dict(ARRAYS_METADATA), str(source))


def check_sources(source: Path, y_path: Path | None) -> None:
    """An .npz holds x and y, and no y file goes with it; an .npy holds x, and `y_path` names the y .npy."""
    suffix = source.suffix.lower()
    if suffix == ".npz" and y_path is not None:
        raise PackError(f"{source}: an .npz holds both x and y; do not name a separate y file")
    if suffix == ".npy" and y_path is None:
        raise PackError(f"{source}: an .npy holds x only; name the .npy of the targets too (--y)")
    if suffix not in (".npz", ".npy"):
        raise PackError(f"{source}: expected an .npz (x and y) or an .npy (x, with the y .npy beside it)")


def check_lengths(x: np.ndarray, y: np.ndarray, x_name: str, y_name: str) -> None:
    if x.ndim == 0 or y.ndim == 0 or x.shape[0] != y.shape[0]:
        raise PackError(f"x ({x_name}) holds {x.shape[0] if x.ndim else 'no'} examples but y ({y_name}) holds "
                        f"{y.shape[0] if y.ndim else 'no'}")


def load_npy(path: Path, mmap: bool = False) -> np.ndarray:
    """An .npy without pickle; `mmap`: memory-mapped, so that only the rows read come into memory."""
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (ValueError, OSError, EOFError) as e:
        raise PackError(f"{path}: not a loadable .npy without pickle ({_why(e)})") from None
    if not isinstance(arr, np.ndarray):
        raise PackError(f"{path}: not an .npy file (it holds several arrays, like an .npz)")
    return arr


def _load_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise PackError(f"{path}: not a loadable .npz without pickle ({_why(e)})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise PackError(f"{path}: not an .npz archive (it holds one array, like an .npy)")
    with loaded as npz:
        names = sorted(npz.files)
        if names != ["x", "y"]:
            raise PackError(f"{path}: an .npz must hold exactly arrays 'x' and 'y', found {names}")
        try:
            return npz["x"], npz["y"]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise PackError(f"{path}: not a loadable .npz without pickle ({_why(e)})") from None


def _why(e: Exception) -> str:
    text = str(e)
    return "it holds Python objects, which are never unpickled" if "allow_pickle" in text else text


def inputs(x: np.ndarray, name: str) -> np.ndarray:
    if x.ndim == 0:
        raise PackError(f"x ({name}) is a single number; expected one row of inputs per example")
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):
            out = x.astype(np.float32)
        if not np.isfinite(out).all():
            raise PackError(f"x ({name}) holds NaN or infinite values (or values beyond float32's range)")
        return np.ascontiguousarray(out)
    if x.dtype.kind in "iu":
        _fits_int64(x, f"x ({name})")
        return np.ascontiguousarray(x.astype(np.int64))
    raise PackError(f"x ({name}) is {x.dtype}; expected floating point (becomes float32) or integers (int64)")


def targets(y: np.ndarray, name: str) -> np.ndarray:
    if y.dtype.kind not in "iu":
        raise PackError(f"y ({name}) is {y.dtype}; targets must be integers (class or token ids), "
                        "e.g. y.astype(numpy.int64)")
    if y.ndim == 0:
        raise PackError(f"y ({name}) is a single number; expected one target per example")
    _fits_int64(y, f"y ({name})")
    if y.size and int(y.min()) < 0:
        raise PackError(f"y ({name}) holds negative values (min {int(y.min())}); class and token ids are >= 0")
    return np.ascontiguousarray(y.astype(np.int64))


def _fits_int64(a: np.ndarray, what: str) -> None:
    if a.dtype == np.uint64 and a.size and int(a.max()) > _INT64_MAX:
        raise PackError(f"{what} holds values beyond int64 (max {int(a.max())})")
