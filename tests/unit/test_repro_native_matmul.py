"""The C matmul path (repro/native_matmul.py) gives the torch path's bits and the NumPy reference's, on every route:
one call for small products (AVX2 and baseline GEMM loops), C passes around torch's BLAS for large ones, K-chunks,
12-bit slices; transposed and batched operands; and it hands non-finite inputs back to the general path."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gensyn_py.repro import matmul as M
from gensyn_py.repro import native_matmul as NM
from gensyn_py.repro.reference import matmul as ref_matmul

from .test_repro_matmul import full_scale
from .test_repro_primitives import same


def test_the_native_modules_were_built() -> None:
    """`pip install -e .` compiled both C modules here (the CI machine has a C compiler)."""
    from gensyn_py.repro import fused

    assert NM.native_module() is not None and fused.native_module() is not None


# (on, widest) of `use_simd`: the widest loops (AVX-512 where the processor has it), AVX2 alone, the baselines.
@pytest.fixture(params=[(True, True), (True, False), (False, False)], ids=["widest", "avx2", "baseline"])
def simd(request: pytest.FixtureRequest) -> Iterator[str]:
    c = NM.native_module()
    in_use = c.use_simd(*request.param)
    yield in_use
    c.use_simd(True)


def torch_path(a: torch.Tensor, b: torch.Tensor, monkeypatch: pytest.MonkeyPatch) -> torch.Tensor:
    """repro_matmul as it runs without the C module (and on GPUs)."""
    with monkeypatch.context() as m:
        m.setattr(M, "native_module", lambda: None)
        return M.repro_matmul(a, b)


def scaled(rng: np.random.Generator, shape: tuple[int, ...], spread: int, center: int,
           zeros: float) -> np.ndarray[Any, Any]:
    """Values over 2 * spread + 1 binades around 2**center (subnormals and overflow included), a share of zeros."""
    ex = np.minimum(rng.integers(center - spread, center + spread + 1, shape), 127)
    x = np.ldexp(rng.uniform(-1, 1, shape), ex).astype(np.float32)
    x[rng.random(shape) < zeros] = rng.choice(np.array([0.0, -0.0], dtype=np.float32))
    return x


@st.composite
def products(draw: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], bool, bool]:
    m, k, n = draw(st.integers(1, 40)), draw(st.integers(1, 300)), draw(st.integers(1, 40))
    batch = draw(st.sampled_from([0, 1, 3]))  # 0: a 2-D product
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread, center = draw(st.integers(0, 40)), draw(st.integers(-150, 110))
    zeros = draw(st.sampled_from([0.0, 0.3, 1.0]))
    lead = (batch,) if batch else ()
    a = scaled(rng, (*lead, m, k), spread, center, zeros)
    b = scaled(rng, (*lead, k, n), spread, center, zeros)
    return a, b, draw(st.booleans()), draw(st.booleans())


def operand(x: np.ndarray[Any, Any], transposed: bool) -> torch.Tensor:
    """x as a tensor, or as the transposed view of a contiguous transpose (same values, other strides)."""
    t = torch.from_numpy(x)
    return t.transpose(-1, -2).contiguous().transpose(-1, -2) if transposed else t


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(products())
def test_native_equals_torch_path_and_reference(simd: str, monkeypatch: pytest.MonkeyPatch,
                                                 case: tuple[Any, Any, bool, bool]) -> None:
    a, b, ta, tb = case
    x, y = operand(a, ta), operand(b, tb)
    got = NM.native_matmul(x, y)
    assert got is not None
    assert same(got, torch_path(x, y, monkeypatch))
    want = ref_matmul(a, b) if a.ndim == 2 else np.stack([ref_matmul(p, q) for p, q in zip(a, b, strict=True)])
    assert same(got, want)


def test_large_products_take_blas_and_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SMALL_WORK the exact GEMM is torch's float64 BLAS between the C passes; same bits."""
    rng = np.random.default_rng(5)
    monkeypatch.setattr(NM, "SMALL_WORK", 0)  # these sizes take the large route
    for m, k, n in ((130, 96, 100), (64, 512, 40), (3, 40, 5)):
        a, b = scaled(rng, (m, k), 8, 0, 0.1), scaled(rng, (k, n), 8, -3, 0.1)
        for x, y in ((torch.from_numpy(a), operand(b, True)), (operand(a, True), torch.from_numpy(b))):
            got = M.repro_matmul(x, y)  # a transposed view on either side is aligned in its own memory order
            assert same(got, torch_path(x, y, monkeypatch)) and same(got, ref_matmul(a, b))


