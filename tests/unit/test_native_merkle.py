"""The C trees (gensyn_py/crypto/_merkle_native.c) are byte for byte the Python ones, and they were built."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gensyn_py.crypto import native_merkle
from gensyn_py.crypto.hashing import keccak256

words = st.integers(min_value=1, max_value=70).flatmap(lambda n: st.binary(min_size=32 * n, max_size=32 * n))


def test_the_native_module_was_built() -> None:
    # `pip install -e .` compiles it (pyproject.toml's ext-modules); without it a dispute's side hashes ~10x slower.
    assert native_merkle.native_module() is not None


# (on, widest) of `use_simd`: the widest permutation (AVX-512 where the processor has it), AVX2 alone, the baseline.
PERMUTATIONS = {"widest": (True, True), "avx2": (True, False), "baseline": (False, False)}


@pytest.fixture(params=list(PERMUTATIONS))
def permutation(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test on every build of the permutation the processor runs: eight states per AVX-512 register, four per
    AVX2 register, the baseline (each falls back to the next where the processor lacks it)."""
    native = native_merkle.native_module()
    assert native is not None
    in_use = native.use_simd(*PERMUTATIONS[request.param])
    yield in_use
    native.use_simd(True)


def test_the_widest_permutation_is_taken_by_default() -> None:
    native = native_merkle.native_module()
    assert native is not None
    cpuinfo = Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
    widest = "avx512" if {"avx512f", "avx512vl"} <= flags else "avx2" if "avx2" in flags else "baseline"
    assert native.use_simd(True) == widest


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=words, first=st.integers(min_value=0, max_value=2**40))
def test_chunk_leaves_match_python(permutation: str, data: bytes, first: int) -> None:
    assert b"".join(native_merkle.chunk_leaves(data, first)) == native_merkle.py_chunk_leaves(data, first)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(leaves=words)
def test_levels_and_root_match_python(permutation: str, leaves: bytes) -> None:
    py = native_merkle.py_levels(leaves)
    assert [b"".join(level) for level in native_merkle.levels(leaves)] == py
    assert native_merkle.root(leaves) == py[-1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=words, first=st.integers(min_value=0, max_value=2**20))
def test_chunks_root_is_the_root_of_the_leaves(permutation: str, data: bytes, first: int) -> None:
    leaves = native_merkle.py_chunk_leaves(data, first)
    assert native_merkle.chunks_root(data, first) == native_merkle.py_levels(leaves)[-1]


def test_a_leaf_is_the_evm_keccak_of_index_and_chunk() -> None:
    chunk = bytes(range(32))
    assert native_merkle.chunk_leaves(chunk, 7) == [keccak256((7).to_bytes(32, "big") + chunk)]
    a, b = keccak256(b"a"), keccak256(b"b")
    assert native_merkle.root(a + b) == keccak256(min(a, b) + max(a, b))
    ab = keccak256(min(a, b) + max(a, b))
    assert native_merkle.root(a + b + a) == keccak256(min(ab, a) + max(ab, a))  # the odd `a` promoted, then paired


@pytest.mark.parametrize("bad", [b"", bytes(31), bytes(33)])
def test_a_length_that_is_not_whole_words_is_refused(bad: bytes) -> None:
    for fn in (native_merkle.root, native_merkle.chunks_root):
        with pytest.raises(ValueError, match="multiple of 32"):
            fn(bad)
