"""`gensyn_py.train.packing`: image folders, NumPy arrays, CSV tables and text corpora packed into datasets that
`Dataset.from_bytes` and `DatasetSpec` accept, byte-identical on every run, with clear errors naming the culprit."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from gensyn_py.errors import SpecError
from gensyn_py.train import spec as spec_module
from gensyn_py.train.data import Dataset, dataset_entry
from gensyn_py.train.packing import (
    Packed,
    PackError,
    infer_kind,
    load_tokenizer,
    pack_arrays,
    pack_csv,
    pack_images,
    pack_text,
    parse_size,
    read_metadata,
)
from gensyn_py.train.spec import DatasetSpec

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "verify", "train", "naïve", "café",
         "model", "gradient", "commit", "replay", "shard", "round", "\n"]


def make_images(root: Path) -> Path:
    """Three classes, created out of order, in every mode and format the packer must take."""
    (root / "dog").mkdir(parents=True)
    (root / "cat").mkdir()
    (root / "bird").mkdir()
    Image.new("RGB", (10, 7), (255, 0, 0)).save(root / "dog" / "b_red.png")
    Image.new("L", (5, 9), 128).save(root / "dog" / "a_grey.jpg", quality=100)
    Image.new("RGBA", (6, 6), (0, 0, 255, 0)).save(root / "cat" / "clear_blue.webp", lossless=True, exact=True)
    Image.new("P", (4, 4), 3).save(root / "cat" / "palette.gif")
    Image.new("1", (8, 8), 1).save(root / "bird" / "white.bmp")
    Image.fromarray(np.full((3, 5), 65535, dtype=np.uint16)).save(root / "bird" / "deep.png")  # 16-bit grey
    (root / "bird" / "nested").mkdir()
    Image.new("CMYK", (12, 3), (0, 0, 0, 0)).save(root / "bird" / "nested" / "print.jpeg")
    (root / ".DS_Store").write_bytes(b"\0junk")
    (root / "cat" / ".thumbs").mkdir()
    (root / "cat" / ".thumbs" / "x.txt").write_text("hidden, skipped")
    return root


def make_corpus(path: Path, words: int = 1500, seed: int = 0) -> str:
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    path.write_text(text, encoding="utf-8")
    return text


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def accepted(packed: Packed) -> Dataset:
    """The packed bytes decode unchanged and satisfy the spec entry built from them."""
    entry = dataset_entry(packed.dataset, packed.data)
    return Dataset.from_bytes(packed.data, DatasetSpec(**entry))


# --- images ---------------------------------------------------------------------------------------------------


def test_images_pack_every_mode_to_nchw_with_sorted_classes(tmp_path: Path) -> None:
    packed = pack_images(make_images(tmp_path / "imgs"), (4, 6), 3)
    ds = accepted(packed)
    assert ds.x.shape == (7, 3, 4, 6) and ds.x.dtype == np.float32
    assert ds.y.tolist() == [0, 0, 0, 1, 1, 2, 2]  # bird, cat, dog: sorted folder names, files sorted inside
    assert json.loads(read_metadata(packed.data)["classes"]) == ["bird", "cat", "dog"]
    assert read_metadata(packed.data)["kind"] == "images"
    assert ds.x.min() >= 0.0 and ds.x.max() <= 1.0
    np.testing.assert_array_equal(ds.x[0], 1.0)  # 16-bit white stays white (bird/deep.png)
    np.testing.assert_array_equal(ds.x[1], 1.0)  # CMYK (0,0,0,0) is white (bird/nested/print.jpeg)
    np.testing.assert_array_equal(ds.x[2], 1.0)  # 1-bit white (bird/white.bmp)
    np.testing.assert_array_equal(ds.x[3], np.array([0, 0, 1], np.float32)[:, None, None] * np.ones((4, 6)))
    np.testing.assert_allclose(ds.x[5], 128 / 255, atol=2 / 255)  # grey JPEG
    np.testing.assert_array_equal(ds.x[6, 0], 1.0)  # red
    np.testing.assert_array_equal(ds.x[6, 1:], 0.0)


def test_images_channels_one_and_four(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    grey = accepted(pack_images(root, (2, 3), 1))
    assert grey.x.shape == (7, 1, 2, 3)
    np.testing.assert_allclose(grey.x[6], 76 / 255, atol=1 / 255)  # ITU-R 601 luma of pure red
    rgba = accepted(pack_images(root, (5, 5), 4))
    assert rgba.x.shape == (7, 4, 5, 5)
    np.testing.assert_array_equal(rgba.x[3, 3], 0.0)  # the transparent webp keeps alpha 0
    np.testing.assert_array_equal(rgba.x[6, 3], 1.0)  # an opaque RGB image gets alpha 1


def test_images_pack_is_byte_identical_twice(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    assert pack_images(root, (8, 8), 3).data == pack_images(root, (8, 8), 3).data


@pytest.mark.parametrize("text", ["32", "0x4", "4x0", "ax3", "3x-1", "3x4x5", ""])
def test_bad_size_is_refused_naming_it(text: str) -> None:
    with pytest.raises(PackError, match=f"size {text!r}: expected HxW"):
        parse_size(text)


def test_size_parses_height_then_width() -> None:
    assert parse_size("28x32") == (28, 32)
    assert parse_size(" 7X9 ") == (7, 9)


def test_empty_image_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackError, match="no class folders"):
        pack_images(tmp_path / "empty", (4, 4))


def test_image_root_with_loose_files_names_the_file(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    Image.new("L", (2, 2)).save(root / "stray.png")
    with pytest.raises(PackError, match=r"stray\.png: not inside a class folder"):
        pack_images(root, (4, 4))


def test_empty_class_folder_is_named(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    (root / "eel").mkdir()
    (root / "eel" / ".hidden.png").write_bytes(b"")
    with pytest.raises(PackError, match=r"eel: class folder holds no images"):
        pack_images(root, (4, 4))


def test_non_image_file_is_named(tmp_path: Path) -> None:
    root = make_images(tmp_path / "imgs")
    (root / "dog" / "notes.txt").write_text("not an image")
    with pytest.raises(PackError, match=r"dog/notes\.txt: not an image file"):
        pack_images(root, (4, 4))


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_image_is_named(tmp_path: Path, damage: str) -> None:
    root = make_images(tmp_path / "imgs")
    bad = root / "cat" / "zz_bad.png"
    if damage == "garbage":
        bad.write_bytes(b"this is not a png at all")
    else:
        noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
        Image.fromarray(noise).save(bad)
        bad.write_bytes(bad.read_bytes()[:4000])
    with pytest.raises(PackError, match=r"cat/zz_bad\.png: not a readable image"):
        pack_images(root, (4, 4))


def test_images_over_the_byte_limit_are_refused_before_decoding(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_images(tmp_path / "imgs")
    monkeypatch.setattr(spec_module, "MAX_DATASET_BYTES", 1000)
    with pytest.raises(PackError, match=r"7 images of 3x32x32 .* at most 1,000 bytes \(MAX_DATASET_BYTES\)"):
        pack_images(root, (32, 32), 3)


# --- arrays ---------------------------------------------------------------------------------------------------


def test_npz_floats_become_float32_and_int_targets_int64(tmp_path: Path) -> None:
    x = np.linspace(0, 1, 24, dtype=np.float64).reshape(6, 2, 2)
    y = np.array([0, 1, 2, 1, 0, 2], dtype=np.int32)
    np.savez(tmp_path / "d.npz", x=x, y=y)
    packed = pack_arrays(tmp_path / "d.npz")
    ds = accepted(packed)
    assert ds.x.dtype == np.float32 and ds.y.dtype == np.int64
    np.testing.assert_array_equal(ds.x, x.astype(np.float32))
    np.testing.assert_array_equal(ds.y, y)
    assert read_metadata(packed.data) == {"kind": "arrays"}


def test_npy_pair_integer_inputs_become_int64_tokens(tmp_path: Path) -> None:
    x = np.arange(40, dtype=np.uint16).reshape(5, 8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x + 1)
    ds = accepted(pack_arrays(tmp_path / "x.npy", tmp_path / "y.npy"))
    assert ds.x.dtype == np.int64 and ds.y.shape == (5, 8)
    np.testing.assert_array_equal(ds.y, x.astype(np.int64) + 1)


def test_object_array_is_refused_not_unpickled(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    np.save(tmp_path / "y.npy", np.array([0, 1]))
    with pytest.raises(PackError, match=r"x\.npy: .*Python objects, which are never unpickled"):
        pack_arrays(tmp_path / "x.npy", tmp_path / "y.npy")
    np.savez(tmp_path / "d.npz", x=np.zeros((2, 2)), y=np.array(["a", None], dtype=object))
    with pytest.raises(PackError, match=r"d\.npz: .*never unpickled"):
        pack_arrays(tmp_path / "d.npz")


def test_float_targets_are_refused_naming_the_file(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 2), np.float32))
    np.save(tmp_path / "labels.npy", np.array([0.0, 1.0, 1.0]))
    with pytest.raises(PackError, match=r"y \(.*labels\.npy\) is float64; targets must be integers"):
        pack_arrays(tmp_path / "x.npy", tmp_path / "labels.npy")


def test_mismatched_lengths_name_both_files_and_counts(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 2), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(4, np.int64))
    with pytest.raises(PackError, match=r"x \(.*x\.npy\) holds 3 examples but y \(.*y\.npy\) holds 4"):
        pack_arrays(tmp_path / "x.npy", tmp_path / "y.npy")


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x": np.zeros((2, 2))}, r"exactly arrays 'x' and 'y', found \['x'\]"),
        ({"x": np.zeros((2, 2)), "y": np.zeros(2, int), "z": np.zeros(1)}, r"found \['x', 'y', 'z'\]"),
        ({"x": np.zeros(3), "y": np.zeros(3, int)}, r"x has shape \[3\]; .* 1 to 4 dimensions per example"),
        ({"x": np.zeros((1, 1, 1, 1, 1, 1)), "y": np.zeros(1, int)}, r"x has shape \[1, 1, 1, 1, 1, 1\]"),
        ({"x": np.array([[0.0, np.nan]]), "y": np.zeros(1, int)}, r"NaN or infinite"),
        ({"x": np.array([[1e300]]), "y": np.zeros(1, int)}, r"beyond float32's range"),
        ({"x": np.zeros((2, 1)), "y": np.array([0, -1])}, r"negative values \(min -1\)"),
        ({"x": np.zeros((2, 1), bool), "y": np.zeros(2, int)}, r"x \(.*\) is bool"),
        ({"x": np.zeros((0, 2)), "y": np.zeros(0, int)}, r"no examples"),
    ],
)
def test_bad_npz_contents_are_refused(tmp_path: Path, arrays: dict[str, Any], message: str) -> None:
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(PackError, match=message):
        pack_arrays(tmp_path / "d.npz")


def test_npy_without_targets_and_npz_with_extra_targets_are_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((2, 2)))
    np.savez(tmp_path / "d.npz", x=np.zeros((2, 2)), y=np.zeros(2, int))
    with pytest.raises(PackError, match=r"x\.npy: an \.npy holds x only"):
        pack_arrays(tmp_path / "x.npy")
    with pytest.raises(PackError, match=r"d\.npz: an \.npz holds both x and y"):
        pack_arrays(tmp_path / "d.npz", tmp_path / "x.npy")


def test_arrays_over_the_byte_limit_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np.savez(tmp_path / "d.npz", x=np.zeros((100, 10), np.float32), y=np.zeros(100, int))
    monkeypatch.setattr(spec_module, "MAX_DATASET_BYTES", 4000)
    with pytest.raises(PackError, match=r"4,800 bytes; a job spec allows at most 4,000 bytes"):
        pack_arrays(tmp_path / "d.npz")


# --- csv ------------------------------------------------------------------------------------------------------


def test_csv_string_labels_map_to_sorted_classes(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("height,species,width\n1.5,virginica,2\n\n-3,setosa,4e1\n0,versicolor, 7 \n")
    packed = pack_csv(tmp_path / "t.csv", "species")
    ds = accepted(packed)
    np.testing.assert_array_equal(ds.x, np.array([[1.5, 2], [-3, 40], [0, 7]], np.float32))
    assert ds.y.tolist() == [2, 0, 1]
    meta = read_metadata(packed.data)
    assert meta["kind"] == "csv" and json.loads(meta["classes"]) == ["setosa", "versicolor", "virginica"]


def test_csv_integer_labels_are_used_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("label,a\n3,0.5\n0,1\n7,2\n")
    packed = pack_csv(tmp_path / "t.csv", "label")
    assert accepted(packed).y.tolist() == [3, 0, 7]
    assert "classes" not in read_metadata(packed.data)


def test_too_many_examples_are_refused_naming_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.csv").write_text("a,label\n1,0\n2,1\n3,1\n")
    monkeypatch.setattr(spec_module, "MAX_EXAMPLES", 2)
    with pytest.raises(PackError, match=r"t\.csv: 3 examples; a job spec allows at most 2"):
        pack_csv(tmp_path / "t.csv", "label")


def test_csv_is_byte_identical_twice(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("a,b,c\n1,2,x\n3,4,y\n")
    assert pack_csv(tmp_path / "t.csv", "c").data == pack_csv(tmp_path / "t.csv", "c").data


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,label\n1,0\n2,1\nthree,1\n", r"t\.csv line 4, column 'a': 'three' is not a number"),
        ("a,label\n1,0\n,1\n", r"t\.csv line 3, column 'a': '' is not a number"),
        ("a,label\ninf,0\n", r"line 2, column 'a': 'inf' is not a finite float32 number"),
        ("a,label\n1,0\n2,-1\n", r"line 3, column 'label': label -1 is not a class id"),
        ("a,label\n1,0\n2,1,3\n", r"t\.csv line 3: 3 cells, the header has 2"),
        ("a,label\n1,\n", r"line 2: empty label in column 'label'"),
        ("a,b\n1,2\n", r"no target column 'label'; the columns are \['a', 'b'\]"),
        ("label\n1\n", r"only the target column 'label'; no feature columns"),
        ("a,a,label\n1,2,0\n", r"names column\(s\) \['a'\] more than once"),
        ("a,label\n", r"a header but no data rows"),
        ("", r"t\.csv: empty"),
    ],
)
def test_bad_csv_is_refused_naming_row_and_column(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(PackError, match=message):
        pack_csv(tmp_path / "t.csv", "label")


# --- text -----------------------------------------------------------------------------------------------------


def test_text_windows_shift_by_one_and_tile_the_encoded_corpus(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "c.txt")
    packed = pack_text(tmp_path / "c.txt", seq_len=16, vocab_size=300)
    ds = accepted(packed)
    assert ds.x.dtype == np.int64 and ds.x.shape[1:] == (16,) and ds.y.shape == ds.x.shape
    np.testing.assert_array_equal(ds.x[:, 1:], ds.y[:, :-1])
    meta = read_metadata(packed.data)
    tokenizer = load_tokenizer(meta)
    assert meta["kind"] == "text" and int(meta["vocab_size"]) == tokenizer.get_vocab_size() <= 300
    assert int(ds.x.max()) < int(meta["vocab_size"])
    stream = np.concatenate([ds.x, ds.y[:, -1:]], axis=1).reshape(-1)  # the windows back to back
    assert stream.tolist() == tokenizer.encode(corpus).ids[: len(stream)]
    assert len(tokenizer.encode(corpus).ids) - len(stream) < 17  # only the tail that fills no window is dropped


def test_shipped_tokenizer_decodes_a_window_back_to_the_corpus(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "c.txt")
    packed = pack_text(tmp_path / "c.txt", seq_len=32)
    ds = Dataset.from_bytes(packed.data)
    tokenizer = load_tokenizer(read_metadata(packed.data))
    first = tokenizer.decode([*ds.x[0].tolist(), int(ds.y[0, -1])])
    assert len(first) > 32 and corpus.startswith(first)
    third = tokenizer.decode(ds.x[2].tolist())
    assert len(third) >= 16 and third in corpus  # a window in the middle decodes to a piece of the corpus


def test_text_folder_is_its_txt_files_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "corpus" / "sub").mkdir(parents=True)
    b = make_corpus(tmp_path / "corpus" / "b.txt", 300, seed=2)
    a = make_corpus(tmp_path / "corpus" / "a.txt", 300, seed=1)
    s = make_corpus(tmp_path / "corpus" / "sub" / "c.txt", 300, seed=3)
    (tmp_path / "corpus" / ".notes").write_text("hidden, skipped")
    packed = pack_text(tmp_path / "corpus", seq_len=8)
    ds = Dataset.from_bytes(packed.data)
    decoded = load_tokenizer(read_metadata(packed.data)).decode(
        np.concatenate([ds.x, ds.y[:, -1:]], axis=1).reshape(-1).tolist())
    assert (a + b + s).startswith(decoded) and len(decoded) > len(a + b)


def test_text_pack_is_byte_identical_twice(tmp_path: Path) -> None:
    make_corpus(tmp_path / "c.txt", 3000)
    assert pack_text(tmp_path / "c.txt", 16, 400).data == pack_text(tmp_path / "c.txt", 16, 400).data


def test_too_short_corpus_says_how_many_tokens_it_has_and_needs(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("tiny")
    with pytest.raises(PackError, match=r"c\.txt: the corpus is \d tokens; one window of seq_len 64 needs 65"):
        pack_text(tmp_path / "c.txt", seq_len=64)


def test_text_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("hello")
    (tmp_path / "corpus" / "b.md").write_text("# not txt")
    with pytest.raises(PackError, match=r"b\.md: not a \.txt file"):
        pack_text(tmp_path / "corpus")
    (tmp_path / "corpus" / "b.md").unlink()
    (tmp_path / "corpus" / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(PackError, match=r"latin1\.txt: not UTF-8 text"):
        pack_text(tmp_path / "corpus")
    with pytest.raises(PackError, match=r"vocab_size 100: a byte-level BPE needs at least 256"):
        pack_text(tmp_path / "corpus" / "a.txt", vocab_size=100)


# --- determinism across processes, metadata, kinds --------------------------------------------------------------

_DIGESTS = """
import hashlib, sys
from pathlib import Path
from typing import Any
from gensyn_py.train.packing import pack_csv, pack_images, pack_text
root = Path(sys.argv[1])
for packed in (pack_images(root / "imgs", (5, 7), 4), pack_csv(root / "t.csv", "c"),
               pack_text(root / "c.txt", 16, 400)):
    print(hashlib.sha256(packed.data).hexdigest())
