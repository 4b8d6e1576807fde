"""Which segment validator slot i replays: must match the contract bit for bit (`Segments.segmentIndex`).

Sampling is without replacement and stratified: the n segments, rotated by a random offset, are cut into
`count` strata (bounds floor(i * n / count)); slot i replays a random segment of stratum i. `count`
validators thus check min(count, n) distinct segments, and any one segment is checked with probability
exactly min(count, n) / n, which is what the pool's collateral rule (`min_collateral`) rests on.
"""

from __future__ import annotations

from gensyn_py.crypto.hashing import bytes32, keccak256, uint256


def _word(data: bytes) -> int:
    return int.from_bytes(keccak256(data), "big")


def segment_for(seed: bytes, validator_index: int, num_segments: int, count: int) -> int:
    """The segment slot `validator_index` of `count` drawn validators replays."""
    if num_segments <= 0 or count <= 0 or validator_index < 0:
        raise ValueError("num_segments and count must be positive, the index non-negative")
    offset = _word(bytes32(seed)) % num_segments
    if count >= num_segments:
        return (offset + validator_index) % num_segments
    lo = validator_index * num_segments // count
    width = (validator_index + 1) * num_segments // count - lo
    return (offset + lo + _word(bytes32(seed) + uint256(validator_index)) % width) % num_segments


def segments_for(seed: bytes, count: int, num_segments: int) -> list[int]:
    """The segments of all `count` slots, slot by slot."""
    return [segment_for(seed, i, num_segments, count) for i in range(count)]


def min_collateral(max_price: int, num_segments: int, validators: int) -> int:
    """Least collateral per unit under which faking one segment has no positive expected value.

    One faked segment is caught with probability P = m / n (m = min(validators, n)); faking earns the price
    with probability 1 - P and loses the collateral with probability P, so it does not pay when
    collateral * m >= price * (n - m). Mirrors `Units.minCollateral` (rounded up)."""
    m = min(validators, num_segments)
    if m <= 0:
        raise ValueError("no validator checks anything: no collateral is enough")
    return (max_price * (num_segments - m) + m - 1) // m
