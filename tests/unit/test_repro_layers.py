"""repro layer ops (forward and explicit backward): torch and the NumPy reference agree bit for bit on edge
inputs, and the results are close to float64 math."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gensyn_py.repro import ops as O
from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.layers import LAYERS
from gensyn_py.repro.matmul import repro_matmul
from gensyn_py.repro.reference import NUMPY, same_bits
from gensyn_py.repro.reference import matmul as ref_matmul

from .test_repro_primitives import EDGE, f32s

NPA = np.ndarray[Any, Any]
EDGE_FINITE = [v for v in EDGE if math.isfinite(v)]


def arrays(shape: tuple[int, ...], rng: np.random.Generator, edges: float = 0.15, pool: list[float] = EDGE) -> NPA:
    """Normal-ish float32 values across exponents, with a share of edge values."""
    x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-8, 8, shape)).astype(np.float32)
    mask = rng.random(shape) < edges
    x[mask] = rng.choice(np.array(pool, dtype=np.float32), int(mask.sum()))
    return x


def both(name: str, inputs: list[Any], attrs: dict[str, Any], needs: tuple[bool, ...],
         grad: NPA | None = None) -> tuple[Any, Any]:
    """Run layer `name` forward and backward on torch and on NumPy; assert equal bits; return NumPy's."""
    layer = LAYERS[name]
    t_in = [torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v for v in inputs]
    t_out, t_saved = layer.forward(TORCH, *t_in, **attrs)
    n_out, n_saved = layer.forward(NUMPY, *inputs, **attrs)
    assert same_bits(t_out.numpy(), np.asarray(n_out)), f"{name} forward"
    g = grad if grad is not None else np.ones(np.shape(n_out), np.float32)
    t_g = layer.backward(TORCH, t_saved, torch.from_numpy(g.copy()), needs)
    n_g = layer.backward(NUMPY, n_saved, g, needs)
    for i, (a, b) in enumerate(zip(t_g, n_g, strict=True)):
        assert (a is None) == (b is None)
        if a is not None:
            assert same_bits(a.numpy(), np.asarray(b)), f"{name} grad {i}"
    return n_out, n_g


@settings(max_examples=80, deadline=None)
@given(st.lists(f32s, min_size=1, max_size=32))
def test_erf_gelu_match_reference_on_edges(v: list[float]) -> None:
    x = np.array(v, dtype=np.float32)
    assert same_bits(O.erf(TORCH, torch.from_numpy(x)).numpy(), O.erf(NUMPY, x))
    both("gelu", [x], {}, (True,), grad=np.full(x.shape, 0.75, np.float32))


def test_erf_gelu_accuracy() -> None:
    x = np.concatenate([np.linspace(-6, 6, 4001), [1e-30, -1e-30, 1e-6, 0.999999, 1.0, 1.000001]]).astype(np.float32)
    exact = np.array([math.erf(float(v)) for v in x])
    assert np.abs(O.erf(NUMPY, x).astype(np.float64) - exact).max() <= 2.5e-7
    assert O.erf(NUMPY, np.array([0.0, -0.0, math.inf, -math.inf], np.float32)).tolist() == [0.0, -0.0, 1.0, -1.0]
    t = torch.from_numpy(x).double().requires_grad_()
    ref = torch.nn.functional.gelu(t)
    ref.sum().backward()
    y, (gx,) = both("gelu", [x], {}, (True,))
    scale = np.maximum(1.0, np.abs(x))
    assert (np.abs(y - ref.detach().numpy()) / scale).max() < 4e-7
    assert t.grad is not None and np.abs(gx - t.grad.numpy()).max() < 1e-6


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 9), st.integers(0, 2**32 - 1), st.booleans())
def test_layer_norm_forward_backward_match_reference(n: int, d: int, seed: int, edgy: bool) -> None:
    rng = np.random.default_rng(seed)
    x = arrays((n, d), rng, 0.2 if edgy else 0.0)
    w, b = arrays((d,), rng, 0.0), arrays((d,), rng, 0.0)
    both("layer_norm", [x, w, b], {}, (True, True, True), grad=arrays((n, d), rng, 0.1 if edgy else 0.0))


