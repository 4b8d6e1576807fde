"""repro matmul: torch vs NumPy reference bit equality, error bound vs float64, thread independence."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gensyn_py.repro import ops as O
from gensyn_py.repro.exact_chunks import chunk_count
from gensyn_py.repro.matmul import exact_integers, repro_matmul, repro_sum
from gensyn_py.repro.reference import NUMPY
from gensyn_py.repro.reference import matmul as ref_matmul

from .test_repro_primitives import same

SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38]


@st.composite
def matrices(draw: Any, allow_inf: bool = True) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    m, k, n = draw(st.integers(1, 6)), draw(st.integers(1, 9)), draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    spread = draw(st.integers(0, 60))
    center = draw(st.integers(-140, 100))

    def gen(shape: tuple[int, int]) -> np.ndarray[Any, Any]:
        ex = np.minimum(rng.integers(center - spread, center + spread + 1, shape), 127)
        x = np.ldexp(rng.uniform(-1, 1, shape), ex).astype(np.float32)
        mask = rng.random(shape) < 0.15
        pool = SPECIAL + ([math.inf, -math.inf, math.nan] if allow_inf else [])
        x[mask] = rng.choice(np.array(pool, dtype=np.float32), int(mask.sum()))
        return x

    return gen((m, k)), gen((k, n))


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_matmul_matches_reference(ab: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]) -> None:
    a, b = ab
    assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))


@settings(max_examples=150, deadline=None)
@given(matrices(allow_inf=False))
def test_matmul_error_bound(ab: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]) -> None:
    """|C - AB| <= 2**-24 |C| + 2**-23 * K * max|A_i,:| * max|B_:,j| + 2**-149 (alignment + one rounding)."""
    a, b = ab
    c = repro_matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy().astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    k = a.shape[1]
    scale = np.abs(a64).max(axis=1, keepdims=True) * np.abs(b64).max(axis=0, keepdims=True) * k
    ok = np.isfinite(c) & (scale < 1e38)
    bound = 2.0**-24 * np.abs(c) + 2.0**-23 * scale * (1 + 2.0**-20) + 2.0**-149
    assert np.all(np.abs(c - exact)[ok] <= bound[ok])
    # overflow only when the exact value is at least the rounding threshold to inf
    over = ~np.isfinite(c)
    assert np.all(np.abs(exact[over]) >= 3.4028235e38 * (1 - 2.0**-20))


def test_matmul_edges() -> None:
    t = torch.tensor
    tiny = math.ldexp(1.0, -149)
    assert repro_matmul(t([[tiny, tiny]]), t([[0.5], [0.5]])).item() == tiny  # 2**-149 exactly
    assert repro_matmul(t([[tiny]]), t([[0.5]])).item() == 0.0  # tie to even: 2**-150 -> 0
    assert repro_matmul(t([[3 * tiny]]), t([[0.5]])).item() == 2 * tiny  # 1.5 * 2**-149 -> 2 * 2**-149
    assert repro_matmul(t([[5 * tiny]]), t([[0.5]])).item() == 2 * tiny  # 2.5 * 2**-149 -> 2 * 2**-149
    assert repro_matmul(t([[3e38, 3e38]]), t([[3.0], [-3.0]])).item() == 0.0
    assert repro_matmul(t([[3e38, 3e38]]), t([[3.0], [3.0]])).item() == math.inf
    z = repro_matmul(t([[-1.0]]), t([[0.0]]))
    assert z.item() == 0.0 and not torch.signbit(z).item()  # exact zero is +0 by definition
    r = repro_matmul(t([[math.inf, 1.0, 2.0]]), t([[1.0, 0.0, -1.0], [5.0, 1.0, 1.0], [1.0, 1.0, math.inf]]))
    assert r[0, 0].item() == math.inf and math.isnan(r[0, 1].item()) and math.isnan(r[0, 2].item())
    # alignment: entries are rounded (RNE) to units of 2**-23 of the row block of 1.0 before the exact sum
    ones = t([[1.0], [1.0], [1.0]])
    assert repro_matmul(t([[1.0, 2.0**-24, 2.0**-24]]), ones).item() == 1.0  # 0.5 unit ties to 0
    assert repro_matmul(t([[1.0, 3 * 2.0**-24, 2.0**-23]]), ones).item() == 1.0 + 3 * 2.0**-23  # 1.5 -> 2


def test_matmul_thread_independent_and_vs_float64() -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(200, 300, generator=g) * torch.exp(torch.randn(200, 300, generator=g) * 3)
    b = torch.randn(300, 150, generator=g)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        c1 = repro_matmul(a, b)
        s1 = repro_sum(a, 1)
        torch.set_num_threads(2)
        c2 = repro_matmul(a, b)
        s2 = repro_sum(a, 1)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(c1.view(torch.int32), c2.view(torch.int32))
    assert torch.equal(s1.view(torch.int32), s2.view(torch.int32))
    a64, b64 = a.double(), b.double()
    scale = 300 * a64.abs().amax(1, keepdim=True) * b64.abs().amax(0)
    bound = 2.0**-24 * c1.double().abs() + 2.0**-23 * scale
    assert ((c1.double() - a64 @ b64).abs() <= bound).all()
    an = torch.randn(100, 1000, generator=g)
    bn = torch.randn(1000, 50, generator=g)
    err = (repro_matmul(an, bn).double() - an.double() @ bn.double()).abs()
    assert (err / (an.double().abs() @ bn.double().abs())).max().item() < 1e-6


def test_reductions_match_reference() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((7, 13)) * 10).astype(np.float32)
    t = torch.from_numpy(x)
    for dim in (0, 1):
        assert same(O.TORCH.sum(t, dim), NUMPY.sum(x, dim))
    assert same(O.TORCH.rowmax(t), NUMPY.rowmax(x))
    for f in (O.softmax, O.log_softmax):
        assert same(f(O.TORCH, t), f(NUMPY, x))
    w = rng.standard_normal((1, 13)).astype(np.float32)
    bb = rng.standard_normal((1, 13)).astype(np.float32)
    ln = O.layer_norm(O.TORCH, t, torch.from_numpy(w), torch.from_numpy(bb))
    assert same(ln, O.layer_norm(NUMPY, x, w, bb))
    ref = torch.nn.functional.layer_norm(
        t.double(), (13,), torch.from_numpy(w[0]).double(), torch.from_numpy(bb[0]).double()
    )
    assert (ln.double() - ref).abs().max().item() < 1e-5
    sm = O.softmax(O.TORCH, t).double()
    assert (sm - torch.softmax(t.double(), 1)).abs().max().item() < 1e-6


@settings(max_examples=60, deadline=None)
@given(matrices())
def test_sums_match_reference_with_edges(ab: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]) -> None:
    x = ab[0]
    t = torch.from_numpy(x)
    for dim in (0, 1):
        assert same(repro_sum(t, dim), NUMPY.sum(x, dim))


@st.composite
def wide(draw: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """K > 32 (the split-slice path), full 24-bit significands, same-sign-heavy so |N| passes 2**53."""
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(33, 200)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bias = draw(st.sampled_from([0.0, 0.5, 0.9]))
    spread = draw(st.integers(0, 30))
    center = draw(st.integers(-130, 60))

    def gen(shape: tuple[int, int]) -> np.ndarray[Any, Any]:
        ex = np.minimum(rng.integers(center - spread, center + spread + 1, shape), 127)
        x = np.ldexp(rng.uniform(-1 + bias, 1, shape), ex).astype(np.float32)
        if draw(st.booleans()):
            mask = rng.random(shape) < 0.05
            pool = np.array([*SPECIAL, math.inf, -math.inf, math.nan], dtype=np.float32)
            x[mask] = rng.choice(pool, int(mask.sum()))
        return x

    return gen((m, k)), gen((k, n))


@settings(max_examples=50, deadline=None)
@given(wide())
def test_matmul_wide_k_matches_reference(ab: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]) -> None:
    a, b = ab
    assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))


def large_sum_inputs(seed: int, count: int) -> Iterator[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """Products whose |N| passes 2**53 (full 24-bit significands, same-sign heavy, K from 33 to 2000)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        k = int(rng.integers(33, 2000))
        a = (rng.integers(2**23, 2**24, (3, k)) * (1 - 2 * (rng.random((3, k)) < 0.02))).astype(np.float32)
        yield a, rng.integers(2**23, 2**24, (k, 3)).astype(np.float32)


