"""Hash primitives shared by the proof modules: keccak256 (EVM) and sha256 (state hashes)."""

from __future__ import annotations

import hashlib

# safe-pysha3: C keccak; a call costs about 1 us against eth-hash's 8-12 us. Hot loops (Merkle levels, tensor
# leaves) call `keccak_256(x).digest()` from here directly: the wrapper below would add a tenth to each call.
from sha3 import keccak_256

__all__ = ["bytes32", "keccak256", "keccak_256", "sha256", "uint256"]


def keccak256(data: bytes | memoryview) -> bytes:
    """The EVM's keccak256 of `data` (32 bytes)."""
    return keccak_256(data).digest()


def sha256(data: bytes) -> bytes:
    """SHA-256 of `data` (32 bytes)."""
    return hashlib.sha256(data).digest()


def uint256(value: int) -> bytes:
    """abi.encode(uint256 value)."""
    if not 0 <= value < 2**256:
        raise ValueError(f"uint256 out of range: {value}")
    return value.to_bytes(32, "big")


def bytes32(value: bytes) -> bytes:
    """abi.encode(bytes32 value), checking the length."""
    if len(value) != 32:
        raise ValueError(f"bytes32 must be 32 bytes, got {len(value)}")
    return value
