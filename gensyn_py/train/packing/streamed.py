"""Packing straight into chunks (`gensyn data pack --chunk-examples N`), one chunk in memory at a time.

A dataset larger than memory cannot be built whole and then split. Image folders and `.npy` arrays pack chunk by
chunk instead: the images of one chunk are decoded, checked and written before the next chunk's are opened, and an
`.npy` is memory-mapped, so only the rows of the chunk being written are read; a CSV is read twice, a row at a
time (`streamed_csv.py`); a text corpus file by file (`streamed_text.py`); an `.npz` a chunk's rows at a time
from its compressed members (`streamed_npz.py`). The bytes are the ones the
in-memory packers would give, split the way `chunks.write_chunked` splits them (the tests compare both), so the
same source gives the same manifest CID either way. Where one chunk would pass `chunks.MAX_CHUNK_BYTES` the
packer stops with the chunk's number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train import spec
from gensyn_py.train.chunks import ChunkWriter
from gensyn_py.train.data import Dataset
from gensyn_py.train.packing.arrays import ARRAYS_METADATA, check_lengths, inputs, load_npy, targets
from gensyn_py.train.packing.common import PackError, ProgressFn, check_arrays
from gensyn_py.train.packing.images import MODES, decode, images_metadata, scan


@dataclass(frozen=True)
class StreamedPack:
    """What a streamed pack wrote: the spec's `dataset` entry and the few facts a summary shows."""

    entry: dict[str, Any]
    chunks: int
    classes: list[str] | None = None


def pack_images_chunked(root: Path, size: tuple[int, int], channels: int, chunk_examples: int, folder: Path,
                        progress: ProgressFn | None = None) -> StreamedPack:
    """`images.pack_images` written as chunks of `chunk_examples` images under `folder`."""
    if channels not in MODES:
        raise PackError(f"channels {channels}: expected 1 (greyscale), 3 (RGB) or 4 (RGBA)")
    classes, files = scan(root)
    writer = ChunkWriter(folder, chunk_examples, images_metadata(classes))
    for start in range(0, len(files), chunk_examples):
        part = files[start:start + chunk_examples]
        x = np.empty((len(part), channels, *size), dtype=np.float32)
        y = np.empty(len(part), dtype=np.int64)
        for i, (path, label) in enumerate(part):
            x[i], y[i] = decode(path, MODES[channels], size), label
            if progress is not None:
                progress(start + i + 1, len(files))
        add_chunk(writer, Dataset(x, y), str(root))
    return StreamedPack(close_chunks(writer, str(root)), len(writer.entries), classes)


def pack_npy_chunked(source: Path, y_path: Path, chunk_examples: int, folder: Path,
                     progress: ProgressFn | None = None) -> StreamedPack:
    """`arrays.pack_arrays` of an x `.npy` and a y `.npy`, memory-mapped and written chunk by chunk."""
    x_all, y_all = load_npy(source, mmap=True), load_npy(y_path, mmap=True)
    check_lengths(x_all, y_all, str(source), str(y_path))
    writer = ChunkWriter(folder, chunk_examples, dict(ARRAYS_METADATA))
    n = int(x_all.shape[0])
    for start in range(0, n, chunk_examples):
        stop = min(start + chunk_examples, n)
        where = f" (rows {start}..{stop - 1})"
        x = inputs(np.asarray(x_all[start:stop]), str(source) + where)
        y = targets(np.asarray(y_all[start:stop]), str(y_path) + where)
        add_chunk(writer, Dataset(x, y), str(source))
        if progress is not None:
            progress(stop, n)
    return StreamedPack(close_chunks(writer, str(source)), len(writer.entries))


def add_chunk(writer: ChunkWriter, chunk: Dataset, source: str) -> None:
    check_arrays(chunk.x, chunk.y, f"{source} (chunk {len(writer.entries)})")
    if writer.examples + chunk.num_examples > spec.MAX_EXAMPLES:
        raise PackError(f"{source}: more than {spec.MAX_EXAMPLES:,} examples; a job spec allows at most that")
    try:
        writer.add(chunk)
    except SpecError as e:
        raise PackError(f"{source}: {e}") from None


def close_chunks(writer: ChunkWriter, source: str) -> dict[str, Any]:
    try:
        return writer.close()
    except SpecError as e:
        raise PackError(f"{source}: {e}") from None
