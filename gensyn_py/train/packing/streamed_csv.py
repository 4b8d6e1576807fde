"""A CSV packed straight into chunks (`gensyn data pack table.csv --chunk-examples N`), one chunk in memory.

Two passes over the file, each row checked as `table.pack_csv` checks it (the same errors, with line and column):
the first learns what the bytes depend on: whether every label is an integer (used as the class id) or they are
names (each mapped to its index in the sorted list of names); the second writes `chunk_examples` rows at a time.
The memory is one chunk and the set of label names. The chunks are the bytes `table.pack_csv` then
`chunks.write_chunked` would give (tests/unit/test_pack_streamed.py compares both), so the same CSV gives the same
manifest CID either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from gensyn_py.train import spec
from gensyn_py.train.chunks import ChunkWriter
from gensyn_py.train.data import Dataset
from gensyn_py.train.packing.common import PackError, ProgressFn
from gensyn_py.train.packing.streamed import StreamedPack, add_chunk, close_chunks
from gensyn_py.train.packing.table import (
    Row,
    class_id,
    csv_file,
    csv_metadata,
    is_class_id,
    is_integer,
    read_rows,
)


def pack_csv_chunked(path: Path, target: str, chunk_examples: int, folder: Path,
                     progress: ProgressFn | None = None) -> StreamedPack:
    """`table.pack_csv` of `path` (labels in column `target`) written as chunks of `chunk_examples` rows."""
    names: set[str] = set()
    integers, total = True, 0
    first_integer: tuple[str, int] | None = None  # its bad class id is refused only if every label is an integer
    with _rows(path, target) as rows:  # pass 1: check every row, learn the labels
        for _, label, line in rows:
            integers = integers and is_integer(label)
            if integers and first_integer is None and not is_class_id(label):
                first_integer = (label, line)
            names.add(label)
            total += 1
    if total == 0:
        raise PackError(f"{path}: a header but no data rows")
    if total > spec.MAX_EXAMPLES:  # as the whole-file packer says it, before anything is written
        raise PackError(f"{path}: {total:,} examples; a job spec allows at most {spec.MAX_EXAMPLES:,}")
    if integers and first_integer is not None:
        class_id(*first_integer, path, target)  # raises, as table.pack_csv does for the first such label
    classes = None if integers else sorted(names)
    index = {} if classes is None else {name: i for i, name in enumerate(classes)}
    writer = ChunkWriter(folder, chunk_examples, csv_metadata(classes))
    done = 0
    with _rows(path, target) as rows:  # pass 2: the same rows, a chunk at a time
        for part in _batches(rows, chunk_examples):
            x = np.array([values for values, _, _ in part], dtype=np.float64).astype(np.float32)
            y = np.array([_label(label, line, index, path) for _, label, line in part], dtype=np.int64)
            add_chunk(writer, Dataset(x, y), str(path))
            done += len(part)
            if progress is not None:
                progress(done, total)
    return StreamedPack(close_chunks(writer, str(path)), len(writer.entries), classes)


@contextmanager
def _rows(path: Path, target: str) -> Iterator[Iterator[Row]]:
    """The file's checked data rows, with a decoding or CSV error said as `table.pack_csv` says it."""
    with csv_file(path) as reader:
        yield read_rows(reader, path, target)[1]


def _label(label: str, line: int, index: dict[str, int], path: Path) -> int:
    """The class id of a label in the second pass (`index`: the names, empty where the labels are the ids)."""
    if index and label in index:
        return index[label]
    if not index and is_integer(label):
        return int(label)
    raise PackError(f"{path} line {line}: label {label!r} was not in the file's first reading; the file changed "
                    "while it was being packed")


def _batches(rows: Iterator[Row], size: int) -> Iterator[list[Row]]:
    part: list[Row] = []
    for row in rows:
        part.append(row)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part
