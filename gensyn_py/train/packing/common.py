"""What every packer shares: its error, its result, and the checks that make the result a dataset a spec can name.

Each packer turns its source into `x` and `y` arrays plus a few metadata strings and hands them to `finish`, so
the rules of `DatasetSpec` (dtypes, at most four dimensions per example, the example and byte limits) are checked
in one place, before any bytes are written, with a message that names the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train import spec
from gensyn_py.train.data import Dataset
from gensyn_py.train.packing.fileformat import serialize

# (done, total): called as a packer works through its files, so that a caller can draw a bar.
ProgressFn = Callable[[int, int], None]

MAX_DIMS = 4  # per example, for x and y alike (DatasetSpec.x_shape / y_shape)


class PackError(SpecError):
    """The input cannot become a dataset; the message names the file, line or field at fault."""


@dataclass(frozen=True)
class Packed:
    """A packed dataset: its arrays, its metadata strings and its exact bytes (what a spec's CID names)."""

    dataset: Dataset
    metadata: dict[str, str]
    data: bytes


def check_bytes(nbytes: int, what: str) -> None:
    """Refuse a dataset over the spec's limit, before building it where the size is known beforehand."""
    limit = spec.MAX_DATASET_BYTES
    if nbytes > limit:
        raise PackError(f"{what} would make a dataset of {nbytes:,} bytes; a job spec allows at most "
                        f"{limit:,} bytes (MAX_DATASET_BYTES)")


def finish(x: np.ndarray, y: np.ndarray, metadata: dict[str, str], source: str) -> Packed:
    """Check `x` and `y` against what a `DatasetSpec` accepts, then serialize them with `metadata`."""
    check_arrays(x, y, source)
    check_bytes(x.nbytes + y.nbytes, source)
    data = serialize({"x": x, "y": y}, metadata)
    check_bytes(len(data), source)
    return Packed(Dataset(x, y), dict(metadata), data)


def check_arrays(x: np.ndarray, y: np.ndarray, source: str) -> None:
    """The dtypes, dimensions and counts a `DatasetSpec` accepts (of a whole dataset, or of one chunk)."""
    if x.dtype not in (np.float32, np.int64) or y.dtype != np.int64:
        raise PackError(f"{source}: x must be float32 or int64 and y int64, got {x.dtype} and {y.dtype}")
    if x.ndim < 2 or x.ndim > MAX_DIMS + 1:
        raise PackError(f"{source}: x has shape {list(x.shape)}; it must be (examples, ...) with 1 to "
                        f"{MAX_DIMS} dimensions per example")
    if y.ndim < 1 or y.ndim > MAX_DIMS + 1:
        raise PackError(f"{source}: y has shape {list(y.shape)}; it must be (examples, ...) with at most "
                        f"{MAX_DIMS} dimensions per example")
    if x.shape[0] != y.shape[0]:
        raise PackError(f"{source}: x holds {x.shape[0]} examples but y holds {y.shape[0]}")
    n = int(x.shape[0])
    if n == 0:
        raise PackError(f"{source}: no examples")
    if n > spec.MAX_EXAMPLES:
        raise PackError(f"{source}: {n:,} examples; a job spec allows at most {spec.MAX_EXAMPLES:,}")
    if 0 in x.shape[1:] or 0 in y.shape[1:]:
        raise PackError(f"{source}: every dimension must be positive, got x {list(x.shape)} and y {list(y.shape)}")


def is_hidden(path: Path, root: Path) -> bool:
    """A dot-file or anything under a dot-folder below `root` (.DS_Store, .git, .ipynb_checkpoints)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def files_under(folder: Path) -> list[Path]:
    """Every visible file below `folder`, in the sorted order of their relative paths, so the order never
    depends on the file system."""
    found = [p for p in folder.rglob("*") if p.is_file() and not is_hidden(p, folder)]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())
