"""Is a committed unit's data there? The checks behind an "unavailable" verdict, and a solver's answer.

A validator replays only its segment's start checkpoint, so nobody would otherwise fetch the final checkpoint
(the model the requester pays for). Before sealing its verdict a validator fetches the manifest, its segment's
start checkpoint and the final checkpoint (`missing_data`); if one is missing it seals "unavailable" and the
solver must answer on-chain (contracts/libraries/DataAvailability.sol). The solver answers with the leaves
of that segment and of the last one, after publishing the data again (`republish`).

Only the solver's fault counts as missing (content absent, or a manifest that does not parse); the node's
own trouble (an unreachable store) raises `StorageError` to be retried, never reported.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gensyn_py.errors import ContentNotFound, VerificationError
from gensyn_py.proof.commitment import Manifest
from gensyn_py.proof.replay import fetch_manifest
from gensyn_py.types import SegmentLeaf

if TYPE_CHECKING:
    from gensyn_py.storage.base import ContentStore

PROBE_TIMEOUT = 5.0  # seconds per fetch: a reachable store serves a published checkpoint well within it
PROBE_ATTEMPTS = 2


def missing_data(store: ContentStore, manifest_cid: str, segment: int,
                 timeout: float = PROBE_TIMEOUT, attempts: int = PROBE_ATTEMPTS) -> str | None:
    """Why the manifest `manifest_cid`, `segment`'s start checkpoint or the final checkpoint it lists cannot be
    fetched (after `attempts` tries), or None when all three are there."""
    problem: str | None = None
    for _ in range(max(1, attempts)):
        problem = _probe(store, manifest_cid, segment, timeout)
        if problem is None:
            return None
    return problem


def _probe(store: ContentStore, manifest_cid: str, segment: int, timeout: float) -> str | None:
    try:
        m = fetch_manifest(store, manifest_cid, timeout)
    except VerificationError as e:
        return f"manifest: {e}"
    cids = m.checkpoint_cids
    if not 0 <= segment < len(cids) - 1:
        return None  # a misshapen manifest is fraud, for replay to reject with a proof
    for what, cid in (("start checkpoint", cids[segment]), ("final checkpoint", cids[-1])):
        try:
            store.get(cid, timeout)
        except ContentNotFound as e:
            return f"{what} {cid}: {e}"
    return None


def leaf_of(m: Manifest, j: int) -> SegmentLeaf:
    """Segment j's leaf of the manifest's commitment, with its Merkle proof."""
    return SegmentLeaf(j, m.state_hashes[j], m.state_hashes[j + 1], m.transcript_commits[j], tuple(m.proof(j)))


def republish(store: ContentStore, manifest_cid: str, segment: int,
              timeout: float | None = None) -> tuple[SegmentLeaf, SegmentLeaf, str]:
    """Publish again the manifest, `segment`'s start checkpoint and the final checkpoint from our store; return
    the answer: the segment's leaf, the last segment's leaf and the CIDs (JSON). Raises `ContentNotFound`
    (or `VerificationError`) when we do not hold the data ourselves: then there is nothing honest to answer."""
    data = store.get(manifest_cid, timeout)
    m = Manifest.from_bytes(data)
    store.put(data)
    cids = m.checkpoint_cids
    for cid in dict.fromkeys((cids[segment], cids[-1])):
        store.put(store.get(cid, timeout))
    where = json.dumps({"manifest": manifest_cid, "start": cids[segment], "final": cids[-1]}, sort_keys=True)
    return leaf_of(m, segment), leaf_of(m, m.num_segments - 1), where
