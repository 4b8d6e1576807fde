"""The int8 residue path of the exact matmul (crt_matmul.py): the same bits as the NumPy reference and the
float64 path, on CPU (the path forced) and, when CUDA is present, on the GPU against the CPU."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from gensyn_py.repro import crt_matmul as C
from gensyn_py.repro import matmul as M
from gensyn_py.repro.matmul import repro_matmul
from gensyn_py.repro.reference import matmul as ref_matmul

from .test_repro_matmul import TIE_A, TIE_B, large_sum_inputs, wide
from .test_repro_primitives import same

CUDA = torch.cuda.is_available()


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every 2-D product that needs more than one float64 GEMM takes the residue path, on any device."""
    monkeypatch.setattr(M, "_crt_wanted", lambda ra, rb: ra.dim() == 2)


def test_moduli_cover_every_product_of_the_rule() -> None:
    assert C.PRODUCT > 2 * (2**14 * (2**24 - 1) ** 2)  # K <= 2**14 products of aligned integers below 2**24
    assert all(m <= 256 for m in C.MODULI)  # centred residues fit int8
    assert all(c * y % m == 1 for c, y, m in zip(C.COFACTORS, C.INVERSES, C.MODULI, strict=True))


def test_reconstruction_is_exact_at_the_extremes() -> None:
    """N from its residues for the largest products the rule allows, both signs, zero and +-1."""
    bound = 2**14 * (2**24 - 1) ** 2
    values = [0, 1, -1, bound, -bound, 2**53 + 1, -(2**53) - 1, 2**62 - 1, -(2**62) + 1, C.PRODUCT // 3]
    values = [v for v in values if abs(v) < 2**62]
    p = torch.tensor([[[((v % m) + m) % m for v in values]] for m in C.MODULI], dtype=torch.int32)
    n = C.reconstruct(p)
    assert n.view(-1).tolist() == values


def test_residues_are_centred_int8() -> None:
    q = torch.tensor([[0, 1, -1, 2**24 - 1, -(2**24) + 1, 127, 128, -128, 255]], dtype=torch.float64)
    r = C.residues(q, torch.ones(1, 1, dtype=torch.float64))
    assert r.dtype == torch.int8
    for i, m in enumerate(C.MODULI):
        assert ((r[i].long() - q.long()) % m == 0).all()


@settings(max_examples=40, deadline=None)
@given(wide())
def test_residue_path_matches_reference(ab: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]) -> None:
    a, b = ab
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(M, "_crt_wanted", lambda ra, rb: True)
        assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))


def test_residue_path_round_to_odd_and_the_crafted_tie(forced: None) -> None:
    """|N| >= 2**53 with an inexact float64 conversion; the float32 tie that double rounding gets wrong."""
    for a, b in large_sum_inputs(11, 10):
        assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))
    assert repro_matmul(torch.from_numpy(TIE_A), torch.from_numpy(TIE_B)).item() == 2.0**55 + 2.0**32


def test_residue_path_at_the_largest_contraction(forced: None) -> None:
    """K = 2**14 full-significand same-sign entries: |N| near the rule's 2**62 bound."""
    k = 2**14
    a = np.full((2, k), np.float32(1.9999999))
    b = np.full((k, 2), np.float32(-1.9999998))
    assert same(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)), ref_matmul(a, b))


def _cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    out = []
    for m, k, n in [(1, 40, 1), (17, 100, 9), (300, 1000, 257), (64, 2**14, 8), (1024, 1024, 1024)]:
        a = torch.randn(m, k, generator=g) * torch.exp(torch.randn(m, k, generator=g) * 3)
        b = torch.randn(k, n, generator=g)
        out.append((a, b))
    a = torch.randn(40, 500, generator=g)
    a[3, 7], a[5, 1], a[9, 0] = math.inf, math.nan, 1e-44  # the non-finite rule, a subnormal
    out.append((a, torch.randn(500, 24, generator=g)))
    return out


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_cuda_residue_path_equals_cpu_bits() -> None:
    """On CUDA large products take the int8 tensor-core path; its bits equal the CPU float64 path."""
    for a, b in _cases():
        cpu = repro_matmul(a, b)
        gpu = repro_matmul(a.cuda(), b.cuda()).cpu()
        assert torch.equal(torch.isnan(cpu), torch.isnan(gpu))
        fin = ~torch.isnan(cpu)
        assert torch.equal(cpu[fin].view(torch.int32), gpu[fin].view(torch.int32)), (a.shape, b.shape)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_cuda_residue_path_forced_on_small_products(forced: None) -> None:
    """Shapes CUDA's int8 GEMM cannot take directly (M <= 16, K and N not multiples of 8) are padded."""
    g = torch.Generator().manual_seed(5)
    for m, k, n in [(1, 33, 1), (5, 77, 3), (16, 40, 15), (17, 41, 9)]:
        a, b = torch.randn(m, k, generator=g) * 1e5, torch.randn(k, n, generator=g)
        cpu = ref_matmul(a.numpy(), b.numpy())
        assert same(repro_matmul(a.cuda(), b.cuda()).cpu(), cpu)