"""


def test_packing_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Hash-map order and BPE merge ties change from process to process; the bytes must not."""
    make_images(tmp_path / "imgs")
    (tmp_path / "t.csv").write_text("a,b,c\n1,2,zebra\n3,4,ant\n5,6,émeu\n")
    make_corpus(tmp_path / "c.txt", 3000)
    runs = {subprocess.run([sys.executable, "-c", _DIGESTS, str(tmp_path)], check=True, capture_output=True,
                           text=True, env={"PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
    here = [sha(pack_images(tmp_path / "imgs", (5, 7), 4).data), sha(pack_csv(tmp_path / "t.csv", "c").data),
            sha(pack_text(tmp_path / "c.txt", 16, 400).data)]
    assert runs == {"\n".join(here) + "\n"}


def test_read_metadata_of_plain_and_broken_files() -> None:
    plain = Dataset(np.zeros((2, 3), np.float32), np.zeros(2, np.int64)).to_bytes()
    assert read_metadata(plain) == {}
    for broken in (b"", b"\x05\0\0\0\0\0\0\0{", b"\x04\0\0\0\0\0\0\0[1]]", b"\xff" * 16):
        with pytest.raises(SpecError, match="not safetensors"):
            read_metadata(broken)


def test_load_tokenizer_refuses_datasets_without_one(tmp_path: Path) -> None:
    with pytest.raises(PackError, match=r"ships no tokenizer \(metadata kind 'csv'\)"):
        load_tokenizer({"kind": "csv"})


@pytest.mark.parametrize(
    ("name", "kind"), [("d.npz", "arrays"), ("x.NPY", "arrays"), ("t.csv", "csv"), ("c.txt", "text")])
def test_kind_is_inferred_from_the_extension(tmp_path: Path, name: str, kind: str) -> None:
    (tmp_path / name).write_bytes(b"")
    assert infer_kind(tmp_path / name) == kind


def test_kind_is_inferred_from_the_folder(tmp_path: Path) -> None:
    assert infer_kind(make_images(tmp_path / "imgs")) == "images"
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("x")
    assert infer_kind(tmp_path / "corpus") == "text"
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "a.bin").write_bytes(b"")
    with pytest.raises(PackError, match=r"odd: cannot tell what it holds"):
        infer_kind(tmp_path / "odd")
    (tmp_path / "m.parquet").write_bytes(b"")
    with pytest.raises(PackError, match=r"m\.parquet: cannot tell the kind from the extension '\.parquet'"):
        infer_kind(tmp_path / "m.parquet")
