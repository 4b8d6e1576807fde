"""A text file read in pieces that tokenize exactly as the whole file does, so a corpus file larger than memory packs.

The byte-level BPE (`text.train_tokenizer`) first splits text into pre-tokens with GPT-2's pattern, then learns and
applies merges only inside a pre-token. So cutting the text where a pre-token boundary always falls changes
neither the word counts the trainer learns from nor any token id: the pieces' encodings, concatenated, are the
whole text's. Two kinds of place are such boundaries, whatever surrounds them:

- after a newline that follows a non-space character and precedes one ("x\\ny" splits as "x", "\\n", "y" in the
  whole text, and "x\\n" alone ends with the same "\\n"); a newline after other whitespace is never cut, since a
  run like " \\n" splits differently when it ends the text;
- before a space between two non-space characters (no pre-token holds a non-space character followed by a
  space; the space starts the next one, as it does at the start of a piece).

"Non-space" is Python's (`str.isspace` is false), a subset of the tokenizer's, so every cut chosen here is one.
tests/unit/test_text_pieces.py checks the equality on generated texts. Text with no such place for a whole piece
(one enormous word) grows the piece until one comes.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gensyn_py.train.packing.common import PackError

PIECE_BYTES = 1 << 20  # about 1 MiB of text a piece to encode
# The tokenizer's trainer reads its iterator 256 items at a time, so it is fed smaller pieces: 256 of 1 MiB held
# 321 MB at the peak of training on a 32 MB corpus, 256 of 64 KiB 102 MB, the same tokenizer and a little faster.
TRAIN_PIECE_BYTES = 1 << 16
_CUT = re.compile(r"(?<=\S\n)(?=\S)|(?<=\S)(?= \S)")
BOM = "\ufeff"
_TAIL = 4096  # characters searched for the last cut before searching a whole piece


def last_cut(text: str) -> int:
    """The position of the last safe cut in `text`, or 0 if there is none (a cut always has text on both sides)."""
    for start in dict.fromkeys((max(0, len(text) - _TAIL), 0)):  # the tail first: a whole piece only if need be
        cut = 0
        for m in _CUT.finditer(text, start):
            cut = m.start()
        if cut:
            return cut
    return 0


def read_pieces(path: Path, piece_bytes: int = PIECE_BYTES,
                on_bytes: Callable[[int], None] | None = None) -> Iterator[str]:
    """`path`'s UTF-8 text (a leading byte-order mark dropped) in pieces cut at safe places
    (`last_cut`); `on_bytes(n)` after each `n` bytes read. Invalid UTF-8 is a PackError naming the byte."""
    # Plain UTF-8 and the mark dropped by hand: "utf-8-sig" counts an error's position from after the mark.
    decoder = codecs.getincrementaldecoder("utf-8")()
    held, offset, started = "", 0, False
    with path.open("rb") as f:
        while True:
            block = f.read(piece_bytes)
            buffered = len(decoder.getstate()[0])  # bytes of a character split across the previous block's end
            try:
                held += decoder.decode(block, final=not block)
            except UnicodeDecodeError as e:
                raise PackError(f"{path}: not UTF-8 text ({e.reason} at byte {offset - buffered + e.start})") from None
            offset += len(block)
            if not started and held:
                held, started = held.removeprefix(BOM), True
            if on_bytes is not None and block:
                on_bytes(len(block))
            if not block:
                break
            cut = last_cut(held)
            if cut:
                yield held[:cut]
                held = held[cut:]
    if held:
        yield held


def corpus_pieces(files: Sequence[Path], piece_bytes: int = PIECE_BYTES,
                  on_bytes: Callable[[int], None] | None = None) -> Iterator[str]:
    """Every file's pieces (`read_pieces`), the files in order: the corpus's text, back to back."""
    for path in files:
        yield from read_pieces(path, piece_bytes, on_bytes)


def byte_counter(files: Sequence[Path], progress: Callable[[int, int], None] | None) -> Callable[[int], None]:
    """An `on_bytes` for reading every file twice (the tokenizer's training, then the encoding) that reports
    `progress(bytes read, twice the corpus's bytes)`."""
    total, done = 2 * sum(path.stat().st_size for path in files), 0

    def count(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    return count
