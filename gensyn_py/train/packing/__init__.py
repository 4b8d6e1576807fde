"""`gensyn data pack`: turn data people have (image folders, NumPy arrays, CSV tables, text) into a dataset
a job spec can name.

Each kind has its own module; all of them end in `common.finish`, which checks the result against
`DatasetSpec` and writes it with `fileformat.serialize`: a safetensors file of `x` and `y` that
`Dataset.from_bytes` reads unchanged, plus metadata strings (`kind`, and `classes`, `tokenizer`,
`vocab_size` where they apply) that `read_metadata` reads back. The same input always packs to the same
bytes, so to the same CID. Heavy packages (PIL, tokenizers) are imported only by the packers that need
them. docs/data-pack.md describes each kind and its limits.
"""

from gensyn_py.train.packing.arrays import pack_arrays
from gensyn_py.train.packing.common import Packed, PackError, ProgressFn
from gensyn_py.train.packing.fileformat import read_metadata
from gensyn_py.train.packing.images import pack_images, parse_size
from gensyn_py.train.packing.infer import KINDS, infer_kind
from gensyn_py.train.packing.table import pack_csv
from gensyn_py.train.packing.text import load_tokenizer, pack_text

__all__ = [
    "KINDS",
    "PackError",
    "Packed",
    "ProgressFn",
    "infer_kind",
    "load_tokenizer",
    "pack_arrays",
    "pack_csv",
    "pack_images",
    "pack_text",
    "parse_size",
    "read_metadata",
]
