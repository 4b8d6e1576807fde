"""An ImageFolder (`root/<class name>/<image files>`) as a classification dataset.

x is float32 (N, C, H, W) in [0, 1], y the int64 index of each image's class folder in sorted order of the
folder names (the torchvision ImageFolder convention), and the names go into metadata `classes` as a JSON
list. Every image is decoded the same way on every machine: EXIF orientation applied, 16-bit greyscale
reduced to 8 bits, converted to L, RGB or RGBA, then resized to exactly H x W (no cropping, the aspect ratio
is not kept) with one fixed filter, so the same files always give the same bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.train.packing.common import Packed, PackError, ProgressFn, check_bytes, files_under, finish, is_hidden

if TYPE_CHECKING:
    from PIL import Image

EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png", ".webp")
MODES = {1: "L", 3: "RGB", 4: "RGBA"}
_SIXTEEN_BIT = ("I", "I;16", "I;16L", "I;16B", "I;16N")


def parse_size(text: str) -> tuple[int, int]:
    """'HxW' (e.g. '32x32') as (height, width)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if m is None or int(m[1]) == 0 or int(m[2]) == 0:
        raise PackError(f"size {text!r}: expected HxW, two positive integers such as 32x32")
    return int(m[1]), int(m[2])


def pack_images(root: Path, size: tuple[int, int], channels: int = 3, progress: ProgressFn | None = None) -> Packed:
    """Decode every image under `root`'s class folders into one dataset of `size` (H, W) with `channels`."""
    if channels not in MODES:
        raise PackError(f"channels {channels}: expected 1 (greyscale), 3 (RGB) or 4 (RGBA)")
    height, width = size
    classes, files = scan(root)
    per_image = channels * height * width * 4 + 8
    check_bytes(len(files) * per_image, f"{root}: {len(files)} images of {channels}x{height}x{width}")
    x = np.empty((len(files), channels, height, width), dtype=np.float32)
    y = np.empty(len(files), dtype=np.int64)
    for i, (path, label) in enumerate(files):
        x[i] = decode(path, MODES[channels], (height, width))
        y[i] = label
        if progress is not None:
            progress(i + 1, len(files))
    return finish(x, y, images_metadata(classes), str(root))


def images_metadata(classes: list[str]) -> dict[str, str]:
    return {"kind": "images", "classes": json.dumps(classes, ensure_ascii=False)}


def scan(root: Path) -> tuple[list[str], list[tuple[Path, int]]]:
    """The sorted class names and every (image, class index), refusing anything that is not an image."""
    if not root.is_dir():
        raise PackError(f"{root}: an image dataset is a folder of class folders (root/<class>/<image>)")
    entries = sorted((p for p in root.iterdir() if not is_hidden(p, root)), key=lambda p: p.name)
    for p in entries:
        if not p.is_dir():
            raise PackError(f"{p}: not inside a class folder; images go in root/<class name>/")
    if not entries:
        raise PackError(f"{root}: no class folders; expected root/<class name>/<image files>")
    files: list[tuple[Path, int]] = []
    for label, folder in enumerate(entries):
        images = files_under(folder)
        for p in images:
            if p.suffix.lower() not in EXTENSIONS:
                raise PackError(f"{p}: not an image file (expected {', '.join(EXTENSIONS)})")
        if not images:
            raise PackError(f"{folder}: class folder holds no images")
        files.extend((p, label) for p in images)
    return [p.name for p in entries], files


def decode(path: Path, mode: str, size: tuple[int, int]) -> np.ndarray:
    """One image as float32 (C, H, W) in [0, 1]."""
    from PIL import Image, ImageOps

    height, width = size
    try:
        with Image.open(path) as opened:
            opened.load()
            img = _eight_bit(ImageOps.exif_transpose(opened))
            if img.mode == "P":  # palette transparency survives only through RGBA
                img = img.convert("RGBA")
            img = img.convert(mode).resize((width, height), Image.Resampling.BILINEAR)
    except Exception as e:  # decoders raise OSError, ValueError, SyntaxError and more on a corrupt file
        raise PackError(f"{path}: not a readable image ({type(e).__name__}: {e})") from None
    arr = np.asarray(img, dtype=np.float32)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return arr.transpose(2, 0, 1) / np.float32(255)


def _eight_bit(img: Image.Image) -> Image.Image:
    """16-bit greyscale as 8-bit L by its high byte (PIL's own conversion would clip it to white)."""
    from PIL import Image

    if img.mode not in _SIXTEEN_BIT:
        return img
    high = np.clip(np.asarray(img, dtype=np.int64), 0, 65535) >> 8
    return Image.fromarray(high.astype(np.uint8))
