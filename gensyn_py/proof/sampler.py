"""Which segment validator i replays: must match the contract bit for bit."""

from __future__ import annotations

from gensyn_py.crypto.hashing import bytes32, keccak256, uint256


def segment_for(seed: bytes, validator_index: int, num_segments: int) -> int:
    """keccak256(abi.encode(bytes32 seed, uint256 i)) mod numSegments."""
    if num_segments <= 0:
        raise ValueError("num_segments must be positive")
    digest = keccak256(bytes32(seed) + uint256(validator_index))
    return int.from_bytes(digest, "big") % num_segments


def segments_for(seed: bytes, count: int, num_segments: int) -> list[int]:
    return [segment_for(seed, i, num_segments) for i in range(count)]
