"""A CSV file with a header row as a classification dataset: one label column, every other column a feature.

Read with the csv module (no pandas): x is float32 (N, F) with the feature columns in header order, y the
int64 labels. Labels that are all integers are used as they are (>= 0); otherwise every label is a name,
mapped to its index in the sorted list of names, which goes into metadata `classes`. A cell that is not a
finite number is refused with its line and column, never skipped or filled in.
"""

from __future__ import annotations

import csv
import json
import math
import re
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.train.packing.common import Packed, PackError, check_bytes, finish

if TYPE_CHECKING:
    from _csv import Reader

_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def pack_csv(path: Path, target: str) -> Packed:
    """Pack `path`, whose column `target` holds the labels."""
    with csv_file(path) as reader:
        names, features, labels = _read(reader, path, target)
    width = len(names) - 1
    x = np.frombuffer(features, dtype=np.float64).astype(np.float32).reshape(-1, width)
    classes = None
    if all(is_integer(label) for label, _ in labels):
        y = _integer_labels(labels, path, target)
    else:
        classes = sorted({label for label, _ in labels})
        index = {name: i for i, name in enumerate(classes)}
        y = np.array([index[label] for label, _ in labels], dtype=np.int64)
    return finish(x, y, csv_metadata(classes), str(path))


@contextmanager
def csv_file(path: Path) -> Iterator[Reader]:
    """`path` read as a CSV file; a decoding or CSV fault met while reading it is a PackError saying which."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            yield csv.reader(f)
    except UnicodeDecodeError as e:
        raise PackError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise PackError(f"{path}: not a readable CSV file ({e})") from None


def csv_metadata(classes: list[str] | None) -> dict[str, str]:
    """The kind, and the label names where the labels are names (integer labels are the class ids)."""
    return {"kind": "csv"} if classes is None else {"kind": "csv", "classes": json.dumps(classes, ensure_ascii=False)}


def _read(reader: Reader, path: Path, target: str) -> tuple[list[str], array, list[tuple[str, int]]]:
    """The header, every feature value in row order, and each label with its line number."""
    names, rows = read_rows(reader, path, target)
    features = array("d")
    labels: list[tuple[str, int]] = []
    for values, label, line in rows:
        features.extend(values)
        labels.append((label, line))
        check_bytes(len(features) * 4 + len(labels) * 8, f"{path}: {len(labels):,} rows and counting")
    if not labels:
        raise PackError(f"{path}: a header but no data rows")
    return names, features, labels


Row = tuple[list[float], str, int]  # a data row's feature values in header order, its label, its line


def read_rows(reader: Reader, path: Path, target: str) -> tuple[list[str], Iterator[Row]]:
    """The checked header, and the data rows one at a time: (feature values in header order, label, line)."""
    header = next(reader, None)
    if header is None:
        raise PackError(f"{path}: empty; expected a header row naming the columns")
    names = [h.strip() for h in header]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PackError(f"{path}: the header names column(s) {dupes} more than once")
    if target not in names:
        raise PackError(f"{path}: no target column {target!r}; the columns are {names}")
    if len(names) < 2:
        raise PackError(f"{path}: only the target column {target!r}; no feature columns")
    t = names.index(target)

    def rows() -> Iterator[Row]:
        for row in reader:
            if not row:
                continue  # a blank line
            line = reader.line_num
            if len(row) != len(names):
                raise PackError(f"{path} line {line}: {len(row)} cells, the header has {len(names)}")
            values = [_number(cell, path, line, names[i]) for i, cell in enumerate(row) if i != t]
            label = row[t].strip()
            if not label:
                raise PackError(f"{path} line {line}: empty label in column {target!r}")
            yield values, label, line

    return names, rows()


def _number(cell: str, path: Path, line: int, column: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise PackError(f"{path} line {line}, column {column!r}: {cell!r} is not a number") from None
    if not math.isfinite(value) or abs(value) > _FLOAT32_MAX:
        raise PackError(f"{path} line {line}, column {column!r}: {cell!r} is not a finite float32 number")
    return value


def _integer_labels(labels: list[tuple[str, int]], path: Path, target: str) -> np.ndarray:
    return np.array([class_id(label, line, path, target) for label, line in labels], dtype=np.int64)


def is_integer(label: str) -> bool:
    """Whether a label is an integer as written (all of a file's labels are, or all are names)."""
    return _INTEGER.fullmatch(label) is not None


def is_class_id(label: str) -> bool:
    """Whether an integer label is a class id: from 0, within int64."""
    return 0 <= int(label) <= _INT64_MAX


def class_id(label: str, line: int, path: Path, target: str) -> int:
    """An integer label as the class id it is, refused when it is not one (negative, or past int64)."""
    if not is_class_id(label):
        raise PackError(f"{path} line {line}, column {target!r}: label {int(label)} is not a class id "
                        "(integers from 0)")
    return int(label)
