"""The exact on-chain commitment format for a work unit, and its manifest.

Checkpoints sit at steps 0, k, 2k, ..., S; segment j runs from checkpoint j
to j+1. For each segment:

    transcriptHash_j   = keccak256("gensyn.transcript.v2" || author_j (20 bytes) || uint32be(steps)
                                   || float32le(loss_t) for each step || endStateHash)
    transcriptCommit_j = keccak256(abi.encode(bytes32 transcriptHash_j))
    leaf_j = keccak256(keccak256(abi.encode(uint256 j, bytes32 startStateHash,
                                            bytes32 endStateHash, bytes32 transcriptCommit_j)))

and checkpointRoot is the OpenZeppelin-compatible Merkle root of the leaves in order.

author_j binds the work to the solver who did it: the unit's solver, or, for a
prefix resumed from another solver's partial commitment, that solver (the
manifest's `inherited` spans, each backed by an on-chain partial). Only a
replay yields the losses, so a root or manifest copied from another solver is
useless: replayed under the copier's address, every transcript differs.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from gensyn_py.crypto.hashing import bytes32, keccak256, uint256
from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.errors import VerificationError

TRANSCRIPT_DOMAIN = b"gensyn.transcript.v2"
MANIFEST_VERSION = 1
NO_AUTHOR = b"\x00" * 20  # off-chain tools and tests with no solver address


def author_bytes(author: bytes | str | None) -> bytes:
    """A 20-byte address from bytes, a 0x hex string, or None (`NO_AUTHOR`)."""
    if author is None:
        return NO_AUTHOR
    raw = bytes.fromhex(author.removeprefix("0x")) if isinstance(author, str) else bytes(author)
    if len(raw) != 20:
        raise VerificationError(f"an author is a 20-byte address, got {len(raw)} bytes")
    return raw


def transcript_hash(losses: Sequence[float], end_state_hash: bytes, author: bytes | str | None = None) -> bytes:
    """The segment's loss transcript, bound to the address of the solver that trained it."""
    body = b"".join(struct.pack("<f", x) for x in losses)
    return keccak256(TRANSCRIPT_DOMAIN + author_bytes(author) + struct.pack(">I", len(losses)) + body
                     + bytes32(end_state_hash))


def transcript_commit(t_hash: bytes) -> bytes:
    return keccak256(bytes32(t_hash))


def segment_leaf(index: int, start_hash: bytes, end_hash: bytes, t_commit: bytes) -> bytes:
    inner = keccak256(uint256(index) + bytes32(start_hash) + bytes32(end_hash) + bytes32(t_commit))
    return keccak256(inner)


def _hex(b: bytes) -> str:
    return "0x" + b.hex()


def _unhex(s: str, what: str) -> bytes:
    if not isinstance(s, str) or not s.startswith("0x") or len(s) != 66:
        raise VerificationError(f"manifest {what} is not a 0x-prefixed bytes32: {s!r}")
    try:
        return bytes.fromhex(s[2:])
    except ValueError:
        raise VerificationError(f"manifest {what} is not hex: {s!r}") from None


