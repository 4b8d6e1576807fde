"""exp, log and erf in one C call (repro/fused.py) give their primitive sequences' bits on every float32 class, the
tracer still records the primitives, and tensors the C side does not take go back to the primitives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

from gensyn_py.repro import ops as O
from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.fused import fused
from gensyn_py.repro.reference import NUMPY

EDGES = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1, 0x80000001, 0x007FFFFF,
                  0x00800000, 0x3F800000, 0xBF800000, 0x3F3504F3, 0x3F3504F4, 0x42B20000, 0x42B20001, 0xC2D00000,
                  0xC2D00001, 0x7F7FFFFF, 0xFF7FFFFF], dtype=np.uint32)


class Primitives:
    """The torch backend seen as any other backend: ops.exp / ops.log run their primitive sequences on it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(TORCH, name)


def same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Equal bit patterns, any NaN equal to any NaN (the primitives leave NaN payloads undefined)."""
    both_nan = torch.isnan(x) & torch.isnan(y)
    return bool(((x.view(torch.int32) == y.view(torch.int32)) | both_nan).all())


def inputs() -> list[torch.Tensor]:
    rng = np.random.default_rng(11)
    patterns = np.concatenate([rng.integers(0, 2**32, 400_000, dtype=np.uint64).astype(np.uint32), EDGES])
    typical = (rng.standard_normal(200_000) * rng.choice([1.0, 30.0, 1e-3], 200_000)).astype(np.float32)
    return [torch.from_numpy(patterns.view(np.float32).copy()), torch.from_numpy(typical),
            torch.from_numpy(np.abs(typical)).reshape(400, 500)]


@pytest.fixture(params=[True, False], ids=["avx2", "baseline"])
def simd(request: pytest.FixtureRequest) -> Iterator[bool]:
    from gensyn_py.repro.fused import native_module

    native_module().use_simd(request.param)
    yield request.param
    native_module().use_simd(True)


@pytest.mark.parametrize("name", ["exp", "log", "erf"])
def test_fused_equals_the_primitive_sequence(name: str, simd: bool) -> None:
    f = getattr(O, name)
    for x in inputs():
        got = fused(name, x)
        assert got is not None and got.shape == x.shape
        assert same_bits(got, f(Primitives(), x))
        assert same_bits(got, f(TORCH, x))  # the torch backend takes the fused call


@pytest.mark.parametrize("name", ["exp", "log", "erf"])
def test_fused_equals_the_numpy_reference(name: str) -> None:
    x = inputs()[0][:50_000]
    ref = getattr(O, name)(NUMPY, x.numpy())
    assert same_bits(fused(name, x), torch.from_numpy(np.asarray(ref, dtype=np.float32)))  # type: ignore[arg-type]


def test_tensors_the_c_side_does_not_take_run_the_primitives() -> None:
    x = torch.randn(8, 6)
    assert fused("exp", x.t()) is None  # not contiguous
    assert fused("exp", x.double()) is None
    assert same_bits(O.exp(TORCH, x.t()), O.exp(Primitives(), x.t()))


def test_the_tracer_records_the_primitives() -> None:
    """A traced step must hold every primitive of exp (floor, ldexp_f, ...): the fused call is the torch
    backend's alone, never an op of a trace."""
    from gensyn_py.proof.trace import TracingBackend

    tb = TracingBackend(TORCH)
    x = tb.input("x", torch.randn(4, 3))
    tb.output("y", O.erf(tb, O.log(tb, O.exp(tb, x))))
    codes = [op.code for op in tb.trace().ops]
    assert {"floor", "ldexp_f", "frexp_m", "div"} <= set(codes)
    assert codes.count("ldexp_f") == 2  # exp's and the one inside erf


def test_fused_sqrt_is_the_float64_root_rounded(simd: bool) -> None:
    """The primitive sqrt's one-pass C form equals its torch form (float64 root, one rounding) bit for bit."""
    for x in inputs():
        got = fused("sqrt", x)
        assert got is not None and same_bits(got, torch.sqrt(x.double()).float())


