"""Packing straight into chunks (train/packing/streamed.py): the same chunk files and manifest as packing whole and
splitting, one chunk in memory at a time, and a clear error naming the chunk or rows at fault."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gensyn_py.train.chunks import MANIFEST_NAME, parse_manifest, read_chunked, write_chunked
from gensyn_py.train.packing import PackError, pack_arrays, pack_csv, pack_images, pack_text
from gensyn_py.train.packing.streamed import pack_images_chunked, pack_npy_chunked
from gensyn_py.train.packing.streamed_csv import pack_csv_chunked
from gensyn_py.train.packing.streamed_npz import pack_npz_chunked
from gensyn_py.train.packing.streamed_text import pack_text_chunked
from gensyn_py.train.packing.text import load_tokenizer

from .test_data_pack import make_corpus, make_images


def same_folder(a: Path, b: Path) -> bool:
    return read_chunked(a) == read_chunked(b)


def test_images_streamed_equal_packed_whole_then_split(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    whole = pack_images(root, (6, 5), 3)
    entry = write_chunked(whole.dataset, 4, tmp_path / "split", whole.metadata)
    streamed = pack_images_chunked(root, (6, 5), 3, 4, tmp_path / "streamed")
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    assert streamed.chunks == -(-whole.dataset.num_examples // 4) and streamed.classes is not None


def test_npy_streamed_equal_packed_whole_then_split_and_read_by_rows(tmp_path: Path) -> None:
    """The .npy is memory-mapped: packing 2,000 rows of 8 KB in chunks of 100 holds about one chunk, not all."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 2048))  # float64: converted to float32 per chunk
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", rng.integers(0, 7, 2000))
    whole = pack_arrays(tmp_path / "x.npy", tmp_path / "y.npy")
    entry = write_chunked(whole.dataset, 100, tmp_path / "split", whole.metadata)
    del whole
    tracemalloc.start()
    streamed = pack_npy_chunked(tmp_path / "x.npy", tmp_path / "y.npy", 100, tmp_path / "streamed")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    assert peak < 8 * 100 * 2048 * 4  # a few chunks' worth, against 33 MB for the whole x in float64


def test_streamed_errors_name_the_rows_and_leave_no_manifest(tmp_path: Path) -> None:
    x = np.ones((30, 3), dtype=np.float32)
    x[17, 1] = np.nan
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros(30, dtype=np.int64))
    with pytest.raises(PackError, match=r"rows 10\.\.19"):
        pack_npy_chunked(tmp_path / "x.npy", tmp_path / "y.npy", 10, tmp_path / "out")
    assert not (tmp_path / "out" / MANIFEST_NAME).exists()  # a folder without a manifest is no dataset
    np.save(tmp_path / "y.npy", np.zeros(29, dtype=np.int64))
    with pytest.raises(PackError, match="holds 30 examples but y"):
        pack_npy_chunked(tmp_path / "x.npy", tmp_path / "y.npy", 10, tmp_path / "out2")


def test_a_chunk_over_the_limit_is_refused_by_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gensyn_py.train import chunks

    monkeypatch.setattr(chunks, "MAX_CHUNK_BYTES", 1000)
    np.save(tmp_path / "x.npy", np.ones((80, 8), dtype=np.float32))
    np.save(tmp_path / "y.npy", np.zeros(80, dtype=np.int64))
    with pytest.raises(PackError, match=r"chunk 0 is .* bytes; a chunk is at most 1,000"):
        pack_npy_chunked(tmp_path / "x.npy", tmp_path / "y.npy", 40, tmp_path / "out")


def test_cli_packs_images_in_chunks(tmp_path: Path) -> None:
    from gensyn_py.cli.main import cli

    root = make_images(tmp_path / "imgs")
    res = CliRunner().invoke(cli, ["data", "pack", str(root), "--size", "6x5", "--out", str(tmp_path / "c"),
                                   "--chunk-examples", "3"])
    assert res.exit_code == 0, res.output
    entry = json.loads(res.stdout)
    assert entry["chunk_examples"] == 3 and entry["x_shape"] == [3, 6, 5]
    assert "chunks:" in res.stderr and "classes" in res.stderr
    whole = pack_images(root, (6, 5), 3)
    assert entry == write_chunked(whole.dataset, 3, tmp_path / "again", whole.metadata)


