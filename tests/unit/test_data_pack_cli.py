"""`gensyn data pack`: writes the dataset, prints its spec entry as JSON on stdout (and only that), says what it
inferred and summarises on stderr, and turns bad input into one red line or a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from PIL import Image

from gensyn_py.cli.main import cli
from gensyn_py.train.data import Dataset, dataset_entry
from gensyn_py.train.packing import read_metadata
from gensyn_py.train.spec import DatasetSpec


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["data", "pack", *map(str, args)])


def entry_matches_file(result: Result, out: Path) -> dict[str, object]:
    """The printed entry parses, names the written bytes, and is a valid DatasetSpec for them."""
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)
    data = out.read_bytes()
    assert entry == dataset_entry(Dataset.from_bytes(data), data)
    Dataset.from_bytes(data, DatasetSpec(**entry))
    return entry


@pytest.fixture
def images(tmp_path: Path) -> Path:
    for i, name in enumerate(["zebra", "ant"]):
        (tmp_path / "imgs" / name).mkdir(parents=True)
        for j in range(3):
            Image.new("RGB", (9 + j, 5), (40 * i, 30 * j, 7)).save(tmp_path / "imgs" / name / f"{j}.png")
    return tmp_path / "imgs"


def test_images_inferred_packed_and_entry_printed(tmp_path: Path, images: Path) -> None:
    out = tmp_path / "imgs.safetensors"
    result = run(images, "--size", "4x5", "--channels", "1", "--out", out)
    entry = entry_matches_file(result, out)
    assert entry["x_shape"] == [1, 4, 5] and entry["x_dtype"] == "float32" and entry["num_examples"] == 6
    assert f"inferred --kind images from {images}" in result.stderr
    assert "6 examples, x float32[1, 4, 5], y int64[], 2 classes (ant, zebra)" in result.stderr
    assert not list(tmp_path.glob(".*.partial"))


def test_same_input_packs_to_the_same_file_and_cid(tmp_path: Path, images: Path) -> None:
    first = run(images, "--size", "3x3", "--out", tmp_path / "a.safetensors")
    second = run(images, "--size", "3x3", "--out", tmp_path / "b.safetensors")
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    assert json.loads(first.stdout)["cid"] == json.loads(second.stdout)["cid"]


def test_arrays_from_an_npy_pair(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.int32).reshape(3, 4))
    np.save(tmp_path / "y.npy", np.arange(12, dtype=np.int32).reshape(3, 4) + 1)
    out = tmp_path / "lm.safetensors"
    entry = entry_matches_file(run(tmp_path / "x.npy", "--y", tmp_path / "y.npy", "--out", out), out)
    assert entry["x_dtype"] == "int64" and entry["y_shape"] == [4]


def test_csv_with_target_and_quiet_prints_only_the_entry(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("f1,f2,kind\n1,2,b\n3,4,a\n")
    out = tmp_path / "t.safetensors"
    result = run(tmp_path / "t.csv", "--target", "kind", "--out", out, "--quiet")
    assert entry_matches_file(result, out)["x_shape"] == [2]
    assert result.stderr == ""
    assert json.loads(read_metadata(out.read_bytes())["classes"]) == ["a", "b"]


def test_text_corpus_ships_its_tokenizer(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("the model trains and the validator replays it. " * 40)
    out = tmp_path / "c.safetensors"
    result = run(tmp_path / "c.txt", "--kind", "text", "--seq-len", "12", "--vocab-size", "300", "--out", out)
    entry = entry_matches_file(result, out)
    meta = read_metadata(out.read_bytes())
    assert entry["x_shape"] == [12] and entry["y_shape"] == [12] and meta["kind"] == "text"
    assert f"vocabulary {meta['vocab_size']} tokens" in result.stderr
    assert "inferred" not in result.stderr


def test_bad_input_is_one_red_line_naming_the_file(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros((3, 2), np.float32))
    np.save(tmp_path / "y.npy", np.zeros(3, np.float32))
    result = run(tmp_path / "x.npy", "--kind", "arrays", "--y", tmp_path / "y.npy", "--out", tmp_path / "o.safetensors")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: y (") and "y.npy) is float32" in lines[0]
    assert not (tmp_path / "o.safetensors").exists()


def test_too_short_corpus_error_reaches_the_user(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("short")
    result = run(tmp_path / "c.txt", "--out", tmp_path / "o.safetensors")
    assert result.exit_code == 1
    assert "one window of seq_len 64 needs 65" in result.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "label"], "--target applies to --kind csv, not images"),
        (["--seq-len", "8", "--size", "2x2"], "--seq-len applies to --kind text, not images"),
        ([], "--kind images needs --size HxW"),
    ],
)
def test_options_for_another_kind_are_usage_errors(tmp_path: Path, images: Path, extra: list[str],
                                                   message: str) -> None:
    result = run(images, "--out", tmp_path / "o.safetensors", *extra)
    assert result.exit_code == 2
    assert message in result.stderr


def test_bad_size_is_reported(tmp_path: Path, images: Path) -> None:
    result = run(images, "--size", "32", "--out", tmp_path / "o.safetensors")
    assert result.exit_code == 1
    assert "size '32': expected HxW" in result.stderr


def test_csv_without_target_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    result = run(tmp_path / "t.csv", "--out", tmp_path / "o.safetensors")
    assert result.exit_code == 2 and "--kind csv needs --target COLUMN" in result.stderr
