"""A solver's running record of a unit, and its crash-safe file form.

The file is canonical JSON (sorted keys, compact)::

    {"version": 1,
     "cids": ["bafk...", ...],                 checkpoint CIDs, step 0 first
     "stateHashes": ["0x<64 hex>", ...],       one per CID
     "losses": "<base64>"}                     little-endian IEEE-754 float64, one per step

Losses are packed rather than written as decimal text so a reloaded record holds
the very same floats, and the transcript hashes built from it (which pack each
loss as float32) come out bit for bit the same. Writes go to a temporary file in
the same folder, are fsynced, then renamed over the old record: a crash leaves
either the old record or the new one, never a torn file.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from gensyn_py.errors import StorageError, TrainingError
from gensyn_py.storage.atomic import atomic_write

RECORD_VERSION = 1


@dataclass
class UnitRecord:
    """What a solver keeps while training: checkpoint CIDs and hashes, per-step losses.

    `losses[i]` is the loss of step i + 1; `cids[j]` and `hashes[j]` are the checkpoint
    at step j * interval. Save it after every checkpoint to resume a crashed unit
    without retraining (`commit_segments(record_path=...)`, `resume_trainer`).
    """

    cids: list[str] = field(default_factory=list)
    hashes: list[bytes] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)

    def to_bytes(self) -> bytes:
        if len(self.hashes) != len(self.cids):
            raise TrainingError(f"record lists {len(self.cids)} checkpoint CIDs but {len(self.hashes)} hashes")
        obj = {
            "version": RECORD_VERSION,
            "cids": list(self.cids),
            "stateHashes": ["0x" + h.hex() for h in self.hashes],
            "losses": base64.b64encode(struct.pack(f"<{len(self.losses)}d", *self.losses)).decode(),
        }
        return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> UnitRecord:
        """Parse a saved record; TrainingError if it is not one."""
        from gensyn_py.storage.cid import is_valid_cid

        try:
            obj = json.loads(data)
            if obj.get("version") != RECORD_VERSION:
                raise TrainingError(f"unsupported unit record version {obj.get('version')!r}")
            cids = [str(c) for c in obj["cids"]]
            hashes = [bytes.fromhex(h.removeprefix("0x")) for h in obj["stateHashes"]]
            packed = base64.b64decode(obj["losses"], validate=True)
        except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as e:
            raise TrainingError(f"malformed unit record: {e!r}") from None
        if bad := [c for c in cids if not is_valid_cid(c)]:
            raise TrainingError(f"unit record lists invalid CIDs: {bad[:3]}")
        if len(hashes) != len(cids) or any(len(h) != 32 for h in hashes):
            raise TrainingError("unit record needs one 32-byte state hash per checkpoint CID")
        if len(packed) % 8:
            raise TrainingError(f"unit record losses are {len(packed)} bytes, not a whole number of float64")
        return cls(cids, hashes, list(struct.unpack(f"<{len(packed) // 8}d", packed)))

    def save(self, path: Path | str) -> None:
        """Write the record to `path` atomically (temporary file, fsync, rename, fsync of the folder)."""
        path = Path(path)
        try:
            atomic_write(path, self.to_bytes(), durable_rename=True)
        except OSError as exc:
            raise StorageError(f"cannot write unit record {path}: {exc}") from exc

    @classmethod
    def load(cls, path: Path | str) -> UnitRecord:
        """Read a record written by `save`; OSError if there is none, TrainingError if it is malformed."""
        return cls.from_bytes(Path(path).read_bytes())