def test_layer_norm_close_to_float64_autograd() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 12)).astype(np.float32) * 3
    w, b, gy = (rng.standard_normal(s).astype(np.float32) for s in [(12,), (12,), (7, 12)])
    y, (gx, gw, gb) = both("layer_norm", [x, w, b], {}, (True, True, True), grad=gy)
    ts = [torch.from_numpy(v).double().requires_grad_() for v in (x, w, b)]
    ref = torch.nn.functional.layer_norm(ts[0], (12,), ts[1], ts[2])
    ref.backward(torch.from_numpy(gy).double())
    assert np.abs(y - ref.detach().numpy()).max() < 1e-5
    for got, t in zip((gx, gw, gb), ts, strict=True):
        assert t.grad is not None and np.abs(np.asarray(got) - t.grad.numpy()).max() < 1e-4


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2), st.integers(1, 2), st.integers(2, 5), st.integers(1, 3),
       st.sampled_from([(1, 0), (3, 1), (3, 0)]), st.integers(0, 2**32 - 1))
def test_conv2d_forward_backward_match_reference(b: int, c: int, h: int, o: int, kp: tuple[int, int],
                                                 seed: int) -> None:
    k, pad = kp
    if h + 2 * pad - k + 1 < 1:
        return
    rng = np.random.default_rng(seed)
    x, w, bias = arrays((b, c, h, h), rng), arrays((o, c, k, k), rng, 0.05), arrays((o,), rng, 0.0)
    oh = h + 2 * pad - k + 1
    both("conv2d", [x, w, bias], {"pad": pad}, (True, True, True), grad=arrays((b, o, oh, oh), rng, 0.05))