@dataclass(frozen=True)
class Manifest:
    """What a solver publishes for a unit; its CID goes on-chain beside the root."""

    spec_hash: bytes
    job_id: int
    round: int
    shard: int
    steps: int
    interval: int
    checkpoint_cids: tuple[str, ...]
    state_hashes: tuple[bytes, ...]
    transcript_commits: tuple[bytes, ...]
    # (author, end): segments below `end` (and from the previous span's end) were trained by `author` and
    # resumed from its on-chain partial commitment of `end` segments; the rest are the committer's own.
    inherited: tuple[tuple[str, int], ...] = ()

    @property
    def num_segments(self) -> int:
        return len(self.transcript_commits)

    @property
    def final_state_hash(self) -> bytes:
        return self.state_hashes[-1]

    def check_shape(self) -> None:
        n = self.steps // self.interval if self.interval > 0 else -1
        if self.interval <= 0 or self.steps % self.interval or n <= 0:
            raise VerificationError(f"manifest interval {self.interval} does not divide steps {self.steps}")
        if len(self.transcript_commits) != n or len(self.state_hashes) != n + 1 \
                or len(self.checkpoint_cids) != n + 1:
            raise VerificationError(f"manifest lists the wrong number of checkpoints for {n} segments")
        last = 0
        for author, end in self.inherited:
            author_bytes(author)
            if not last < end <= n:
                raise VerificationError(f"manifest inherits segments up to {end} after {last} of {n}")
            last = end

    def author_of(self, segment: int, solver: bytes | str | None) -> bytes:
        """Who trained `segment`: the inherited span's author holding it, else `solver` (the committer)."""
        for author, end in self.inherited:
            if segment < end:
                return author_bytes(author)
        return author_bytes(solver)

    def prefix(self, segments: int) -> Manifest:
        """The partial manifest of the first `segments` segments (its root is a partial commitment's root)."""
        spans: list[tuple[str, int]] = []
        for author, end in self.inherited:
            if spans and spans[-1][1] >= segments:
                break
            spans.append((author, min(end, segments)))
        return Manifest(self.spec_hash, self.job_id, self.round, self.shard, segments * self.interval,
                        self.interval, self.checkpoint_cids[:segments + 1], self.state_hashes[:segments + 1],
                        self.transcript_commits[:segments], tuple(spans))

    def leaves(self) -> list[bytes]:
        self.check_shape()
        return [
            segment_leaf(j, self.state_hashes[j], self.state_hashes[j + 1], self.transcript_commits[j])
            for j in range(self.num_segments)
        ]

    def root(self) -> bytes:
        return merkle_root(self.leaves())

    def proof(self, segment: int) -> list[bytes]:
        return merkle_proof(self.leaves(), segment)

    def to_json(self) -> dict[str, object]:
        obj: dict[str, object] = {
            "version": MANIFEST_VERSION,
            "specHash": _hex(self.spec_hash),
            "jobId": self.job_id,
            "round": self.round,
            "shard": self.shard,
            "steps": self.steps,
            "interval": self.interval,
            "checkpointCids": list(self.checkpoint_cids),
            "stateHashes": [_hex(h) for h in self.state_hashes],
            "transcriptCommits": [_hex(h) for h in self.transcript_commits],
            "finalStateHash": _hex(self.final_state_hash),
            "checkpointRoot": _hex(self.root()),
        }
        if self.inherited:  # absent when empty: manifests of units trained from the start are unchanged
            obj["inherited"] = [[a, e] for a, e in self.inherited]
        return obj

    def to_bytes(self) -> bytes:
        """Canonical JSON: sorted keys, compact."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        try:
            obj = json.loads(data)
            if obj.get("version") != MANIFEST_VERSION:
                raise VerificationError(f"unsupported manifest version {obj.get('version')!r}")
            m = cls(
                spec_hash=_unhex(obj["specHash"], "specHash"),
                job_id=int(obj["jobId"]),
                round=int(obj["round"]),
                shard=int(obj["shard"]),
                steps=int(obj["steps"]),
                interval=int(obj["interval"]),
                checkpoint_cids=tuple(str(c) for c in obj["checkpointCids"]),
                state_hashes=tuple(_unhex(h, "stateHashes") for h in obj["stateHashes"]),
                transcript_commits=tuple(_unhex(h, "transcriptCommits") for h in obj["transcriptCommits"]),
                inherited=tuple((str(a), int(e)) for a, e in obj.get("inherited", [])),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise VerificationError(f"malformed manifest: {e!r}") from None
        m.check_shape()
        if _unhex(obj["finalStateHash"], "finalStateHash") != m.final_state_hash:
            raise VerificationError("manifest finalStateHash differs from its last state hash")
        if _unhex(obj["checkpointRoot"], "checkpointRoot") != m.root():
            raise VerificationError("manifest checkpointRoot differs from the root of its leaves")
        return m


@dataclass(frozen=True)
class UnitCommitment:
    """What goes on-chain for a unit: root, final state hash, manifest CID."""

    checkpoint_root: bytes
    final_state_hash: bytes
    manifest_cid: str
    manifest: Manifest
