"""A daemon's local state in one SQLite file: event cursor, actions done, role data.

Three things survive a restart:

- the event cursor (`state.cursor`, which `EventReader` uses) and the chain
  position of the last event whose handler finished, so a replayed batch
  skips what was already handled;
- the actions table, keyed by an idempotency key such as `("commit", 7)`:
  an action is marked `pending` before it runs and `done` (with its tx hash)
  after, so a restarted daemon never repeats an on-chain action it finished,
  and knows which ones were cut off half-way;
- a small JSON key-value store for role data.

The database runs in WAL mode with `synchronous=FULL`, so every committed
row survives a crash of the process (or the machine). One process writes:
opening for writing takes an exclusive `flock` on `<path>.lock`, released by
the kernel even on SIGKILL. Other processes may open it `readonly=True` to
watch progress.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gensyn_py.errors import GensynError

PENDING = "pending"
DONE = "done"

ActionKey = str | tuple[str | int, ...]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS actions (
    key TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    tx_hash TEXT,
    detail TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
"""


class StateError(GensynError):
    """The daemon's state file cannot be opened or is held by another process."""


def action_key(key: ActionKey) -> str:
    """The stored form of an idempotency key: `("commit", 7)` -> `"commit:7"`."""
    if isinstance(key, str):
        return key
    if not key:
        raise ValueError("an action key needs at least one part")
    return ":".join(str(part) for part in key)


@dataclass(frozen=True)
class Action:
    """One row of the actions table."""

    key: str
    status: str
    tx_hash: str | None
    detail: str | None
    attempts: int
    created: float
    updated: float

    @property
    def done(self) -> bool:
        return self.status == DONE


class StateCursor:
    """The `Cursor` protocol of `gensyn_py.chain.events`, stored in a `DaemonState`."""

    def __init__(self, state: DaemonState) -> None:
        self._state = state

    def load(self) -> int | None:
        raw = self._state._meta_get("cursor.next_block")
        return None if raw is None else int(raw)

    def save(self, next_block: int) -> None:
        self._state._meta_set("cursor.next_block", str(int(next_block)))


class DaemonState:
    """SQLite-backed local state of one daemon. Thread-safe; one writing process."""

    def __init__(self, path: Path | str, *, readonly: bool = False, lock: bool = True) -> None:
        """`lock=False` opens for writing beside the running daemon (an operator's `quarantine clear`)."""
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._lock_fd: int | None = None
        try:
            if readonly:
                uri = f"file:{self.path}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if lock:
                    self._take_lock()
                self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
            self._db.execute("PRAGMA busy_timeout=5000")
        except sqlite3.Error as exc:
            self._release_lock()
            raise StateError(f"cannot open daemon state {self.path}: {exc}") from exc
        self.cursor = StateCursor(self)

    # -- lifecycle ---------------------------------------------------------------------------

    def _take_lock(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise StateError(f"daemon state {self.path} is in use by another process") from exc
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._release_lock()

    def __enter__(self) -> DaemonState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken immediately so it never fails half-way on a busy lock."""
        if self.readonly:
            raise StateError(f"daemon state {self.path} was opened read-only")
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StateError(f"writing daemon state {self.path}: {exc}") from exc

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return list(self._db.execute(sql, params).fetchall())
            except sqlite3.Error as exc:
                raise StateError(f"reading daemon state {self.path}: {exc}") from exc

    # -- meta: cursor and last handled position ----------------------------------------------

    def _meta_get(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def _meta_set(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def next_block(self) -> int | None:
        """The saved event cursor: the next block to read, or None before the first save."""
        return self.cursor.load()

    @property
    def last_position(self) -> tuple[int, int] | None:
        """(block, log index) of the last event whose handler finished."""
        raw = self._meta_get("cursor.last_position")
        if raw is None:
            return None
        block, index = json.loads(raw)
        return (int(block), int(index))

    def set_last_position(self, position: tuple[int, int]) -> None:
        self._meta_set("cursor.last_position", json.dumps(list(position)))

    # -- actions -----------------------------------------------------------------------------

    def action(self, key: ActionKey) -> Action | None:
        rows = self._query(
            "SELECT key, status, tx_hash, detail, attempts, created, updated FROM actions WHERE key = ?",
            (action_key(key),),
        )
        return Action(*rows[0]) if rows else None

    def is_done(self, key: ActionKey) -> bool:
        found = self.action(key)
        return found is not None and found.done

    def mark_pending(self, key: ActionKey, detail: str | None = None) -> Action:
        """Record that an attempt at `key` starts now (its outcome unknown until `mark_done`)."""
        now = time.time()
        with self._tx() as db:
            db.execute(
                "INSERT INTO actions (key, status, detail, attempts, created, updated) "
                "VALUES (?, ?, ?, 1, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET status = excluded.status, detail = excluded.detail, "
                "attempts = attempts + 1, updated = excluded.updated",
                (action_key(key), PENDING, detail, now, now),
            )
        found = self.action(key)
        assert found is not None
        return found

    def mark_done(self, key: ActionKey, tx_hash: str | None = None, detail: str | None = None) -> None:
        now = time.time()
        with self._tx() as db:
            db.execute(
                "INSERT INTO actions (key, status, tx_hash, detail, attempts, created, updated) "
                "VALUES (?, ?, ?, ?, 0, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET status = excluded.status, tx_hash = excluded.tx_hash, "
                "detail = COALESCE(excluded.detail, detail), updated = excluded.updated",
                (action_key(key), DONE, tx_hash, detail, now, now),
            )

    def actions(self, status: str | None = None, prefix: str | None = None) -> list[Action]:
        """Recorded actions, oldest first, optionally filtered by status and key prefix."""
        sql = "SELECT key, status, tx_hash, detail, attempts, created, updated FROM actions WHERE 1 = 1"
        params: list[Any] = []
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if prefix is not None:
            sql += " AND key LIKE ? ESCAPE '\\'"
            params.append(prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        return [Action(*row) for row in self._query(sql + " ORDER BY created, key", tuple(params))]

    def count_actions(self, status: str = DONE) -> int:
        return int(self._query("SELECT COUNT(*) FROM actions WHERE status = ?", (status,))[0][0])

    # -- key-value store for role data -------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value FROM kv WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def put(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable value."""
        encoded = json.dumps(value)
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, encoded))

    def delete(self, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM kv WHERE key = ?", (key,))

    def keys(self, prefix: str = "") -> list[str]:
        rows = self._query("SELECT key FROM kv ORDER BY key")
        return [str(k) for (k,) in rows if str(k).startswith(prefix)]