# crafted tie: block maxima 2**23 make the aligned integers equal the values (unit 1), so
# N = 512 * 2**46 + 2**31 + 1 = 2**55 + 2**31 + 1, which RNE at 53 bits turns into the float32 tie
# 2**55 + 2**31; one rounding must give 2**55 + 2**32, double rounding would give 2**55
TIE_A = np.array([[2.0**23] * 513 + [1.0]], dtype=np.float32)
TIE_B = np.array([[2.0**23]] * 512 + [[2.0**8], [1.0]], dtype=np.float32)


def test_matmul_round_to_odd_path() -> None:
    """|N| >= 2**53 with a nonzero TwoSum error, incl. values whose 53-bit rounding lands on a float32 tie."""
    for a, b in large_sum_inputs(7, 30):
        assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))
    a, b = TIE_A, TIE_B
    got = repro_matmul(torch.from_numpy(a), torch.from_numpy(b)).item()
    assert got == ref_matmul(a, b)[0, 0] == 2.0**55 + 2.0**32


def test_ones_column_in_matmul_equals_sum_rule() -> None:
    """linear_grads folds gb = sum(gy, 0) into the gw matmul as a ones column: same bits as repro_sum."""
    g = torch.Generator().manual_seed(9)
    for k in (8, 64, 300):
        gy = torch.randn(k, 17, generator=g) * torch.exp(torch.randn(k, 17, generator=g) * 4)
        x = torch.randn(k, 5, generator=g)
        gwb = repro_matmul(gy.t().contiguous(), O.TORCH.append_ones(x))
        assert torch.equal(gwb[:, -1:].reshape(1, -1).view(torch.int32), repro_sum(gy, 0).view(torch.int32))


