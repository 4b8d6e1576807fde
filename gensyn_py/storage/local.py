"""The embedded default store: one file per CID under a root directory."""

from __future__ import annotations

from pathlib import Path

from gensyn_py.errors import ContentNotFound, StorageError
from gensyn_py.storage.atomic import atomic_write
from gensyn_py.storage.base import ContentStore
from gensyn_py.storage.cid import is_valid_cid


class LocalStore(ContentStore):
    """Content-addressed files on disk: ``<root>/<cid[-2:]>/<cid>``, written atomically.

    Ids are the same CIDs an IPFS node would assign (see `cid.py`), so content can move
    between a LocalStore and a KuboStore unchanged. Reads never wait: a missing id raises
    ContentNotFound at once; a file whose bytes no longer match its id raises
    ContentMismatch from `get()`.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create content store at {self.root}: {exc}") from exc

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    def path_for(self, cid: str) -> Path:
        if not is_valid_cid(cid):
            raise ContentNotFound(f"not a valid CID: {cid!r}")
        return self.root / cid[-2:] / cid

    def _put(self, data: bytes, cid: str) -> str:
        path = self.path_for(cid)
        try:
            if path.read_bytes() == data:
                return cid  # already stored intact; a corrupted copy gets rewritten below
        except OSError:
            pass
        try:
            atomic_write(path, data)
        except OSError as exc:
            raise StorageError(f"cannot write {cid} under {self.root}: {exc}") from exc
        return cid

    def _get(self, cid: str, timeout: float) -> bytes:
        path = self.path_for(cid)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ContentNotFound(f"{cid} is not in {self.root}") from None
        except OSError as exc:
            raise StorageError(f"cannot read {cid} from {self.root}: {exc}") from exc

    def has(self, cid: str) -> bool:
        return is_valid_cid(cid) and self.path_for(cid).is_file()
