"""`gensyn data pack`: turn an image folder, NumPy arrays, a CSV table or a text corpus into a dataset file.

Thin: the packers live in gensyn_py/train/packing. The spec's `dataset` entry is the only thing written to
stdout (JSON, so it can be piped into a spec); the inferred kind, the summary and the progress bar go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from gensyn_py.train.packing import Packed, ProgressFn
    from gensyn_py.train.packing.streamed import StreamedPack

KINDS = ("images", "arrays", "csv", "text")  # gensyn_py.train.packing.KINDS, without importing numpy for --help
# The options that apply to one kind only, and that kind.
_OPTION_KIND = {"size": "images", "channels": "images", "y_path": "arrays", "target": "csv",
                "vocab_size": "text", "seq_len": "text"}
_FLAG = {"size": "--size", "channels": "--channels", "y_path": "--y", "target": "--target",
         "vocab_size": "--vocab-size", "seq_len": "--seq-len"}


@click.group()
def data() -> None:
    """Prepare datasets that job specs can name."""


@data.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--kind", type=click.Choice(KINDS), default=None,
              help="What SOURCE is; inferred when left out (a folder of class folders: images; a .txt or a "
                   "folder of them: text; .npz/.npy: arrays; .csv: csv).")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="The safetensors file to write (a folder with --chunk-examples).")
@click.option("--size", metavar="HxW", default=None, help="images: resize every image to H x W (required).")
@click.option("--channels", type=click.Choice(["1", "3", "4"]), default=None,
              help="images: 1 greyscale, 3 RGB, 4 RGBA.  [default: 3]")
@click.option("--y", "y_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="arrays: the .npy of targets, when SOURCE is the .npy of inputs.")
@click.option("--target", metavar="COLUMN", default=None, help="csv: the label column (required).")
@click.option("--vocab-size", type=click.IntRange(min=256), default=None,
              help="text: the tokenizer's largest vocabulary.  [default: 512]")
@click.option("--seq-len", type=click.IntRange(min=1), default=None,
              help="text: tokens per example.  [default: 64]")
@click.option("--chunk-examples", type=click.IntRange(min=1), default=None,
              help="Store the dataset as chunks of this many examples: --out is then a folder holding manifest.json "
                   "and chunk-NNNNN.safetensors; nodes fetch only the chunks their steps read.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the dataset entry: no progress, no summary.")
def pack(source: Path, kind: str | None, out: Path, size: str | None, channels: str | None, y_path: Path | None,
         target: str | None, vocab_size: int | None, seq_len: int | None, chunk_examples: int | None,
         quiet: bool) -> None:
    """Pack SOURCE into a dataset file and print the job spec's `dataset` entry for it (JSON).

    \b
    gensyn data pack photos/ --size 32x32 --out photos.safetensors
    gensyn data pack x.npy --y y.npy --out arrays.safetensors
    gensyn data pack table.csv --target label --out table.safetensors
    gensyn data pack corpus/ --seq-len 128 --vocab-size 1024 --out corpus.safetensors
    """
    from gensyn_py.train.data import dataset_entry
    from gensyn_py.train.packing import infer_kind

    if out.resolve() == source.resolve():
        raise click.UsageError("--out would overwrite SOURCE")
    if kind is None:
        kind = infer_kind(source)
        _note(quiet, f"inferred --kind {kind} from {source}")
    given = {"size": size, "channels": channels, "y_path": y_path, "target": target, "vocab_size": vocab_size,
             "seq_len": seq_len}
    for name, value in given.items():
        if value is not None and _OPTION_KIND[name] != kind:
            raise click.UsageError(f"{_FLAG[name]} applies to --kind {_OPTION_KIND[name]}, not {kind}")
    if chunk_examples is not None and _streams(kind, source):
        with _progress(quiet, f"packing {source.name} in chunks") as progress:
            streamed = _pack_streamed(kind, source, size, int(channels or 3), y_path, target,
                                      (seq_len or 64, vocab_size or 512), chunk_examples, out, progress)
        click.echo(json.dumps(streamed.entry, indent=2))
        _note(quiet, f"wrote {out}/: manifest.json and {streamed.chunks} chunks: {streamed_summary(streamed)}")
        return
    with _progress(quiet, f"packing {source.name}") as progress:
        packed = _pack(kind, source, size, int(channels or 3), y_path, target, vocab_size or 512, seq_len or 64,
                       progress)
    if chunk_examples is not None:
        from gensyn_py.train.chunks import write_chunked

        entry = write_chunked(packed.dataset, chunk_examples, out, packed.metadata)
        click.echo(json.dumps(entry, indent=2))
        _note(quiet, f"wrote {out}/: manifest.json and {-(-packed.dataset.num_examples // chunk_examples)} chunks: "
                     f"{summary(packed)}")
        return
    _write(out, packed.data)
    click.echo(json.dumps(dataset_entry(packed.dataset, packed.data), indent=2))
    _note(quiet, f"wrote {out}: {summary(packed)}")


def _pack(kind: str, source: Path, size: str | None, channels: int, y_path: Path | None, target: str | None,
          vocab_size: int, seq_len: int, progress: ProgressFn | None) -> Packed:
    from gensyn_py.train import packing

    if kind == "images":
        if size is None:
            raise click.UsageError("--kind images needs --size HxW")
        return packing.pack_images(source, packing.parse_size(size), channels, progress)
    if kind == "arrays":
        return packing.pack_arrays(source, y_path)
    if kind == "csv":
        return packing.pack_csv(source, _target(target))
    return packing.pack_text(source, seq_len, vocab_size, progress)


def _target(target: str | None) -> str:
    if target is None:
        raise click.UsageError("--kind csv needs --target COLUMN (the label column)")
    return target


def _streams(kind: str, source: Path) -> bool:
    """Whether `kind` packs chunk by chunk (train/packing/streamed*.py): image folders, .npy and .npz arrays, CSV
    files and text corpora."""
    return kind in ("images", "csv", "text") or (kind == "arrays" and source.suffix.lower() in (".npy", ".npz"))


def _pack_streamed(kind: str, source: Path, size: str | None, channels: int, y_path: Path | None,
                   target: str | None, text: tuple[int, int], chunk_examples: int, out: Path,
                   progress: ProgressFn | None) -> StreamedPack:
    """`text`: the corpus's (seq_len, vocab_size)."""
    from gensyn_py.train.packing import parse_size
    from gensyn_py.train.packing.arrays import check_sources
    from gensyn_py.train.packing.streamed import pack_images_chunked, pack_npy_chunked
    from gensyn_py.train.packing.streamed_csv import pack_csv_chunked
    from gensyn_py.train.packing.streamed_npz import pack_npz_chunked
    from gensyn_py.train.packing.streamed_text import pack_text_chunked

    if kind == "csv":
        return pack_csv_chunked(source, _target(target), chunk_examples, out, progress)
    if kind == "text":
        return pack_text_chunked(source, *text, chunk_examples, out, progress)
    if kind == "images":
        if size is None:
            raise click.UsageError("--kind images needs --size HxW")
        return pack_images_chunked(source, parse_size(size), channels, chunk_examples, out, progress)
    check_sources(source, y_path)  # the whole-file packer's check: chunking changes nothing of what is refused
    if y_path is None:  # an .npz
        return pack_npz_chunked(source, chunk_examples, out, progress)
    return pack_npy_chunked(source, y_path, chunk_examples, out, progress)


