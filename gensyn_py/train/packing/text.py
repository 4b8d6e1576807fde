"""A text corpus as a language-modelling dataset, with the tokenizer that made it shipped inside.

The corpus is one .txt file, or every .txt file below a folder in sorted order of their paths, back to back,
exactly as their bytes decode from UTF-8 (no newline translation). A byte-level BPE tokenizer is trained on
it (the `tokenizers` package; no special tokens, every byte a token, so any text encodes), the corpus is
encoded, and the token stream is cut into non-overlapping windows of seq_len + 1 tokens: x = window[:-1],
y = window[1:]; the tail that fills no window is dropped. BPE training is deterministic for the same input
(tests/unit/test_data_pack.py checks it across processes), so the bytes and CID are too.

The tokenizer's JSON goes into metadata `tokenizer` and its vocabulary size into `vocab_size`, so whoever
holds the dataset can decode what a model trained on it generates (`load_tokenizer`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.train.packing.common import Packed, PackError, ProgressFn, check_bytes, files_under, finish
from gensyn_py.train.packing.text_pieces import TRAIN_PIECE_BYTES, byte_counter, corpus_pieces

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MIN_VOCAB = 256  # byte-level: one token per byte before any merge


def pack_text(source: Path, seq_len: int = 64, vocab_size: int = 512, progress: ProgressFn | None = None) -> Packed:
    """Train a tokenizer of at most `vocab_size` tokens on `source` and cut its encoding into windows."""
    check_options(seq_len, vocab_size)
    files = corpus_files(source)
    # The text is read in pieces that tokenize as the whole does (text_pieces.py), twice: a tokenizer's encoding
    # of a whole file keeps every token's string and offsets, about 180 bytes per byte of text.
    count = byte_counter(files, progress)
    tokenizer = train_tokenizer(corpus_pieces(files, TRAIN_PIECE_BYTES, count), vocab_size)
    encoded = [np.asarray(tokenizer.encode(p).ids, dtype=np.int64) for p in corpus_pieces(files, on_bytes=count)]
    ids = np.concatenate(encoded) if encoded else np.empty(0, dtype=np.int64)
    window = seq_len + 1
    n = len(ids) // window
    if n == 0:
        raise PackError(f"{source}: the corpus is {len(ids)} tokens; one window of seq_len {seq_len} needs "
                        f"{window}")
    check_bytes(2 * n * seq_len * 8, f"{source}: {n:,} windows of {seq_len} tokens")
    windows = ids[: n * window].reshape(n, window)
    x = np.ascontiguousarray(windows[:, :-1])
    y = np.ascontiguousarray(windows[:, 1:])
    return finish(x, y, text_metadata(tokenizer), str(source))


def text_metadata(tokenizer: Tokenizer) -> dict[str, str]:
    """The tokenizer shipped with the windows it made, and its vocabulary size."""
    return {"kind": "text", "tokenizer": tokenizer.to_str(), "vocab_size": str(tokenizer.get_vocab_size())}


def check_options(seq_len: int, vocab_size: int) -> None:
    if seq_len < 1:
        raise PackError(f"seq_len {seq_len}: must be at least 1")
    if vocab_size < MIN_VOCAB:
        raise PackError(f"vocab_size {vocab_size}: a byte-level BPE needs at least {MIN_VOCAB} (one token per byte)")


def corpus_files(source: Path) -> list[Path]:
    """`source` itself, or the .txt files below it in sorted order; anything else there is refused."""
    if source.is_file():
        if source.suffix.lower() != ".txt":
            raise PackError(f"{source}: a text corpus is a .txt file or a folder of .txt files")
        return [source]
    if not source.is_dir():
        raise PackError(f"{source}: no such file or folder")
    files = files_under(source)
    for p in files:
        if p.suffix.lower() != ".txt":
            raise PackError(f"{p}: not a .txt file; a text corpus folder holds only .txt files")
    if not files:
        raise PackError(f"{source}: no .txt files")
    return files


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """A byte-level BPE of at most `vocab_size` tokens (fewer when the corpus has fewer pairs worth merging)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[], show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def load_tokenizer(metadata: dict[str, str]) -> Tokenizer:
    """The tokenizer a text dataset ships, from its metadata (`read_metadata`), to encode prompts and decode
    generated token ids."""
    from tokenizers import Tokenizer

    if "tokenizer" not in metadata:
        raise PackError(f"the dataset ships no tokenizer (metadata kind {metadata.get('kind', 'unknown')!r})")
    try:
        return Tokenizer.from_str(metadata["tokenizer"])
    except Exception as e:  # tokenizers raises its own Exception subclass for a malformed JSON
        raise PackError(f"the dataset's tokenizer does not load: {e}") from None