def test_a_corrupt_image_in_a_later_chunk_is_named(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    last = sorted((root / sorted(p.name for p in root.iterdir())[-1]).iterdir())[-1]
    last.write_bytes(b"not an image")
    with pytest.raises(PackError, match=last.name):
        pack_images_chunked(root, (6, 5), 3, 2, tmp_path / "out")
    assert not (tmp_path / "out" / MANIFEST_NAME).exists()


def write_csv(path: Path, labels: list[str], rows: int = 23) -> Path:
    lines = ["a,label,b"] + [f"{i * 0.25},{labels[i % len(labels)]},{-i / 3}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("labels", [["3", "0", "1"], ["cat", "dog", "7", "ant"]], ids=["integers", "names"])
def test_csv_streamed_equals_packed_whole_then_split(tmp_path: Path, labels: list[str]) -> None:
    """Integer labels are class ids; names (a single non-integer makes every label a name) go by sorted index."""
    source = write_csv(tmp_path / "t.csv", labels)
    whole = pack_csv(source, "label")
    entry = write_chunked(whole.dataset, 5, tmp_path / "split", whole.metadata)
    seen: list[tuple[int, int]] = []
    streamed = pack_csv_chunked(source, "label", 5, tmp_path / "streamed", lambda d, t: seen.append((d, t)))
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    assert streamed.chunks == 5 and seen[-1] == (23, 23)
    names = whole.metadata.get("classes")
    assert streamed.classes == (None if names is None else json.loads(names))


def test_csv_streamed_refuses_what_packing_whole_refuses(tmp_path: Path) -> None:
    """The same messages, with line and column; a negative id only where every label is an integer."""
    bad_cell = tmp_path / "cell.csv"
    bad_cell.write_text("a,label\n1,0\n2,1\nx,0\n", encoding="utf-8")
    negative = write_csv(tmp_path / "neg.csv", ["1", "-2", "0"])
    mixed = write_csv(tmp_path / "mixed.csv", ["-2", "cat"])  # names: "-2" is one of them, not an id
    for source in (bad_cell, negative, tmp_path / "none.csv"):
        if source.name == "none.csv":
            source.write_text("a,label\n", encoding="utf-8")
        with pytest.raises(PackError) as whole:
            pack_csv(source, "label")
        with pytest.raises(PackError) as streamed:
            pack_csv_chunked(source, "label", 2, tmp_path / f"out-{source.stem}")
        assert str(streamed.value) == str(whole.value)
        assert not (tmp_path / f"out-{source.stem}" / MANIFEST_NAME).exists()
    with pytest.raises(PackError, match="line 4, column 'a'"):
        pack_csv_chunked(bad_cell, "label", 2, tmp_path / "again")
    assert pack_csv_chunked(mixed, "label", 4, tmp_path / "mixed").classes == ["-2", "cat"]


def test_cli_packs_a_csv_in_chunks(tmp_path: Path) -> None:
    from gensyn_py.cli.main import cli

    source = write_csv(tmp_path / "t.csv", ["cat", "dog"])
    res = CliRunner().invoke(cli, ["data", "pack", str(source), "--target", "label", "--out", str(tmp_path / "c"),
                                   "--chunk-examples", "10"])
    assert res.exit_code == 0, res.output
    whole = pack_csv(source, "label")
    assert json.loads(res.stdout) == write_chunked(whole.dataset, 10, tmp_path / "again", whole.metadata)
    assert "3 chunks" in res.stderr and "2 classes (cat, dog)" in res.stderr


def test_text_streamed_equals_packed_whole_then_split(tmp_path: Path) -> None:
    """Several files whose windows cross file boundaries, a chunk size that does not divide the window count."""
    root = tmp_path / "corpus"
    root.mkdir()
    for i, words in enumerate((700, 90, 1200, 5)):  # the last file shorter than a window
        make_corpus(root / f"part-{i}.txt", words=words, seed=i)
    whole = pack_text(root, seq_len=24, vocab_size=320)
    assert whole.dataset.num_examples % 7
    entry = write_chunked(whole.dataset, 7, tmp_path / "split", whole.metadata)
    seen: list[tuple[int, int]] = []
    streamed = pack_text_chunked(root, 24, 320, 7, tmp_path / "streamed", lambda d, t: seen.append((d, t)))
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    total = 2 * sum(p.stat().st_size for p in root.iterdir())
    assert seen[-1] == (total, total)  # every byte trained on, then encoded
    short = tmp_path / "short.txt"
    short.write_text("a few words", encoding="utf-8")
    with pytest.raises(PackError) as was:
        pack_text(short, seq_len=24)
    with pytest.raises(PackError) as now:
        pack_text_chunked(short, 24, 512, 7, tmp_path / "none")
    assert str(now.value) == str(was.value) and not (tmp_path / "none" / MANIFEST_NAME).exists()


def test_one_text_file_packs_in_pieces_as_it_packs_whole(tmp_path: Path) -> None:
    """A single corpus file is read a piece at a time (train/packing/text_pieces.py), never whole, and still gives
    the chunks of packing it whole."""
    path = tmp_path / "one.txt"
    text = make_corpus(path, words=120_000, seed=3)  # about 700 KB, newlines among the words
    whole = pack_text(path, seq_len=32, vocab_size=400)
    entry = write_chunked(whole.dataset, 100, tmp_path / "split", whole.metadata)
    del whole
    seen: list[tuple[int, int]] = []
    tracemalloc.start()
    streamed = pack_text_chunked(path, 32, 400, 100, tmp_path / "streamed", lambda d, t: seen.append((d, t)),
                                 piece_bytes=2048)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    assert len(seen) > 500 and seen[-1][0] == seen[-1][1] == 2 * path.stat().st_size
    # The tokenizer's trainer holds 256 pieces at a time, the rest one piece and one chunk (100 windows, 51 KB);
    # the whole text as one string would be len(text) alone.
    assert peak < len(text) // 2, peak


@pytest.mark.parametrize("chunked", [False, True])
def test_the_tokenizer_trains_on_small_pieces_and_learns_what_whole_text_teaches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked: bool) -> None:
    """The `tokenizers` trainer reads its iterator 256 items at a time: it is fed pieces of at most about
    TRAIN_PIECE_BYTES (64 KiB: 16 MiB held, not the 256 MiB of 1 MiB pieces), and still learns the merges of the
    whole text."""
    from gensyn_py.train.packing import streamed_text, text
    from gensyn_py.train.packing.text_pieces import TRAIN_PIECE_BYTES

    path = tmp_path / "one.txt"
    corpus = make_corpus(path, words=60_000, seed=5)  # about 350 KB: five training pieces and more
    whole = text.train_tokenizer([corpus], 400).to_str()
    sizes: list[int] = []
    trained: list[str] = []

    def watched(texts: Any, vocab_size: int) -> Any:
        def counted() -> Any:
            for piece in texts:
                sizes.append(len(piece.encode("utf-8")))
                yield piece

        tokenizer = train(counted(), vocab_size)
        trained.append(tokenizer.to_str())
        return tokenizer

    module = streamed_text if chunked else text
    train = text.train_tokenizer
    monkeypatch.setattr(module, "train_tokenizer", watched)
    if chunked:
        pack_text_chunked(path, 32, 400, 100, tmp_path / "streamed")
    else:
        pack_text(path, seq_len=32, vocab_size=400)
    assert len(sizes) >= 5 and max(sizes) <= 2 * TRAIN_PIECE_BYTES, sizes
    assert trained == [whole]


def test_cli_packs_a_text_corpus_in_chunks(tmp_path: Path) -> None:
    from gensyn_py.cli.main import cli

    make_corpus(tmp_path / "c.txt", words=800)
    res = CliRunner().invoke(cli, ["data", "pack", str(tmp_path / "c.txt"), "--seq-len", "16", "--vocab-size", "300",
                                   "--out", str(tmp_path / "c"), "--chunk-examples", "20"])
    assert res.exit_code == 0, res.output
    whole = pack_text(tmp_path / "c.txt", seq_len=16, vocab_size=300)
    assert json.loads(res.stdout) == write_chunked(whole.dataset, 20, tmp_path / "again", whole.metadata)
    # The manifest ships the tokenizer, as the one-file pack does: it decodes a window back to the corpus's text.
    manifest = parse_manifest((tmp_path / "c" / MANIFEST_NAME).read_bytes())
    assert manifest.metadata == whole.metadata
    tokenizer = load_tokenizer(manifest.metadata)
    text = (tmp_path / "c.txt").read_text(encoding="utf-8")
    assert tokenizer.decode(whole.dataset.x[3].tolist()) in text


def test_npz_streamed_equals_packed_whole_then_split_and_reads_by_rows(tmp_path: Path) -> None:
    """The members are read a chunk's rows at a time from the compressed archive, not decompressed whole."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2000, 2048))  # float64: converted to float32 per chunk
    np.savez_compressed(tmp_path / "d.npz", x=x, y=rng.integers(0, 7, 2000).astype(np.uint8))
    whole = pack_arrays(tmp_path / "d.npz")
    entry = write_chunked(whole.dataset, 300, tmp_path / "split", whole.metadata)
    del whole, x
    tracemalloc.start()
    streamed = pack_npz_chunked(tmp_path / "d.npz", 300, tmp_path / "streamed")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert streamed.entry == entry and same_folder(tmp_path / "split", tmp_path / "streamed")
    assert streamed.chunks == 7
    assert peak < 8 * 300 * 2048 * 4  # a few chunks' worth, against 33 MB for the whole x in float64


def test_npz_streamed_refuses_what_packing_whole_refuses(tmp_path: Path) -> None:
    """Rows at fault are named; archives that are not two plain arrays get pack_arrays' own answer."""
    x = np.ones((30, 3))
    x[17, 1] = np.inf
    np.savez(tmp_path / "inf.npz", x=x, y=np.zeros(30, dtype=np.int64))
    with pytest.raises(PackError, match=r"rows 10\.\.19.*NaN or infinite"):
        pack_npz_chunked(tmp_path / "inf.npz", 10, tmp_path / "out")
    assert not (tmp_path / "out" / MANIFEST_NAME).exists()
    np.savez(tmp_path / "short.npz", x=np.ones((30, 3)), y=np.zeros(29, dtype=np.int64))
    np.savez(tmp_path / "extra.npz", x=np.ones((3, 3)), y=np.zeros(3, dtype=np.int64), z=np.ones(2))
    np.savez(tmp_path / "floaty.npz", x=np.ones((3, 3)), y=np.zeros(3))
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}] * 3, dtype=object), y=np.zeros(3, dtype=np.int64))
    (tmp_path / "broken.npz").write_bytes(b"PK not really")
    # Faults of a whole member's dtype or shape are found before any row is read, so they read as packing whole
    # does: the file's shape, not a chunk's.
    np.savez(tmp_path / "flat.npz", x=np.ones(3), y=np.zeros(3, dtype=np.int64))
    np.savez(tmp_path / "empty-dim.npz", x=np.ones((3, 0)), y=np.zeros(3, dtype=np.int64))
    np.savez(tmp_path / "bools.npz", x=np.ones((3, 2), dtype=bool), y=np.zeros(3, dtype=np.int64))
    for bad in ("short", "extra", "objects", "broken", "floaty", "flat", "empty-dim", "bools"):
        with pytest.raises(PackError) as was:
            pack_arrays(tmp_path / f"{bad}.npz")
        with pytest.raises(PackError) as now:
            pack_npz_chunked(tmp_path / f"{bad}.npz", 2, tmp_path / f"out-{bad}")
        assert str(now.value) == str(was.value), bad
    fortran = np.asfortranarray(np.arange(40, dtype=np.float32).reshape(10, 4))
    np.savez(tmp_path / "f.npz", x=fortran, y=np.arange(10))
    whole = pack_arrays(tmp_path / "f.npz")
    entry = write_chunked(whole.dataset, 4, tmp_path / "f-split", whole.metadata)
    assert pack_npz_chunked(tmp_path / "f.npz", 4, tmp_path / "f-streamed").entry == entry