@pytest.mark.parametrize("k", [64, 256, 4096])
def test_chunked_and_sliced_routes_match(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Full-width aligned integers fail one GEMM of the whole K: the small call answers 'not one GEMM' and the
    K-chunk (or 12-bit-slice) route runs on the C-aligned integers."""
    rng = np.random.default_rng(k)
    a, b = full_scale(rng, (6, k), True), full_scale(rng, (k, 5), False)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    out = torch.empty(6, 5)
    code = NM.native_module().small_matmul(NM._operand(x), NM._operand(y), out.data_ptr(), 1)
    assert code == 2  # not exact in one GEMM
    got = M.repro_matmul(x, y)
    assert same(got, torch_path(x, y, monkeypatch)) and same(got, ref_matmul(a, b))


def test_signs_of_zero_and_underflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """N = 0 gives +0 (also from -0 products); a nonzero N that underflows keeps its sign."""
    tiny = np.float32(2.0**-100)
    a = np.array([[-0.0, 0.0], [tiny, -tiny]], dtype=np.float32)
    b = np.array([[0.0, tiny], [-0.0, tiny]], dtype=np.float32)
    got = NM.native_matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert got is not None and same(got, ref_matmul(a, b))
    c = got.numpy()
    assert math.copysign(1.0, c[0, 0]) == 1.0  # (-0)(0) + (0)(-0): N = 0
    one = NM.native_matmul(torch.tensor([[-tiny]]), torch.tensor([[tiny]]))
    assert one is not None and one.item() == 0.0 and math.copysign(1.0, one.item()) == -1.0
    # the large route: a row of -0 against positive entries, N = 0 from -0 products summed by the BLAS
    monkeypatch.setattr(NM, "SMALL_WORK", 0)
    big_a = np.ones((100, 110), dtype=np.float32)
    big_a[3] = -0.0
    big = NM.native_matmul(torch.from_numpy(big_a), torch.ones(110, 120))
    assert big is not None
    assert not torch.signbit(big[3]).any() and bool((big[3] == 0).all())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs_go_to_the_general_path(bad: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C side refuses them (None), and repro_matmul still gives the reference's NaN / inf pattern."""
    a = np.ones((4, 40), dtype=np.float32)
    a[1, 3] = bad
    b = np.ones((40, 3), dtype=np.float32)
    b[5, 2] = 0.0
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    assert NM.native_matmul(x, y) is None
    assert same(M.repro_matmul(x, y), ref_matmul(a, b))
    monkeypatch.setattr(NM, "SMALL_WORK", 0)
    assert NM.native_matmul(x, y) is None  # the large route too


def test_chunk_sums_above_2_53_round_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """N = 2**55 + 2**31 + 1 from 32 exact K-chunks (each below 2**53) summed in int64: rounded to odd at 53 bits
    and then to float32 it is 2**55 + 2**32; a float64 sum (RNE) would land on the float32 tie 2**55 + 2**31, and a
    second rounding on 2**55."""
    k = 2048
    a = np.zeros((1, k), dtype=np.float32)
    b = np.zeros((k, 1), dtype=np.float32)
    a[0, :513], a[0, 513] = 2.0**23, 1.0
    b[:512, 0], b[512, 0], b[513, 0] = 2.0**23, 2.0**8, 1.0
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    from gensyn_py.repro.exact_chunks import chunk_count

    assert chunk_count(x.double(), y.double()) == 32
    got = M.repro_matmul(x, y)
    assert got.item() == 2.0**55 + 2.0**32 == ref_matmul(a, b)[0, 0]
    assert same(got, torch_path(x, y, monkeypatch))


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the resident size from /proc")
def test_scratch_memory_goes_with_its_thread() -> None:
    """Each thread's kept scratch (about 13 MB for this product) is freed when the thread ends: forty short-lived
    threads, as a solver that trains each unit on a thread of its own, do not keep forty of them."""
    import threading

    a, b = torch.randn(2048, 512), torch.randn(512, 4)
    assert NM.SMALL_WORK >= 2048 * 512 * 4  # the one-call path, whose scratch is the C module's

    def work() -> None:
        assert NM.native_matmul(a, b) is not None

    work()
    before = rss_bytes()
    for _ in range(40):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert rss_bytes() - before < 120 * 2**20


@pytest.mark.parametrize("shapes", [((3, 0), (0, 4)), ((2, 3, 0), (2, 0, 4))], ids=["2d", "batched"])
def test_an_empty_k_gives_positive_zeros_on_both_paths(shapes: tuple[tuple[int, ...], tuple[int, ...]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """K = 0: every entry is the empty sum, N = 0, so +0, as torch's float32 product gives too."""
    x, y = torch.ones(shapes[0]), torch.ones(shapes[1])
    want = x @ y
    for got in (M.repro_matmul(x, y), torch_path(x, y, monkeypatch)):
        assert got.shape == want.shape and got.dtype == torch.float32
        assert bool((got == 0).all()) and not torch.signbit(got).any()


def fewest_chunks(fa: np.ndarray[Any, Any], fb: np.ndarray[Any, Any]) -> int | None:
    """The least number of contiguous chunks of the groups that each pass the bound, by dynamic programming over
    the cut positions, in exact rationals; None where no split passes."""
    from fractions import Fraction

    from gensyn_py.repro.exact_chunks import LIMIT

    g = fa.shape[1]

    def fits(s: int, e: int) -> bool:
        ma = max(sum(Fraction(v) for v in row[s:e]) for row in fa)
        mb = max(sum(Fraction(v) for v in row[s:e]) for row in fb)
        return ma * mb <= Fraction(LIMIT)

    best: list[int | None] = [0] + [None] * g  # best[e]: fewest chunks covering groups [0, e)
    for e in range(1, g + 1):
        for s in range(e):
            prev, now = best[s], best[e]
            if prev is not None and fits(s, e):
                best[e] = prev + 1 if now is None else min(now, prev + 1)
    return best[g]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 16), st.integers(1, 5), st.integers(1, 5), st.integers(1, 16), st.integers(0, 2**32 - 1))
def test_chunk_ends_are_the_fewest_exact_chunks(g: int, rows_a: int, rows_b: int, max_chunks: int,
                                                seed: int) -> None:
    """The greedy K-chunks (C `chunk_ends`) each pass the Cauchy–Schwarz bound and are as few as any split of the
    groups allows; None exactly when no split passes or every one needs more than `max_chunks`."""
    rng = np.random.default_rng(seed)
    # sums of squares per group: around 2**50 to 2**54, so that 1 to g groups fit in a chunk
    fa = np.ldexp(rng.uniform(0.5, 1.0, (rows_a, g)), rng.integers(49, 55, (rows_a, g)))
    fb = np.ldexp(rng.uniform(0.5, 1.0, (rows_b, g)), rng.integers(49, 55, (rows_b, g)))
    ta, tb = torch.from_numpy(fa), torch.from_numpy(fb)
    ends = NM.native_module().chunk_ends(ta.data_ptr(), rows_a, tb.data_ptr(), rows_b, g, max_chunks)
    want = fewest_chunks(fa, fb)
    if want is None or want > max_chunks:
        assert ends is None
        return
    assert ends is not None and len(ends) == want and ends[-1] == g and list(ends) == sorted(set(ends))
    from gensyn_py.repro.exact_chunks import LIMIT

    for s, e in zip((0, *ends[:-1]), ends, strict=True):
        assert fa[:, s:e].sum(axis=1).max() * fb[:, s:e].sum(axis=1).max() <= LIMIT


def test_unequal_chunks_give_the_reference_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where 3 chunks pass and 2 do not, the large route takes 3 unequal ones (equal power-of-two chunks would take
    4), adds their products in int64 and rounds once: the torch path's and the reference's bits."""
    rng = np.random.default_rng(11)
    k = 128  # 64 groups of 2 terms
    a = full_scale(rng, (40, k), True)
    b = full_scale(rng, (k, 30), False)
    monkeypatch.setattr(NM, "SMALL_WORK", 0)
    seen: list[tuple[int, ...] | None] = []
    real = NM._chunk_ends

    def watched(*args: Any) -> tuple[int, ...] | None:
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(NM, "_chunk_ends", watched)
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    got = M.repro_matmul(x, y)
    assert [len(e) if e else e for e in seen] == [3]
    from gensyn_py.repro.exact_chunks import chunk_count

    assert chunk_count(x.double(), y.double()) == 4
    assert same(got, torch_path(x, y, monkeypatch)) and same(got, ref_matmul(a, b))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 300), st.integers(1, 70), st.integers(0, 40), st.integers(-150, 110),
       st.sampled_from([0.0, 0.3, 1.0]), st.booleans(), st.integers(0, 2**32 - 1))
def test_sums_read_in_place_give_the_reference_bits(simd: str, rows: int, cols: int, spread: int, center: int,
                                                    zeros: float, transposed: bool, seed: int) -> None:
    """The sum rule in one C call (each entry rounded to its block unit and added as it is, no aligned copy), on
    every loop and on a transposed view: the bits of the reference's matmul against a ones vector, +0 for a zero
    sum, subnormal and overflowing sums included."""
    x = scaled(np.random.default_rng(seed), (rows, cols), spread, center, zeros)
    t = operand(x, transposed)
    for dim in (0, 1):
        got = NM.native_sum(t, dim)
        ones = np.ones((cols, 1) if dim == 1 else (1, rows), np.float32)
        want = ref_matmul(x, ones) if dim == 1 else ref_matmul(ones, x)
        assert got is not None and same(got, torch.from_numpy(np.asarray(want)))


@pytest.mark.parametrize("k", [40, 64, 128, 512])
def test_products_made_a_block_of_rows_at_a_time_give_the_same_bits(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A product larger than ROW_BLOCK_BYTES is made ROW_BLOCK rows at a time (here 7, so the last block is short),
    in one GEMM (k 40) or in 2, 3 or more (11) K-chunks: the bits of the whole product at once, the torch path's and the
    reference's."""
    rng = np.random.default_rng(k)
    a, b = full_scale(rng, (45, k), True), full_scale(rng, (k, 6), k != 128)
    x, y = torch.from_numpy(a), operand(b, True)
    monkeypatch.setattr(NM, "SMALL_WORK", 0)
    whole = M.repro_matmul(x, y)
    monkeypatch.setattr(NM, "ROW_BLOCK_BYTES", 0)
    monkeypatch.setattr(NM, "ROW_BLOCK", 7)
    seen: list[tuple[int, ...] | None] = []
    real = NM._chunk_ends
    monkeypatch.setattr(NM, "_chunk_ends", lambda *args: seen.append(real(*args)) or seen[-1])
    got = M.repro_matmul(x, y)
    assert same(got, whole.numpy()) and same(got, torch_path(x, y, monkeypatch)) and same(got, ref_matmul(a, b))
    chunks = len(seen[0]) if seen and seen[0] else 1
    assert chunks == {40: 1, 64: 2, 128: 3}[k] if k < 512 else chunks > 3  # 512: summed in int64


@pytest.mark.parametrize("k", [64, 320, 1280])
def test_alignment_statistics_are_the_exact_sums_within_their_margin(k: int, simd: str) -> None:
    """The aligned integers, and each block's sums of squares over the 64 groups of K (groups of 1, 5 and 20
    entries), by rows and by columns, on every loop: the integers exact, the sums of squares within a relative
    2**-39 of the exact ones (the margin the chunk choice keeps), the largest L1 norm exact."""
    rng = np.random.default_rng(k)
    x = scaled(rng, (1, 9, k), 6, 0, 0.1)
    columns = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 1)))
    for by_rows, t in ((True, torch.from_numpy(x)), (False, columns)):
        q, _, squares, special, l1, _ = NM._aligned(t, by_rows, 64)
        assert not special
        ints = np.asarray(q[0] if by_rows else q[0].T, dtype=np.float64)  # (blocks, K)
        assert np.array_equal(ints, np.round(ints)) and np.abs(ints).max() <= 2**24
        exact = [[sum(int(v) ** 2 for v in row[g * (k // 64):(g + 1) * (k // 64)]) for g in range(64)] for row in ints]
        got = squares.numpy()
        for block, sums in enumerate(exact):
            for group, want in enumerate(sums):
                assert abs(got[block, group] - want) <= want * 2.0**-39
        assert l1 == max(sum(abs(int(v)) for v in row) for row in ints)
