"""Which packer a source needs, when the user does not say: from the file's extension or the folder's shape."""

from __future__ import annotations

from pathlib import Path

from gensyn_py.train.packing.common import PackError, is_hidden

KINDS = ("images", "arrays", "csv", "text")
_SUFFIXES = {".npz": "arrays", ".npy": "arrays", ".csv": "csv", ".txt": "text"}


def infer_kind(source: Path) -> str:
    """images for a folder of subfolders, text for a folder of .txt files or a .txt, arrays for .npz/.npy,
    csv for .csv."""
    if source.is_dir():
        children = [p for p in source.iterdir() if not is_hidden(p, source)]
        if any(p.is_dir() for p in children):
            return "images"
        if any(p.suffix.lower() == ".txt" for p in children):
            return "text"
        raise PackError(f"{source}: cannot tell what it holds (no class subfolders for images, no .txt files "
                        "for text); name the kind")
    kind = _SUFFIXES.get(source.suffix.lower())
    if kind is None:
        raise PackError(f"{source}: cannot tell the kind from the extension {source.suffix!r} (known: "
                        f"{', '.join(sorted(_SUFFIXES))}); name the kind")
    return kind