@pytest.mark.parametrize("rows", [50, 5000], ids=["read-with-the-header", "read-late"])
def test_npz_with_a_bad_crc_is_a_pack_error_not_a_crash(tmp_path: Path, rows: int) -> None:
    """A damaged member is found when its last bytes are read: with the header (small) or rows later (large)."""
    np.savez(tmp_path / "d.npz", x=np.ones((rows, 4)), y=np.zeros(rows, dtype=np.int64))
    raw = bytearray((tmp_path / "d.npz").read_bytes())
    raw[raw.rfind(b"\x00\x00\xf0\x3f") + 3] ^= 1  # one bit of x's last 1.0, the CRC left as it was
    (tmp_path / "d.npz").write_bytes(bytes(raw))
    with pytest.raises(PackError, match=r"not a loadable \.npz without pickle \(Bad CRC-32 for file 'x\.npy'\)"):
        pack_npz_chunked(tmp_path / "d.npz", 1000, tmp_path / "out")
    assert not (tmp_path / "out" / MANIFEST_NAME).exists()


def test_csv_streamed_refuses_too_many_rows_and_a_file_changed_between_its_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gensyn_py.train import spec
    from gensyn_py.train.packing import streamed_csv

    source = write_csv(tmp_path / "t.csv", ["cat", "dog"])
    with monkeypatch.context() as m:
        m.setattr(spec, "MAX_EXAMPLES", 10)
        with pytest.raises(PackError, match="23 examples; a job spec allows at most 10"):
            pack_csv_chunked(source, "label", 5, tmp_path / "many")
    real, passes = streamed_csv.read_rows, []

    def second_pass_differs(*args: object) -> object:  # as if the file were rewritten between the two readings
        names, rows = real(*args)  # type: ignore[arg-type]
        passes.append(1)
        if len(passes) == 1:
            return names, rows
        return names, ((values, "eel" if line == 9 else label, line) for values, label, line in rows)

    monkeypatch.setattr(streamed_csv, "read_rows", second_pass_differs)
    with pytest.raises(PackError, match="line 9: label 'eel' was not in the file's first reading"):
        pack_csv_chunked(source, "label", 5, tmp_path / "changed")
    assert not (tmp_path / "changed" / MANIFEST_NAME).exists()


@pytest.mark.parametrize("case", ["npz_with_y", "npy_without_y"])
def test_cli_refuses_array_files_alike_with_or_without_chunks(tmp_path: Path, case: str) -> None:
    """Chunking changes how a dataset is written, not what is refused: the same message and exit status."""
    from gensyn_py.cli.main import cli

    x, y = np.zeros((4, 3), np.float32), np.arange(4)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    args = ["data", "pack", str(tmp_path / "d.npz"), "--y", str(tmp_path / "y.npy")] if case == "npz_with_y" \
        else ["data", "pack", str(tmp_path / "x.npy")]
    whole = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "w.safetensors")])
    chunked = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "c"), "--chunk-examples", "2"])
    assert whole.exit_code == chunked.exit_code == 1, (whole.output, chunked.output)
    said = "an .npz holds both x and y" if case == "npz_with_y" else "an .npy holds x only"
    errors = [[line for line in r.stderr.splitlines() if said in line] for r in (whole, chunked)]
    assert errors[0] == errors[1] and len(errors[0]) == 1
    assert not (tmp_path / "c").exists() and not (tmp_path / "w.safetensors").exists()