@pytest.mark.parametrize("tensor_lr", [False, True])
def test_fused_adamw_equals_the_primitive_update(simd: bool, tensor_lr: bool) -> None:
    """ops.adamw on the torch backend (one C pass) gives the primitive sequence's p, m and v bit for bit, over
    values from subnormal to large, zero moments (the first step) included."""
    rng = np.random.default_rng(int(tensor_lr))
    n = 100_003

    def values(scale: float) -> torch.Tensor:
        x = rng.standard_normal(n) * scale * 2.0 ** rng.integers(-30, 10, n)
        x[rng.random(n) < 0.05] = 0.0
        return torch.from_numpy(x.astype(np.float32))

    p, g, m = values(1.0), values(1e-2), values(1e-3)
    v = values(1e-4).abs()
    lr: float | torch.Tensor = torch.tensor(3e-4, dtype=torch.float32) if tensor_lr else 3e-4
    cfg = O.AdamWConfig(lr=lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)
    b1t, b2t = torch.tensor(0.9**7, dtype=torch.float32), torch.tensor(0.999**7, dtype=torch.float32)
    for mm, vv in ((m, v), (torch.zeros(n), torch.zeros(n))):
        got = O.adamw(TORCH, p, g, mm, vv, b1t, b2t, cfg)
        want = O.adamw(Primitives(), p, g, mm, vv, b1t, b2t, cfg)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))


def test_fused_gelu_and_its_gradient_equal_the_primitive_sequences(simd: bool) -> None:
    """GELU forward (y and cdf) and backward in one C pass each: the primitive sequences' bits, on random bit patterns,
    edges and typical activations; the NumPy reference's too."""
    from gensyn_py.repro.fused import fused_gelu, fused_gelu_grad

    for x in inputs():
        rng = np.random.default_rng(x.numel())
        gy = torch.from_numpy(rng.standard_normal(x.shape).astype(np.float32))
        got = fused_gelu(x)
        assert got is not None
        want = O.gelu_parts(Primitives(), x)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))
        assert all(same_bits(a, b) for a, b in zip(O.gelu_parts(TORCH, x), want, strict=True))
        gx = fused_gelu_grad(x, got[1], gy)
        assert gx is not None and same_bits(gx, O.gelu_grad(Primitives(), x, got[1], gy))
        assert same_bits(O.gelu_grad(TORCH, x, got[1], gy), gx)
    x = inputs()[2][:100]
    gy = torch.ones_like(x) * 0.75
    y, cdf = O.gelu_parts(TORCH, x)
    ry, rcdf = O.gelu_parts(NUMPY, x.numpy())
    assert same_bits(y, torch.from_numpy(np.asarray(ry))) and same_bits(cdf, torch.from_numpy(np.asarray(rcdf)))
    rgx = O.gelu_grad(NUMPY, x.numpy(), cdf.numpy(), gy.numpy())
    assert same_bits(O.gelu_grad(TORCH, x, cdf, gy), torch.from_numpy(np.asarray(rgx)))


def test_gelu_on_tensors_the_c_side_does_not_take_runs_the_primitives() -> None:
    from gensyn_py.repro.fused import fused_gelu, fused_gelu_grad

    x = torch.randn(8, 6)
    assert fused_gelu(x.t()) is None and fused_gelu(x.double()) is None
    assert fused_gelu_grad(x, x, torch.randn(6, 8)) is None  # shapes differ
    y, cdf = O.gelu_parts(TORCH, x.t())
    assert all(same_bits(a, b) for a, b in zip((y, cdf), O.gelu_parts(Primitives(), x.t()), strict=True))