def full_scale(rng: np.random.Generator, shape: tuple[int, int], signed: bool) -> np.ndarray[Any, Any]:
    """Integers in [2**23, 2**24) (every aligned integer full width, unit 1), random signs if `signed`."""
    x = rng.integers(2**23, 2**24, shape).astype(np.float32)
    return x * np.where(rng.random(shape) < 0.5, -1, 1).astype(np.float32) if signed else x


@pytest.mark.parametrize(("k", "signed", "chunks"), [
    (64, True, 2),  # two chunks, their sum below 2**53: added in float64
    (64, False, 2),  # two chunks, |N| above 2**53: added in int64 and rounded to odd
    (128, True, 4),
    (256, False, 8),
    (4096, True, None),  # chunks of 32 terms would not pass: the two 12-bit-slice GEMMs
])
def test_matmul_chunked_paths_match_reference(k: int, signed: bool, chunks: int | None) -> None:
    """Full-width aligned integers fail the one-GEMM bounds, so the K-chunked (or sliced) paths run, and
    each gives the reference's bits; 3-D (batched) products too."""
    rng = np.random.default_rng(k + signed)
    a, b = full_scale(rng, (5, k), signed), full_scale(rng, (k, 7), signed)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    assert chunk_count(ta.double(), tb.double()) == chunks
    assert same(repro_matmul(ta, tb), ref_matmul(a, b))
    a3, b3 = np.stack([a, -a]), np.stack([b, b])
    out = repro_matmul(torch.from_numpy(a3), torch.from_numpy(b3))
    assert same(out[0], ref_matmul(a, b)) and same(out[1], ref_matmul(-a, b))


def test_exact_integers_equal_python_integers() -> None:
    """The int64 N of the chunked and the sliced products (the data-parallel path adds them across ranks)."""
    rng = np.random.default_rng(3)
    for k in (64, 256, 4096):
        a, b = full_scale(rng, (3, k), False), full_scale(rng, (k, 2), True)
        n = exact_integers(torch.from_numpy(a).double(), torch.from_numpy(b).double())
        want = [[sum(int(x) * int(y) for x, y in zip(a[i], b[:, j], strict=True)) for j in range(2)]
                for i in range(3)]
        assert n.tolist() == want
