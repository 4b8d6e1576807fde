"""keccak256_suffixes (a shared prefix absorbed once, the sponge copied per suffix) equals keccak256 of each
whole message, on the C path and on the fallback, for prefixes and suffixes across keccak's 136-byte block."""

from __future__ import annotations

import numpy as np
import pytest

from gensyn_py.crypto import hashing
from gensyn_py.crypto.hashing import keccak256, keccak256_suffixes


@pytest.mark.parametrize("fallback", [False, True])
def test_suffix_hashes_equal_whole_message_hashes(fallback: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if fallback:
        monkeypatch.setattr(hashing, "_raw_keccak", lambda: None)
    else:
        assert hashing._raw_keccak() is not None  # the C path really runs here
    rng = np.random.Generator(np.random.PCG64(3))
    for plen in (0, 1, 135, 136, 137, 160, 300):
        prefix = rng.bytes(plen)
        suffixes = [rng.bytes(n) for n in (0, 1, 32, 135, 136, 137, 32, 32)]
        expected = b"".join(keccak256(prefix + s) for s in suffixes)
        assert keccak256_suffixes(prefix, suffixes) == expected
    assert keccak256_suffixes(b"abc", []) == b""
    assert keccak256_suffixes(b"", [b""]) == bytes.fromhex(
        "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"  # keccak256 of nothing
    )