def test_fused_adamw_in_place_writes_the_same_bits_where_the_state_is() -> None:
    """In place (a step that owns its state) the update lands in p, m and v themselves, with the bits of the fresh
    outputs; the first step's shared zero moments are not overwritten (fresh outputs then)."""
    from gensyn_py.repro.fused import fused_adamw

    gen = torch.Generator().manual_seed(3)
    p, g, m = (torch.randn(10_007, generator=gen) for _ in range(3))
    v = torch.rand(10_007, generator=gen)
    cfg = O.AdamWConfig(lr=1e-3, weight_decay=0.1)
    b1t, b2t = torch.tensor(0.9**3, dtype=torch.float32), torch.tensor(0.999**3, dtype=torch.float32)
    want = fused_adamw(p, g, m, v, b1t, b2t, cfg)
    assert want is not None
    got = fused_adamw(p, g, m, v, b1t, b2t, cfg, in_place=True)
    assert got is not None and [t.data_ptr() for t in got] == [p.data_ptr(), m.data_ptr(), v.data_ptr()]
    assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))
    zero = torch.zeros(10_007)
    first = fused_adamw(p, g, zero, zero, b1t, b2t, cfg, in_place=True)
    assert first is not None and first[1].data_ptr() != zero.data_ptr() and not zero.any()
    assert all(same_bits(a, b) for a, b in zip(first, fused_adamw(p, g, zero, zero, b1t, b2t, cfg), strict=True))