def streamed_summary(streamed: StreamedPack) -> str:
    e = streamed.entry
    parts = [f"{e['num_examples']:,} examples", f"x {e['x_dtype']}{e['x_shape']}", f"y int64{e['y_shape']}"]
    if streamed.classes is not None:
        shown = ", ".join(streamed.classes[:5]) + (", …" if len(streamed.classes) > 5 else "")
        parts.append(f"{len(streamed.classes)} classes ({shown})")
    parts.append(f"{e['size_bytes']:,} bytes")
    return ", ".join(parts)


def summary(packed: Packed) -> str:
    """One line: examples, shapes, and the classes or the vocabulary."""
    ds, meta = packed.dataset, packed.metadata
    parts = [f"{ds.num_examples:,} examples", f"x {ds.x.dtype}{list(ds.x.shape[1:])}",
             f"y {ds.y.dtype}{list(ds.y.shape[1:])}"]
    if "classes" in meta:
        names = json.loads(meta["classes"])
        shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
        parts.append(f"{len(names)} classes ({shown})")
    elif "vocab_size" in meta:
        parts.append(f"vocabulary {int(meta['vocab_size']):,} tokens (tokenizer in the metadata)")
    else:
        parts.append(f"targets {int(ds.y.min())}..{int(ds.y.max())}")
    parts.append(f"{len(packed.data):,} bytes")
    return ", ".join(parts)


def _note(quiet: bool, line: str) -> None:
    if not quiet:
        click.echo(line, err=True)


@contextmanager
def _progress(quiet: bool, label: str) -> Iterator[ProgressFn | None]:
    """A bar on stderr while a packer works through its files; nothing off a terminal or with --quiet."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task: TaskID | None = None

        def update(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(label, total=total)
            bar.update(task, completed=done)

        yield update


def _write(out: Path, data: bytes) -> None:
    """Write through a temporary file, so a failed write never leaves half a dataset under `out`'s name."""
    from gensyn_py.storage.atomic import atomic_write

    try:
        atomic_write(out, data)
    except OSError as e:
        raise click.ClickException(f"cannot write {out}: {e.strerror or e}") from None
