"""What the explorer fetches beyond events: job specs, and the loss at each committed checkpoint.

Events only name content (a spec CID, a manifest CID). The worker fetches it, checks it the
way nodes do (the spec against the on-chain spec hash, checkpoints against the manifest and
the manifest against the on-chain root), and stores the result, or the reason it could not,
under the key of what named it. A failure is tried again after `retry_after` seconds: a
store that was down comes back, withheld content keeps saying why on the page.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.proof.content import JobContent
from gensyn_py.storage.base import ContentStore

log = logging.getLogger(__name__)

LOSS_POINTS = 20  # checkpoints replayed per unit at most (evenly spaced)
# Building a Trainer seeds torch's global RNG: two replays at once in one process would draw each other's
# numbers and fail the initial-state check. One worker at a time, whoever calls it.
_REPLAY_LOCK = threading.Lock()


def spec_key(job_id: int) -> str:
    return f"spec:{job_id}"


def losses_key(unit_id: int, manifest_cid: str) -> str:
    return f"losses:{unit_id}:{manifest_cid}"


@dataclass
class ContentWorker:
    protocol: ProtocolContracts
    store: ContentStore
    db: sqlite3.Connection
    timeout: float = 10.0
    retry_after: float = 30.0
    device: str | None = "cpu"
    on_change: Callable[[], None] = lambda: None
    _tried: dict[str, float] = field(default_factory=dict)

    def pending(self) -> list[tuple[str, int, int, str]]:
        """(key, block, id, cid) of what is not fetched yet (or failed long enough ago), oldest first."""
        rows = self.db.execute(
            "SELECT name, block, args FROM events WHERE name IN ('JobSubmitted', 'UnitCommitted') ORDER BY block"
        ).fetchall()
        have = {str(r["key"]): r["error"] is None for r in self.db.execute("SELECT key, error FROM content")}
        now = time.monotonic()
        out = []
        for row in rows:
            args = json.loads(row["args"])
            if row["name"] == "JobSubmitted":
                key, ident, cid = spec_key(int(args["jobId"])), int(args["jobId"]), str(args["specCid"])
            else:
                if self._is_aggregation(int(args["unitId"])):
                    continue
                key = losses_key(int(args["unitId"]), str(args["manifestCid"]))
                ident, cid = int(args["unitId"]), str(args["manifestCid"])
            ok = have.get(key)
            if ok or (ok is False and now - self._tried.get(key, 0.0) < self.retry_after):
                continue
            out.append((key, int(row["block"]), ident, cid))
        return out

    def _is_aggregation(self, unit_id: int) -> bool:
        row = self.db.execute("SELECT aggregation FROM units WHERE unit_id = ?", (unit_id,)).fetchone()
        return bool(row and row["aggregation"])

    def run_once(self) -> int:
        """Fetch everything pending; how many entries were written."""
        with _REPLAY_LOCK:
            return self._run_once()

    def _run_once(self) -> int:
        written = 0
        content = JobContent(ChainView(self.protocol), self.store, self.timeout)
        for key, block, ident, _cid in self.pending():
            self._tried[key] = time.monotonic()
            try:
                body = self._spec(content, ident) if key.startswith("spec:") else self._losses(content, ident)
                error = None
            except Exception as exc:  # whatever a stranger's content does to the checks is this entry's error
                body, error = None, str(exc) or type(exc).__name__
                log.info("explorer: %s: %s", key, error)
            self.db.execute("INSERT OR REPLACE INTO content VALUES (?, ?, ?, ?)", (key, body, error, block))
            written += 1
            self.on_change()
        return written

    def _spec(self, content: JobContent, job_id: int) -> str:
        spec = content.spec(job_id)  # fetched, hash-checked against the chain, parsed
        return json.dumps(spec.model_dump(mode="json"), sort_keys=True)

    def _losses(self, content: JobContent, unit_id: int) -> str:
        from gensyn_py.proof.checkpoint_losses import checkpoint_losses

        unit = content.view.unit(unit_id)
        points = checkpoint_losses(content, unit, self.device, LOSS_POINTS)
        return json.dumps([[step, loss] for step, loss in points])
