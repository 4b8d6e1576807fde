"""The explorer's SQLite index: raw decoded events plus what pages look up by.

Everything here is derived from the chain (and the content store), so the file can be
deleted and rebuilt at any time. Rows carry their block number: dropping a reorged
range is one `DELETE ... WHERE block > ?` per table.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# 2: dispute ids indexed by their resolver (`dispute` the committee's, `game` the segment game's, `step` a step
# game's; refs.py), and refs found by event.
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Blocks the index has seen: those with events, and each read's last block (a reorg anchor).
CREATE TABLE IF NOT EXISTS blocks (
    number INTEGER PRIMARY KEY, hash TEXT NOT NULL, timestamp INTEGER NOT NULL, has_events INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    block INTEGER NOT NULL, log_index INTEGER NOT NULL, tx TEXT NOT NULL, contract TEXT NOT NULL,
    name TEXT NOT NULL, args TEXT NOT NULL, PRIMARY KEY (block, log_index));
CREATE INDEX IF NOT EXISTS events_by_name ON events (name, block);
-- What an event is about: kind 'job' | 'unit' | 'dispute' (the committee's) | 'game' (the segment game's) |
-- 'step' (a step game) | 'node', ref a decimal id or a lowercase address.
CREATE TABLE IF NOT EXISTS refs (
    kind TEXT NOT NULL, ref TEXT NOT NULL, block INTEGER NOT NULL, log_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS refs_by_ref ON refs (kind, ref, block, log_index);
CREATE INDEX IF NOT EXISTS refs_by_event ON refs (block, log_index);
CREATE TABLE IF NOT EXISTS units (
    unit_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, round INTEGER NOT NULL, shard INTEGER NOT NULL,
    aggregation INTEGER NOT NULL, block INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS units_by_job ON units (job_id, unit_id);
CREATE TABLE IF NOT EXISTS txs (
    hash TEXT PRIMARY KEY, sender TEXT NOT NULL, gas_used INTEGER NOT NULL, block INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS txs_by_block ON txs (block);
-- Content fetched from the store, keyed by what names it (a spec CID, a manifest CID); `error` when it failed.
CREATE TABLE IF NOT EXISTS content (
    key TEXT PRIMARY KEY, body TEXT, error TEXT, block INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS content_by_block ON content (block);
"""

# Tables whose rows belong to a block and go when that block is reorged away.
BLOCK_TABLES = ("blocks", "events", "refs", "units", "txs", "content")
BLOCK_COLUMN = {"blocks": "number"}


def connect(path: Path | str) -> sqlite3.Connection:
    """Open (and create) the index; WAL so the web server reads while the indexer writes."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def get_meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row["value"])


def set_meta(db: sqlite3.Connection, key: str, value: str | int) -> None:
    db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               (key, str(value)))


def drop_above(db: sqlite3.Connection, block: int) -> None:
    """Forget every row of blocks after `block` (the caller holds a transaction)."""
    for table in BLOCK_TABLES:
        db.execute(f"DELETE FROM {table} WHERE {BLOCK_COLUMN.get(table, 'block')} > ?", (block,))


def reset(db: sqlite3.Connection) -> None:
    """Forget everything: the chain the index described is gone."""
    db.execute("BEGIN")
    drop_above(db, -1)
    db.execute("DELETE FROM meta")
    db.execute("COMMIT")
