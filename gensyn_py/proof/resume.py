"""Resuming a unit from another solver's partial commitment (issue 11, "resume, not restart").

A solver may publish its first k segments on-chain (`TaskPool.commitPartial`: the Merkle root of
their leaves and a partial manifest, the `Manifest.prefix` of its work). If it then misses its
deadline, the next solver fetches that manifest and the checkpoint at step k * interval, checks
them against the on-chain root, and trains only the rest. Its final manifest lists the prefix as
`inherited`: (author, end) spans whose transcripts stay bound to their author. Validators accept
such a span only if an on-chain partial of exactly `end` segments by `author` has the root of the
manifest's first `end` leaves (`unbacked_span`): nobody can name another solver as the author of
segments that solver never published, so a copied root still replays to the copier's transcripts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.crypto.merkle import merkle_root
from gensyn_py.errors import VerificationError
from gensyn_py.proof.commitment import Manifest, author_bytes
from gensyn_py.proof.record import UnitRecord
from gensyn_py.proof.state import decode_state, state_hash_of_bytes
from gensyn_py.types import PartialRef

if TYPE_CHECKING:
    from gensyn_py.storage.base import ContentStore
    from gensyn_py.train.spec import JobSpec

__all__ = ["PartialRef", "Resume", "load_partial", "resume_record", "unbacked_span"]


@dataclass(frozen=True)
class Resume:
    """A checked partial to resume from: its manifest (a prefix of `segments` segments) and its author."""

    manifest: Manifest
    solver: str

    @property
    def segments(self) -> int:
        return self.manifest.num_segments

    def spans(self) -> tuple[tuple[str, int], ...]:
        """The inherited spans of a manifest resumed from here: the partial's own, then its author's."""
        return (*self.manifest.inherited, (self.solver, self.segments))


def unbacked_span(m: Manifest, partials: tuple[PartialRef, ...]) -> str | None:
    """Why `m`'s inherited spans are not all backed by on-chain partials, or None if they are."""
    if not m.inherited:
        return None
    leaves = m.leaves()
    for author, end in m.inherited:
        who = author_bytes(author)
        root = merkle_root(leaves[:end])
        if not any(author_bytes(p.solver) == who and p.segments == end and p.root == root for p in partials):
            return f"manifest says {author} trained segments below {end}, but no partial of theirs commits to them"
    return None


def load_partial(spec: JobSpec, store: ContentStore, job_id: int, round_: int, shard: int, partial: PartialRef,
                 partials: tuple[PartialRef, ...], timeout: float | None = None) -> Resume:
    """Fetch and check the partial's manifest; VerificationError (or a storage error) if it is unusable."""
    m = Manifest.from_bytes(store.get(partial.manifest_cid, timeout))
    if m.spec_hash != spec.spec_hash() or (m.job_id, m.round, m.shard) != (job_id, round_, shard):
        raise VerificationError("partial manifest names another job, round or shard")
    if m.interval != spec.checkpoint_interval or m.num_segments != partial.segments:
        raise VerificationError(f"partial manifest holds {m.num_segments} segments every {m.interval} steps")
    if partial.segments >= spec.num_segments:
        raise VerificationError(f"a partial of {partial.segments} segments is not a prefix of the unit")
    if m.root() != partial.root:
        raise VerificationError("partial manifest does not hash to the on-chain partial root")
    if (why := unbacked_span(m, partials)) is not None:
        raise VerificationError(why)
    return Resume(m, partial.solver)


def resume_record(resume: Resume, store: ContentStore, timeout: float | None = None) -> tuple[UnitRecord, dict]:
    """The record and the state to resume training at the partial's last checkpoint.

    The record lists the prefix's checkpoints; the losses of its steps are unknown (NaN: their
    transcript commits are the partial's, passed on by `commit_segments(resume=...)`).
    """
    m = resume.manifest
    data = store.get(m.checkpoint_cids[-1], timeout)
    if state_hash_of_bytes(data) != m.state_hashes[-1]:
        raise VerificationError("the partial's last checkpoint does not hash to its state hash")
    state = decode_state(data)
    return UnitRecord(list(m.checkpoint_cids), list(m.state_hashes), [math.nan] * m.steps), state
