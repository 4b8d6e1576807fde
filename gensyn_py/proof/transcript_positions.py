"""The segment game's positions: a state root bound to the losses so far (`contracts/libraries/Transcripts.sol`).

Position i of a segment is ``keccak256(stateRoot_i ++ L_i)``, with ``L_0 = 0`` and ``L_{i+1} = keccak256(L_i ++
loss_i)`` (the loss's four little-endian float32 bytes, as the transcript hash has them). A side that computed a
wrong loss, or committed one its states do not give, leaves the agreed positions at the step that computed it,
exactly as with a wrong state, and the step game then judges the step's `loss` output like any other value.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.proof.lazy_roots import LazyRoots

NO_LOSSES = bytes(32)  # L_0


def loss_bytes(loss: float) -> bytes:
    """A step's loss as the transcript and the contract take it: float32, little-endian."""
    return struct.pack("<f", loss)


def next_losses(before: bytes, loss: bytes) -> bytes:
    """``L_{i+1}`` from ``L_i`` and loss i's bytes."""
    return keccak256(before + loss)


def position(state_root: bytes, losses_before: bytes) -> bytes:
    return keccak256(state_root + losses_before)


class Positions(LazyRoots):
    """A segment side's positions after 0, 1, ..., n steps, from its state roots (hashed on demand) and its losses."""

    def __init__(self, roots: Sequence[bytes], losses: Sequence[bytes]) -> None:
        if len(roots) != len(losses) + 1:
            raise ValueError(f"{len(roots)} states need {len(roots) - 1} losses, got {len(losses)}")
        super().__init__(len(roots))
        self._roots = roots
        self.running = [NO_LOSSES]
        for loss in losses:
            self.running.append(next_losses(self.running[-1], loss))

    def _compute(self, j: int) -> bytes:
        return position(self._roots[j], self.running[j])