def test_conv2d_close_to_float64_autograd() -> None:
    rng = np.random.default_rng(2)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 6, 6), (4, 3, 3, 3), (4,)])
    gy = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    y, (gx, gw, gb) = both("conv2d", [x, w, bias], {"pad": 1}, (True, True, True), grad=gy)
    ts = [torch.from_numpy(v).double().requires_grad_() for v in (x, w, bias)]
    ref = torch.nn.functional.conv2d(ts[0], ts[1], ts[2], padding=1)
    ref.backward(torch.from_numpy(gy).double())
    assert np.abs(y - ref.detach().numpy()).max() < 1e-5
    for got, t in zip((gx, gw, gb), ts, strict=True):
        assert t.grad is not None and np.abs(np.asarray(got) - t.grad.numpy()).max() < 1e-4


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2), st.integers(1, 2), st.sampled_from([2, 4]), st.integers(0, 2**32 - 1))
def test_maxpool_ties_nan_and_signed_zero_match_reference(b: int, c: int, h: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, 1.0, 2.0, -math.inf, math.nan], np.float32)
    x = rng.choice(pool, (b, c, h, h))
    both("maxpool2d", [x], {"k": 2}, (True,), grad=arrays((b, c, h // 2, h // 2), rng, 0.0))


def test_maxpool_gradient_goes_to_first_maximum() -> None:
    x = np.array([[[[1.0, 3.0], [3.0, 0.0]]]], np.float32)  # tie between positions 1 and 2 of the window
    y, (gx,) = both("maxpool2d", [x], {"k": 2}, (True,), grad=np.array([[[[5.0]]]], np.float32))
    assert y.item() == 3.0 and gx.tolist() == [[[[0.0, 5.0], [0.0, 0.0]]]]
    z, _ = both("maxpool2d", [np.array([[[[-0.0, -0.0], [-0.0, -0.0]]]], np.float32)], {"k": 2}, (True,))
    assert not np.signbit(z).any()  # a zero maximum is +0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_embedding_forward_backward_match_reference(k: int, v: int, d: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v, (1, k)).astype(np.int64)
    w = arrays((v, d), rng)
    out, (none, gw) = both("embedding", [idx, w], {}, (False, True), grad=arrays((k, d), rng))
    assert none is None and out.shape == (k, d) and gw.shape == (v, d)


def test_embedding_gradient_is_the_matmul_rule_with_onehot() -> None:
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 6, 40)
    g = (rng.standard_normal((40, 5)) * 2.0 ** rng.integers(-30, 30, (40, 5))).astype(np.float32)
    onehot = (idx[None, :] == np.arange(6)[:, None]).astype(np.float32)
    got = TORCH.index_sum(torch.from_numpy(idx), torch.from_numpy(g), 6).numpy()
    assert same_bits(got, ref_matmul(onehot, g))
    assert same_bits(got, repro_matmul(torch.from_numpy(onehot), torch.from_numpy(g)).numpy())


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2), st.integers(1, 5), st.integers(1, 2), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_attention_forward_backward_match_reference(b: int, t: int, h: int, dh: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    qkv = arrays((b * t, 3 * h * dh), rng, 0.1, EDGE_FINITE)
    both("attention", [qkv], {"batch": b, "heads": h}, (True,), grad=arrays((b * t, h * dh), rng, 0.0))


def test_attention_is_causal_and_close_to_float64() -> None:
    rng = np.random.default_rng(4)
    b, t, h, dh = 2, 5, 2, 3
    qkv = rng.standard_normal((b * t, 3 * h * dh)).astype(np.float32)
    gy = rng.standard_normal((b * t, h * dh)).astype(np.float32)
    y, (g,) = both("attention", [qkv], {"batch": b, "heads": h}, (True,), grad=gy)
    q = torch.from_numpy(qkv).double().requires_grad_()
    z = q.view(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)
    ref = torch.nn.functional.scaled_dot_product_attention(z[0], z[1], z[2], is_causal=True)
    ref = ref.permute(0, 2, 1, 3).reshape(b * t, h * dh)
    ref.backward(torch.from_numpy(gy).double())
    assert np.abs(y - ref.detach().numpy()).max() < 1e-5
    assert q.grad is not None and np.abs(g - q.grad.numpy()).max() < 1e-5
    later = qkv.copy()
    later[t - 1] += 1.0  # the last position of the first sequence only affects its own output
    y2, _ = both("attention", [later], {"batch": b, "heads": h}, (True,), grad=gy)
    assert same_bits(y2[: t - 1], y[: t - 1]) and not same_bits(y2[t - 1], y[t - 1])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_cross_entropy_and_masked_softmax_match_reference(n: int, c: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    logits = arrays((n, c), rng, 0.2)
    labels = rng.integers(0, c, n).astype(np.int64)
    both("cross_entropy", [logits, labels], {}, (True, False), grad=np.ones((1, 1), np.float32))
    mask = rng.random((n, c)) < 0.6
    mask[:, 0] = True
    p = O.masked_softmax(NUMPY, logits, mask)
    assert same_bits(O.masked_softmax(TORCH, torch.from_numpy(logits), torch.from_numpy(mask)).numpy(), p)
    clean = np.isfinite(np.where(mask, logits, 0)).all(axis=1, keepdims=True) & ~mask  # rows without NaN/inf
    assert (p[clean] == 0).all() and not np.signbit(p[clean]).any()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 40), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_batched_matmul_matches_reference(nb: int, m: int, k: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = arrays((nb, m, k), rng, 0.1), arrays((nb, k, n), rng, 0.1)
    assert same_bits(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy(), ref_matmul(a, b))


def test_matmul_one_gemm_and_split_paths_match_reference() -> None:
    """K = 64: sparse or small-valued rows pass the L1 bound (one GEMM); rows of block-maximum entries fail it
    (two sliced GEMMs); both give the rule's bits."""
    rng = np.random.default_rng(5)
    sparse = rng.random((8, 64)).astype(np.float32) * (rng.random((8, 64)) < 0.3)
    full = (rng.integers(2**23, 2**24, (8, 64)) * 2.0**-20).astype(np.float32)
    b = rng.standard_normal((64, 7)).astype(np.float32)
    for a in (sparse, full, np.concatenate([sparse, full])):
        assert same_bits(repro_matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy(), ref_matmul(a, b))