def _ln_inputs(seed: int, rows: int, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Activations over many binades (zeros, subnormals and an all-equal row among them), affine weights and a
    gradient."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, d)) * 2.0 ** rng.integers(-20, 20, (rows, 1))).astype(np.float32)
    x[0] = 0.0
    x[1] = 3.5
    x[2, ::3] = np.float32(1e-41)
    w = rng.standard_normal((1, d)).astype(np.float32)
    b = rng.standard_normal((1, d)).astype(np.float32)
    gy = (rng.standard_normal((rows, d)) * 2.0 ** rng.integers(-10, 10, (rows, 1))).astype(np.float32)
    return tuple(torch.from_numpy(a) for a in (x, w, b, gy))  # type: ignore[return-value]


@pytest.mark.parametrize("d", [1, 7, 320])
def test_fused_layer_norm_equals_the_primitive_sequences(simd: bool, d: int) -> None:
    """LayerNorm's forward (y, xhat, s) and its gradients in one C pass each (the row sums by the sum rule): the
    primitive sequences' bits and the NumPy reference's; gw and gb stay the backend's sums over rows."""
    from gensyn_py.repro.fused import fused_layer_norm, fused_layer_norm_grad_input

    x, w, b, gy = _ln_inputs(d, 41, d)
    got = fused_layer_norm(x, w, b, 1e-5)
    assert got is not None
    want = O.layer_norm_parts(Primitives(), x, w, b)
    assert all(same_bits(a, c) for a, c in zip(got, want, strict=True))
    ref = O.layer_norm_parts(NUMPY, x.numpy(), w.numpy(), b.numpy())
    assert all(same_bits(a, torch.from_numpy(np.asarray(c))) for a, c in zip(got, ref, strict=True))
    _, xhat, s = got
    gx = fused_layer_norm_grad_input(xhat, s, w, gy)
    assert gx is not None
    grads = O.layer_norm_grad(TORCH, xhat, s, w, gy)
    assert same_bits(grads[0], gx)
    assert all(same_bits(a, c) for a, c in zip(grads, O.layer_norm_grad(Primitives(), xhat, s, w, gy), strict=True))
    rgrads = O.layer_norm_grad(NUMPY, xhat.numpy(), s.numpy(), w.numpy(), gy.numpy())
    assert all(same_bits(a, torch.from_numpy(np.asarray(c))) for a, c in zip(grads, rgrads, strict=True))


def test_layer_norm_rows_that_are_not_finite_run_the_primitives() -> None:
    """A row holding NaN or inf: the C pass declines (None) and the primitive sequence, which implements the rule's
    cases, gives the result; the torch backend's answer is that one."""
    from gensyn_py.repro.fused import fused_layer_norm, fused_layer_norm_grad_input

    x, w, b, gy = _ln_inputs(3, 6, 8)
    x[4, 2] = float("inf")
    x[5, 0] = float("nan")
    assert fused_layer_norm(x, w, b, 1e-5) is None
    assert all(same_bits(a, c) for a, c in zip(O.layer_norm_parts(TORCH, x, w, b),
                                               O.layer_norm_parts(Primitives(), x, w, b), strict=True))
    _, xhat, s = O.layer_norm_parts(TORCH, torch.randn(6, 8), w, b)
    gy[1, 1] = float("nan")
    assert fused_layer_norm_grad_input(xhat, s, w, gy) is None
    assert fused_layer_norm(x.t().contiguous().t(), w, b, 1e-5) is None  # not contiguous


@pytest.mark.parametrize("t", [1, 5, 128])
def test_fused_causal_softmax_and_its_gradient_equal_the_primitive_sequences(simd: bool, t: int) -> None:
    """The causal softmax over (batch, heads, T, T) scores and its gradient in one C pass over rows each: the
    primitive sequences' bits (the torch backend takes the C pass) and the NumPy reference's."""
    from gensyn_py.repro.fused import fused_masked_softmax, fused_softmax_grad

    rng = np.random.default_rng(t)
    x = torch.from_numpy((rng.standard_normal((2, 3, t, t)) * 2.0 ** rng.integers(-12, 6, (2, 3, t, 1)))
                         .astype(np.float32))
    x[0, 0, -1] = 0.0  # a row of zeros (a +0 and -0 maximum alike)
    x[0, 1, -1, 0] = -0.0
    gp = torch.from_numpy(rng.standard_normal((2, 3, t, t)).astype(np.float32))
    mask = TORCH.index_map("causal", (t,), x)
    p = fused_masked_softmax(x, mask)
    assert p is not None
    assert same_bits(p, O.masked_softmax(Primitives(), x, mask))
    assert same_bits(O.masked_softmax(TORCH, x, mask), p)
    ref = O.masked_softmax(NUMPY, x.numpy(), NUMPY.index_map("causal", (t,), x.numpy()))
    assert same_bits(p, torch.from_numpy(np.asarray(ref)))
    gx = fused_softmax_grad(p, gp)
    assert gx is not None and same_bits(gx, O.softmax_grad(Primitives(), p, gp))
    assert same_bits(O.softmax_grad(TORCH, p, gp), gx)
    assert same_bits(gx, torch.from_numpy(np.asarray(O.softmax_grad(NUMPY, p.numpy(), gp.numpy()))))


def test_a_softmax_row_the_c_pass_cannot_take_runs_the_primitives() -> None:
    """A kept score that is not finite, or a mask of another shape: the C pass declines and the primitives answer;
    a masked-out infinity changes nothing."""
    from gensyn_py.repro.fused import fused_masked_softmax, fused_softmax_grad

    x = torch.randn(2, 4, 4)
    mask = TORCH.index_map("causal", (4,), x)
    x[0, 0, 3] = float("inf")  # masked out (key 3 > query 0)
    p = fused_masked_softmax(x, mask)
    assert p is not None and same_bits(p, O.masked_softmax(Primitives(), x, mask))
    x[1, 2, 1] = float("nan")  # kept
    assert fused_masked_softmax(x, mask) is None
    assert same_bits(O.masked_softmax(TORCH, x, mask), O.masked_softmax(Primitives(), x, mask))
    assert fused_masked_softmax(x, torch.ones(4, 3, dtype=torch.bool)) is None
    gp = torch.randn(2, 4, 4)
    gp[0, 0, 0] = float("inf")
    assert fused_softmax_grad(p, gp) is None


def test_fused_softmax_under_a_mask_with_holes_equals_the_primitives(simd: bool) -> None:
    """A mask that is not causal (kept entries scattered, each row keeping at least one): the C pass's bits are the
    primitive sequence's, masked-out entries +0."""
    from gensyn_py.repro.fused import fused_masked_softmax

    rng = np.random.default_rng(9)
    mask = torch.from_numpy(rng.random((16, 16)) < 0.3)
    mask[torch.arange(16), torch.from_numpy(rng.integers(0, 16, 16))] = True
    x = torch.from_numpy(rng.standard_normal((3, 16, 16)).astype(np.float32) * 4)
    p = fused_masked_softmax(x, mask)
    assert p is not None and same_bits(p, O.masked_softmax(Primitives(), x, mask))
    assert bool((p[:, ~mask] == 0).all())
