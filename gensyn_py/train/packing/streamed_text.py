"""A text corpus packed straight into chunks (`gensyn data pack corpus/ --chunk-examples N`), file by file.

`text.pack_text` holds the whole corpus, its token ids and its windows at once. Here each file is read twice, in
pieces of about a MiB cut where the tokenizer's pre-tokens always break (`text_pieces.py`), so a file larger than
memory packs: the tokenizer trains from an iterator over pieces of about 64 KiB (the `tokenizers` trainer keeps
word counts, not the texts, but reads the iterator in batches of 256 pieces), then each piece in turn is encoded
and its ids join the stream, which is cut into windows of seq_len + 1 tokens across piece and file boundaries
exactly as `pack_text` cuts the concatenation (the tail that fills no window is dropped). A chunk is written whenever
`chunk_examples` windows are ready. Past the training, the memory is one piece's text and ids and one chunk.
The chunks are the bytes `pack_text` then `chunks.write_chunked` would give (tests/unit/test_pack_streamed.py
compares both), so the same corpus gives the same manifest CID either way. Progress counts bytes: every file's
read for the training, then again for the encoding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gensyn_py.train.chunks import ChunkWriter
from gensyn_py.train.data import Dataset
from gensyn_py.train.packing.common import PackError, ProgressFn
from gensyn_py.train.packing.streamed import StreamedPack, add_chunk, close_chunks
from gensyn_py.train.packing.text import check_options, corpus_files, text_metadata, train_tokenizer
from gensyn_py.train.packing.text_pieces import PIECE_BYTES, TRAIN_PIECE_BYTES, byte_counter, corpus_pieces


def pack_text_chunked(source: Path, seq_len: int, vocab_size: int, chunk_examples: int, folder: Path,
                      progress: ProgressFn | None = None, piece_bytes: int = PIECE_BYTES) -> StreamedPack:
    """`text.pack_text(source, seq_len, vocab_size)` written as chunks of `chunk_examples` windows, every file
    read in pieces of about `piece_bytes` (at most `TRAIN_PIECE_BYTES` while the tokenizer trains)."""
    check_options(seq_len, vocab_size)
    files = corpus_files(source)
    count = byte_counter(files, progress)
    tokenizer = train_tokenizer(corpus_pieces(files, min(piece_bytes, TRAIN_PIECE_BYTES), count), vocab_size)
    window = seq_len + 1
    writer = ChunkWriter(folder, chunk_examples, text_metadata(tokenizer))
    pending = np.empty(0, dtype=np.int64)  # ids not yet in a written chunk: less than one chunk of windows
    tokens = 0
    for piece in corpus_pieces(files, piece_bytes, count):
        ids = np.asarray(tokenizer.encode(piece).ids, dtype=np.int64)
        tokens += len(ids)
        pending = np.concatenate([pending, ids])
        whole = len(pending) // (window * chunk_examples)
        if whole:
            cut = whole * window * chunk_examples
            for part in np.split(pending[:cut].reshape(-1, window), whole):
                _add_windows(writer, part, source)
            pending = pending[cut:]
    rest = len(pending) // window
    if rest:
        _add_windows(writer, pending[: rest * window].reshape(rest, window), source)
    if not writer.entries:
        raise PackError(f"{source}: the corpus is {tokens} tokens; one window of seq_len {seq_len} needs {window}")
    return StreamedPack(close_chunks(writer, str(source)), len(writer.entries))


def _add_windows(writer: ChunkWriter, windows: np.ndarray, source: Path) -> None:
    x, y = np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])
    add_chunk(writer, Dataset(x, y), str(source))
