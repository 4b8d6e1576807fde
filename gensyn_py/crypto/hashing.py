"""Hash primitives shared by the proof modules: keccak256 (EVM) and sha256 (state hashes)."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Sequence
from functools import cache
from typing import Any

from eth_hash.auto import keccak


def keccak256(data: bytes) -> bytes:
    """The EVM's keccak256 of `data` (32 bytes)."""
    return bytes(keccak(data))


def keccak256_suffixes(prefix: bytes, suffixes: Sequence[bytes]) -> bytes:
    """keccak256(prefix + s) for each s of `suffixes`, the 32-byte digests concatenated.

    For many messages that share a long prefix (the batch sampler hashes 160 shared bytes and a 32-byte counter
    per example): the prefix is absorbed once and the sponge state copied per suffix through pycryptodome's C
    keccak (the library eth_hash runs here), about 3x faster than hashing each message whole. Where that C
    interface is missing it hashes each message with `keccak256`; both give the same bytes
    (tests/unit/test_hashing_suffixes.py).
    """
    raw = _raw_keccak()
    if raw is None:
        return b"".join([keccak256(prefix + s) for s in suffixes])
    lib, api = raw
    base, work = _keccak_state(lib, api), _keccak_state(lib, api)
    b, w = base.get(), work.get()
    _check(lib.keccak_absorb(b, api.c_uint8_ptr(prefix), api.c_size_t(len(prefix))))
    out = api.create_string_buffer(32)
    size32, padding = api.c_size_t(32), api.c_ubyte(0x01)  # 0x01: Keccak's padding (the EVM's), not SHA-3's
    copy, absorb, digest, read = lib.keccak_copy, lib.keccak_absorb, lib.keccak_digest, api.get_raw_buffer
    digests = []
    sizes: dict[int, Any] = {}
    for s in suffixes:
        size = sizes.get(len(s))
        if size is None:
            size = sizes[len(s)] = api.c_size_t(len(s))
        copy(b, w)
        absorb(w, s, size)
        digest(w, out, size32, padding)
        digests.append(read(out))
    return b"".join(digests)


@cache
def _raw_keccak() -> tuple[Any, Any] | None:
    """pycryptodome's C keccak and its call helpers, or None where this version does not expose them."""
    try:
        lib = importlib.import_module("Crypto.Hash.keccak")._raw_keccak_lib
        api = importlib.import_module("Crypto.Util._raw_api")
        for name in ("keccak_init", "keccak_absorb", "keccak_copy", "keccak_digest", "keccak_destroy"):
            getattr(lib, name)
        for name in ("VoidPointer", "SmartPointer", "create_string_buffer", "get_raw_buffer", "c_uint8_ptr"):
            getattr(api, name)
    except (ImportError, AttributeError):
        return None
    return lib, api


def _keccak_state(lib: Any, api: Any) -> Any:
    """A fresh keccak-256 sponge (capacity 64 bytes, 24 rounds), freed when collected."""
    state = api.VoidPointer()
    _check(lib.keccak_init(state.address_of(), api.c_size_t(64), api.c_ubyte(24)))
    return api.SmartPointer(state.get(), lib.keccak_destroy)


def _check(result: int) -> None:
    if result:
        raise RuntimeError(f"keccak C call failed with code {result}")


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
