"""An `.npz` packed straight into chunks (`gensyn data pack data.npz --chunk-examples N`), a chunk's rows at a time.

`np.load` decompresses a member whole. Here each member (`x.npy`, `y.npy`) is opened as a stream inside the zip
archive, its `.npy` header read with `numpy.lib.format`, and then only the bytes of the next chunk's rows are
read (decompressed) from each, converted and checked as `arrays.pack_arrays` does, and written. The memory is
one chunk. A fault of a member's dtype or shape is refused before any row is read, in `pack_arrays`' words; a
fault in the values (NaN, a negative target) names the rows it is in, as for an `.npy`. The chunks are the bytes
`arrays.pack_arrays` then `chunks.write_chunked` would give (tests/unit/test_pack_streamed.py compares both). An
archive that is not plainly two C-ordered arrays `x` and `y` of a fixed-size dtype (other members, a Fortran-ordered
or object array, a single number) goes through `pack_arrays` whole, so it gets the same error or the same bytes.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from gensyn_py.errors import SpecError
from gensyn_py.train.chunks import ChunkWriter, write_chunked
from gensyn_py.train.data import Dataset
from gensyn_py.train.packing.arrays import ARRAYS_METADATA, check_lengths, inputs, pack_arrays, targets
from gensyn_py.train.packing.common import PackError, ProgressFn, check_arrays
from gensyn_py.train.packing.streamed import StreamedPack, add_chunk, close_chunks


class _Member:
    """One `.npy` member of the archive, read row range by row range from its decompressing stream."""

    def __init__(self, stream: IO[bytes]) -> None:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            self.shape, self.fortran, self.dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            self.shape, self.fortran, self.dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"npy format version {version}")  # read whole by np.load instead
        self.stream = stream
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    @property
    def plain(self) -> bool:
        """C order, a fixed-size dtype, at least one row: rows are contiguous runs of bytes."""
        return not self.fortran and not self.dtype.hasobject and self.dtype.itemsize > 0 and len(self.shape) >= 1 \
            and self.shape[0] > 0

    def rows(self, n: int, name: str) -> np.ndarray:
        want = n * self.row_bytes
        try:
            data = self.stream.read(want)
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:  # a bad CRC or deflate stream, found late
            raise PackError(f"{name}: not a loadable .npz without pickle ({e})") from None
        if len(data) != want:
            raise PackError(f"{name}: the array data ends early ({len(data):,} of {want:,} bytes)")
        return np.frombuffer(data, dtype=self.dtype).reshape(n, *self.shape[1:])


def pack_npz_chunked(source: Path, chunk_examples: int, folder: Path,
                     progress: ProgressFn | None = None) -> StreamedPack:
    """`arrays.pack_arrays(source)` of an `.npz` written as chunks of `chunk_examples` rows."""
    try:
        archive = zipfile.ZipFile(source)
    except (OSError, zipfile.BadZipFile):
        return _whole(source, chunk_examples, folder)  # pack_arrays says what is wrong with the file
    with archive:
        if sorted(archive.namelist()) != ["x.npy", "y.npy"]:
            return _whole(source, chunk_examples, folder)
        with archive.open("x.npy") as fx, archive.open("y.npy") as fy:
            try:
                x_member, y_member = _Member(fx), _Member(fy)
            except ValueError:
                return _whole(source, chunk_examples, folder)
            except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as e:  # a small member is read whole here
                raise PackError(f"{source}: not a loadable .npz without pickle ({e})") from None
            if not (x_member.plain and y_member.plain):
                return _whole(source, chunk_examples, folder)
            name = str(source)
            n = x_member.shape[0]
            _check_whole(x_member, y_member, name)
            writer = ChunkWriter(folder, chunk_examples, dict(ARRAYS_METADATA))
            for start in range(0, n, chunk_examples):
                stop = min(start + chunk_examples, n)
                where = f"{name} (rows {start}..{stop - 1})"
                x = inputs(x_member.rows(stop - start, where), where)
                y = targets(y_member.rows(stop - start, where), where)
                add_chunk(writer, Dataset(x, y), name)
                if progress is not None:
                    progress(stop, n)
            return StreamedPack(close_chunks(writer, name), len(writer.entries))


def _check_whole(x: _Member, y: _Member, name: str) -> None:
    """What `pack_arrays` refuses from the dtypes and shapes alone, in its words, before any row is read (a chunk
    would name itself and show its own shape): an empty array of each member's dtype stands for the member in
    `inputs` / `targets`, a zero-strided view of the converted dtype for the whole shape in the count checks."""
    inputs(np.empty((0, *x.shape[1:]), dtype=x.dtype), name)
    targets(np.empty((0, *y.shape[1:]), dtype=y.dtype), name)
    xs = np.broadcast_to(np.zeros((), dtype=np.float32 if x.dtype.kind == "f" else np.int64), x.shape)
    ys = np.broadcast_to(np.zeros((), dtype=np.int64), y.shape)
    check_lengths(xs, ys, name, name)
    check_arrays(xs, ys, name)


def _whole(source: Path, chunk_examples: int, folder: Path) -> StreamedPack:
    packed = pack_arrays(source)
    try:
        entry = write_chunked(packed.dataset, chunk_examples, folder, packed.metadata)
    except SpecError as e:
        raise PackError(f"{source}: {e}") from None
    return StreamedPack(entry, -(-packed.dataset.num_examples // chunk_examples))
