"""A text file read in pieces (train/packing/text_pieces.py) tokenizes exactly as the whole file: the pieces join
back to the text, their encodings concatenate to the whole text's, and a tokenizer trained on them is the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gensyn_py.train.packing import PackError
from gensyn_py.train.packing.text import train_tokenizer
from gensyn_py.train.packing.text_pieces import last_cut, read_pieces


# Spaces of every kind next to each other and to text (the cuts' neighbours), contractions, multi-byte characters,
# and characters Python calls space but the tokenizer's pattern does not (\x1c-\x1f).
def read_text(path: Path) -> str:
    """The file read whole, as the reference: UTF-8, a leading byte-order mark dropped."""
    return path.read_bytes().decode("utf-8").removeprefix("\ufeff")


PARTS = ["a", "b", "word", "ça", "中文", "😀", "7", "42", ",", ".", "-", "'s", "'ll", "'", " ", "  ", "\n", "\n\n",
         "\t", "\r\n", "\u00a0", "\u3000", "\x1c", " \n", "\n ", "\ufeff"]
texts = st.lists(st.sampled_from(PARTS), min_size=1, max_size=120).map("".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, piece_bytes=st.integers(1, 48))
def test_pieces_tokenize_as_the_whole_text(tmp_path: Path, text: str, piece_bytes: int) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    read: list[int] = []
    pieces = list(read_pieces(path, piece_bytes, read.append))
    assert "".join(pieces) == read_text(path) and sum(read) == path.stat().st_size
    whole = train_tokenizer([read_text(path)], 300)
    assert train_tokenizer(pieces, 300).to_str() == whole.to_str()
    assert [i for p in pieces for i in whole.encode(p).ids] == whole.encode(read_text(path)).ids


def test_cuts_fall_between_words_and_after_a_line_end_only() -> None:
    assert last_cut("one two") == 3  # before the space: " two" is the next pre-token
    assert last_cut("one\ntwo") == 4  # after the newline
    assert last_cut("one  two") == 0 and last_cut("one \ntwo") == 0 and last_cut("one\n\ntwo") == 0
    assert last_cut("onetwo") == 0 and last_cut(" one") == 0 and last_cut("one ") == 0


def test_a_long_file_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("\n".join(f"line {i} of the corpus" for i in range(5000)), encoding="utf-8")
    pieces = list(read_pieces(path, 1024))
    assert len(pieces) > 50 and max(map(len, pieces)) <= 2 * 1024
    assert "".join(pieces) == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("data, byte", [(b"\xef\xbb\xbfab\xffcd", 5), (b"abc\xff", 3),
                                        ("\u4e2d".encode() * 7 + b"\xe4\xb8x", 21), (b"ok \xc3", 3)])
def test_bad_utf8_names_the_files_byte_however_it_is_read(tmp_path: Path, data: bytes, byte: int) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    for piece_bytes in (1, 2, 3, 4096):
        with pytest.raises(PackError, match=rf"bad\.txt: not UTF-8 text \(.+ at byte {byte}\)$"):
            list(read_pieces(path, piece_bytes))
