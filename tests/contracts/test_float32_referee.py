"""The referee's arithmetic (contracts/libraries/Float32.sol, ExactDot.sol) agrees bit for bit with the NumPy
reference of the repro rule (gensyn_py/repro/reference.py), on the real compiled contract on anvil.

Every float32 primitive of docs/repro.md section 1, the shared rounding core, and each integer step of the
matmul/sum rule (section 2) runs over thousands of inputs per eth_call through
contracts/test/Float32Harness.sol. Inputs per primitive: the explicit edge list (``float32_kit.EDGES``: ±0,
±inf, NaNs with payloads, min/max subnormal, min normal, max finite, 1±ulp, halves, 2^23, 2^24, ±2^31 and
neighbours; every ordered pair of them for binary ops), uniform random bit patterns, and structured ones
(near the subnormal boundary, near overflow, small integers and halves, short fractions that tie, exponents
0 to 26 apart so add/sub cancel and tie, exact-tie products, divisions by powers of two into the subnormal
range). Results compare bit for bit, except that any NaN equals any NaN (NaN payloads are not defined).

Size: ``GENSYN_FLOAT32_CASES`` is the total number of random inputs across the primitives (default 40,000,
well under a minute here); ``GENSYN_FLOAT32_CASES=1000000`` runs a million. ``GENSYN_FLOAT32_SEED`` picks the
seed (default 13). The edge and structured sets are always included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from gensyn_py.proof.trace import dot_element
from gensyn_py.repro import reference as R
from tests.contracts.float32_kit import (
    EDGE_BITS,
    EDGES,
    U32,
    batched,
    bits_of,
    call,
    close_pairs,
    deploy_harness,
    edge_pairs,
    f32,
    mismatches,
    pack,
    structured,
    tie_products,
    uniform,
)
from tests.contracts.helpers import protocol_errors

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns on NaN inputs; intended

CASES = int(os.environ.get("GENSYN_FLOAT32_CASES", "40000"))
SEED = int(os.environ.get("GENSYN_FLOAT32_SEED", "13"))
# Random inputs per test below (28 tests draw them): CASES in total.
SHARE = max(-(-CASES // 28), 64)
CHECKED: dict[str, int] = {}

BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "maximum": 4, "minimum": 5}
UNARY = {"sqrt": 0, "neg": 1, "abs": 2, "floor": 3}
COMPARE = {"lt": 0, "le": 1, "gt": 2, "ge": 3, "eq": 4, "isnan": 5}


@pytest.fixture(scope="module")
def harness(w3: Any, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Iterator[Any]:
    h = deploy_harness(w3, accounts[0], artifacts)
    yield h
    total = sum(CHECKED.values())
    print(f"\nfloat32 referee: {total} inputs checked over {len(CHECKED)} primitives/steps (CASES={CASES})")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([SEED, *name.encode()])


def _expect_same(name: str, got: Any, want: Any, *inputs: Any) -> None:
    bad = mismatches(np.asarray(got, np.uint32), np.asarray(want, np.uint32))
    CHECKED[name] = CHECKED.get(name, 0) + len(np.asarray(want))
    if len(bad):
        rows = [" ".join(f"{int(np.asarray(x)[i]):#x}" for x in inputs) for i in bad[:8]]
        raise AssertionError(
            f"{name}: {len(bad)} of {len(np.asarray(want))} differ; first: "
            + "; ".join(f"in({r}) got {int(np.asarray(got)[i]):#010x} want {int(np.asarray(want)[i]):#010x}"
                        for r, i in zip(rows, bad[:8], strict=True))
        )


def _ints_equal(name: str, got: Any, want: Any, *inputs: Any) -> None:
    g, w = [int(x) for x in got], [int(x) for x in want]
    CHECKED[name] = CHECKED.get(name, 0) + len(w)
    bad = [i for i in range(len(w)) if g[i] != w[i]]
    assert not bad, f"{name}: {len(bad)} differ; first at inputs {[np.asarray(x)[bad[0]] for x in inputs]}: " \
                    f"got {g[bad[0]]} want {w[bad[0]]}"


def _unary_inputs(rng: np.random.Generator) -> U32:
    return np.concatenate([EDGE_BITS, uniform(rng, SHARE // 2), structured(rng, SHARE - SHARE // 2)])


def _binary_inputs(rng: np.random.Generator, op: str) -> tuple[U32, U32]:
    ea, eb = edge_pairs()
    n = SHARE
    parts_a = [ea, uniform(rng, n // 4), structured(rng, n // 4)]
    parts_b = [eb, uniform(rng, n // 4), structured(rng, n // 4)]
    ca, cb = close_pairs(rng, n // 4)
    parts_a.append(ca)
    parts_b.append(cb)
    if op in ("mul", "div"):
        ta, tb = tie_products(rng, n // 8)
        parts_a.append(ta)
        parts_b.append(tb)
        # Scaling by a power of two into the subnormal range drops low bits: exact ties and sticky cases.
        k = rng.integers(60, 128, n // 8)
        pw = np.ldexp(np.ones(n // 8), -k if op == "mul" else k).astype(np.float32)
        parts_a.append(structured(rng, n // 8))
        parts_b.append(bits_of(pw) | (rng.integers(0, 2, n // 8).astype(np.uint32) << 31))
    return np.concatenate(parts_a).astype(np.uint32), np.concatenate(parts_b).astype(np.uint32)


def _numpy_binary(op: str, a: U32, b: U32) -> U32:
    return bits_of(getattr(R.NUMPY, op)(f32(a), f32(b)))


# ---- float32 primitives ----------------------------------------------------------------------------------


def test_edge_list_covers_every_class() -> None:
    """The explicit edge list holds both zeros, both infinities, NaNs, subnormals, normals and the int32 bounds."""
    x = f32(EDGE_BITS)
    assert {"+0", "-0", "+inf", "-inf", "qnan", "snan", "min_subnormal", "max_subnormal", "max_finite",
            "1+ulp", "1-ulp", "2^31", "-2^31"} <= set(EDGES)
    assert np.isnan(x).sum() >= 3 and np.isinf(x).sum() == 2
    assert ((EDGE_BITS & 0x7F800000) == 0).sum() >= 6  # zeros and subnormals


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_ops_match_numpy(harness: Any, op: str) -> None:
    a, b = _binary_inputs(_rng(op), op)
    (got,) = batched(harness, "binary", [BINARY[op]], [a, b], ["uint32[]"])
    _expect_same(op, got, _numpy_binary(op, a, b), a, b)


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_ops_match_numpy(harness: Any, op: str) -> None:
    rng = _rng(op)
    a = _unary_inputs(rng)
    if op == "sqrt":
        # Perfect squares (exact roots), and positive values across the whole range including subnormals.
        r = rng.integers(1, 1 << 12, SHARE // 4).astype(np.float64)
        sq = np.ldexp(r * r, 2 * rng.integers(-80, 40, SHARE // 4)).astype(np.float32)
        a = np.concatenate([a, bits_of(sq), uniform(rng, SHARE // 4) & 0x7FFFFFFF])
    if op == "floor":
        ints = rng.integers(-(1 << 24), 1 << 24, SHARE // 4).astype(np.float32)
        a = np.concatenate([a, bits_of(ints), bits_of(ints) + 1, bits_of(ints) - 1])  # integers and ±1 ulp
    fn = "abs" if op == "abs" else op
    (got,) = batched(harness, "unary", [UNARY[op]], [a], ["uint32[]"])
    _expect_same(op, got, bits_of(getattr(R.NUMPY, fn)(f32(a))), a)


@pytest.mark.parametrize("op", list(COMPARE))
def test_comparisons_match_numpy(harness: Any, op: str) -> None:
    a, b = _binary_inputs(_rng(op), op)
    same = a.copy()
    a = np.concatenate([a, same, same & 0x7FFFFFFF])  # equal values, and x against |x| (signed zeros too)
    b = np.concatenate([b, same, same | 0x80000000])
    (got,) = batched(harness, "compare", [COMPARE[op]], [a, b], ["bool[]"])
    want = getattr(R.NUMPY, op)(f32(a)) if op == "isnan" else getattr(R.NUMPY, op)(f32(a), f32(b))
    _ints_equal(op, got, np.asarray(want, np.int64), a, b)


def test_where_selects_exactly(harness: Any) -> None:
    rng = _rng("where")
    a, b = _binary_inputs(rng, "where")
    c = rng.integers(0, 2, len(a)).astype(bool)
    (got,) = batched(harness, "whereBatch", [], [c, a, b], ["uint32[]"])
    _expect_same("where", got, bits_of(R.NUMPY.where(c, f32(a), f32(b))), c, a, b)


def test_clamp_matches_numpy(harness: Any) -> None:
    rng = _rng("clamp")
    a = _unary_inputs(rng)
    bounds = [(-104.0, 89.0), (-1.0, 1.0), (1e-30, 3.0), (-3e38, -1e-38), (0.5, 0.75)]
    for lo, hi in bounds:
        lo_b, hi_b = int(bits_of(np.float32(lo))), int(bits_of(np.float32(hi)))
        (got,) = batched(harness, "clampBatch", [], [a], ["uint32[]"], [lo_b, hi_b])
        _expect_same("clamp", got, bits_of(R.NUMPY.clamp(f32(a), lo, hi)), a)


def test_ldexp_matches_numpy(harness: Any) -> None:
    rng = _rng("ldexp")
    a = _unary_inputs(rng)
    field = (a.astype(np.int64) >> 23) & 0xFF
    n = np.where(
        rng.integers(0, 2, len(a)) == 1,
        rng.integers(-450, 451, len(a)),
        # Land near the subnormal boundary or near overflow: where rounding, underflow and overflow happen.
        np.where(rng.integers(0, 2, len(a)) == 1, -field + rng.integers(-30, 5, len(a)),
                 254 - field + rng.integers(-3, 3, len(a))),
    )
    a = np.concatenate([a, a[:64], a[:64]])
    n = np.concatenate([n, np.full(64, 10**12), np.full(64, -(2**200))])  # clamped to ±400
    (got,) = batched(harness, "ldexpBatch", [], [a, n.tolist()], ["uint32[]"])
    n_ref = np.clip([int(v) for v in n], -400, 400)
    _expect_same("ldexp", got, bits_of(R.NUMPY.ldexp(f32(a), n_ref)), a, n_ref)


def test_frexp_matches_numpy(harness: Any) -> None:
    a = _unary_inputs(_rng("frexp"))
    m, e = batched(harness, "frexpBatch", [], [a], ["uint32[]", "int32[]"])
    want_m, want_e = R.NUMPY.frexp(f32(a))
    _expect_same("frexp_m", m, bits_of(want_m), a)
    _ints_equal("frexp_e", e, want_e, a)


def test_to_int32_matches_numpy(harness: Any) -> None:
    rng = _rng("to_int32")
    a = _unary_inputs(rng)
    near = np.ldexp(rng.integers(1 << 23, 1 << 24, SHARE // 4).astype(np.float64), rng.integers(-26, 10, SHARE // 4))
    halves = rng.integers(-(1 << 12), 1 << 12, SHARE // 4) + 0.5
    extra = np.concatenate([near, -near, halves]).astype(np.float32)
    a = np.concatenate([a, bits_of(extra)])
    (got,) = batched(harness, "toInt32Batch", [], [a], ["int32[]"])
    _ints_equal("to_int32", got, R.NUMPY.to_int32(f32(a)), a)


def test_from_int_matches_numpy(harness: Any) -> None:
    rng = _rng("from_int")
    mags = rng.integers(0, 1 << 53, SHARE) >> rng.integers(0, 54, SHARE)  # magnitudes of every bit length
    n = (mags * np.where(rng.integers(0, 2, SHARE) == 1, -1, 1)).tolist()
    # Exact ties: 25 significant bits with the last one set, shifted up; and the range ends.
    ties = [((int(m) | (1 << 24) | 1) << int(s)) for m, s in zip(rng.integers(0, 1 << 24, 256),
                                                                 rng.integers(0, 28, 256), strict=True)]
    n += ties + [-t for t in ties] + [0, 1, -1, (1 << 53) - 1, -((1 << 53) - 1), 1 << 24, (1 << 24) + 1, (1 << 24) + 3]
    (got,) = batched(harness, "fromIntBatch", [], [n], ["uint32[]"])
    _expect_same("from_int", got, bits_of(R.NUMPY.from_int(np.array(n, np.int64))), np.array(n, dtype=object))


def test_rounding_core_matches_round_int(harness: Any) -> None:
    """round(negative, magnitude, exp2) against reference.round_int, magnitudes up to 2^250 and exponents
    across underflow, the subnormal range and overflow; magnitude 0 gives a zero of the given sign."""
    rng = _rng("round")
    size = rng.integers(1, 251, SHARE)
    mags = [int.from_bytes(rng.bytes(32), "big") >> (256 - int(k)) | 1 << (int(k) - 1) for k in size]
    # Exact ties at random widths: a 25-bit odd head followed by a one and zeros.
    mags += [((int(h) | 1 << 24) << 1 | 1) << int(z) for h, z in zip(rng.integers(0, 1 << 24, 256),
                                                                      rng.integers(0, 100, 256), strict=True)]
    exps = [int(e) - m.bit_length() for e, m in zip(rng.integers(-180, 140, len(mags)), mags, strict=True)]
    neg = rng.integers(0, 2, len(mags)).astype(bool).tolist()
    # Boundaries: max finite; its half-ulp tie (odd significand: up to 2^128, so inf); just below that tie;
    # half of the least subnormal (tie to 0); three quarters of it (up); the least normal from below (carry).
    bounds = [((1 << 24) - 1, 104), ((1 << 25) - 1, 103), ((1 << 26) - 3, 102), (1, -150), (3, -151),
              (((1 << 24) - 1) << 1 | 1, -151), ((1 << 23) - 1, -149), (1 << 300 >> 60, -390)]
    mags += [m for m, _ in bounds] + [0, 0]
    exps += [e for _, e in bounds] + [5, -500]
    neg += [False] * len(bounds) + [False, True]
    (got,) = batched(harness, "roundBatch", [], [neg, mags, exps], ["uint32[]"])
    want = [bits_of(np.float32(R.round_int(-m if s else m, e))) for s, m, e in zip(neg, mags, exps, strict=True)]
    want[-1] = np.uint32(0x80000000)  # round(true, 0, e) is -0 (the caller picks a zero's sign)
    _expect_same("round", got, np.array(want, np.uint32), np.array(mags, dtype=object), np.array(exps))


# ---- the integer steps of the matmul rule ------------------------------------------------------------------


def _rows(rng: np.random.Generator, count: int, k: int) -> U32:
    """count rows of k entries: a shared random scale per row plus structured and edge entries, so block
    exponents vary, some entries sit 0 to 30 fields below the block maximum (rounding, ties) and some are
    non-finite (they count as 0)."""
    base = rng.integers(1, 240, (count, 1))
    field = np.clip(base - rng.integers(0, 31, (count, k)), 0, 254)
    frac = rng.integers(0, 1 << 23, (count, k))
    frac = np.where(rng.integers(0, 3, (count, k)) == 0, frac & ~0xFFF, frac)  # short fractions: exact ties
    rows = pack(rng.integers(0, 2, (count, k)), field, frac)
    mix = rng.integers(0, 10, (count, k))
    rows = np.where(mix == 0, structured(rng, count * k).reshape(count, k), rows)
    return np.where(mix == 1, rng.choice(EDGE_BITS, (count, k)), rows).astype(np.uint32)


def test_exponent_field_and_alignment_match_reference(harness: Any) -> None:
    rng = _rng("align")
    k = 16
    rows = _rows(rng, max(SHARE // k, 8), k)
    finite = np.isfinite(f32(rows))
    q, blk = R.aligned(np.where(finite, f32(rows), np.float32(0)), 1)
    x = rows.reshape(-1)
    blocks = np.broadcast_to(blk, rows.shape).reshape(-1)
    (got,) = batched(harness, "alignBatch", [], [x, blocks.tolist()], ["int256[]"])
    _ints_equal("align", got, q.reshape(-1), x, blocks)
    (fields,) = batched(harness, "exponentFieldBatch", [], [x], ["uint256[]"])
    bits = x.astype(np.int64)
    want = np.where(np.isfinite(f32(x)), np.maximum((bits >> 23) & 0xFF, 1), 1)
    _ints_equal("exponent_field", fields, want, x)


def test_alignment_below_the_entry_exponent_reverts(harness: Any, artifacts: dict[str, dict[str, Any]]) -> None:
    """A block exponent below an entry's own is not a block maximum: BelowEntryExponent(127, 100)."""
    with pytest.raises(Exception) as info:
        harness.functions.alignBatch([0x3F800000], [100]).call()  # 1.0 has E = 127 > 100
    revert = protocol_errors(artifacts).from_exception(info.value)
    assert revert is not None and revert.name == "BelowEntryExponent"
    assert revert.error_args == {"entryExponent": 127, "blockExponent": 100}


def test_round_dot_matches_round_array(harness: Any) -> None:
    rng = _rng("round_dot")
    size = rng.integers(0, 63, SHARE)
    n = (rng.integers(0, 1 << 62, SHARE) >> (62 - size)) * np.where(rng.integers(0, 2, SHARE) == 1, -1, 1)
    ea = rng.integers(1, 255, SHARE)
    eb = rng.integers(1, 255, SHARE)
    # Scales where N lands at the subnormal boundary, in it, below it (signed underflow) and at overflow.
    near = np.clip(151 - ea - size + rng.integers(-40, 10, SHARE), 1, 254)  # |value| near 2^-149 .. 2^-126
    eb = np.where(rng.integers(0, 3, SHARE) == 0, near, eb)
    n = np.concatenate([n, [0, 0, -1, 1, -(1 << 40)]])
    ea = np.concatenate([ea, [1, 254, 1, 1, 1]])
    eb = np.concatenate([eb, [1, 254, 1, 1, 1]])
    (got,) = batched(harness, "roundDotBatch", [], [n.tolist(), ea.tolist(), eb.tolist()], ["uint32[]"])
    want = bits_of(R.round_array(n.astype(np.int64), (ea + eb - 300).astype(np.int64)))
    _expect_same("round_dot", got, want, n, ea, eb)
    assert [int(g) for g in got[-5:-2]] == [0, 0, 0x80000000]  # N = 0 is +0; a negative N underflowing is -0


def test_mul_add_and_slices_match_python(harness: Any) -> None:
    rng = _rng("mul_add")
    lim = 1 << 24
    a = rng.integers(-lim, lim + 1, SHARE)
    b = rng.integers(-lim, lim + 1, SHARE)
    n = rng.integers(-(1 << 62), 1 << 62, SHARE)
    n = np.where(np.abs(n) > (1 << 61), n // 2, n)
    (got,) = batched(harness, "mulAddBatch", [], [n.tolist(), a.tolist(), b.tolist()], ["int256[]"])
    _ints_equal("mul_add", got, [int(x) + int(y) * int(z) for x, y, z in zip(n, a, b, strict=True)], n, a, b)
    hi, lo = batched(harness, "splitBatch", [], [a.tolist()], ["int256[]", "int256[]"])
    _ints_equal("split_hi", hi, [int(v) >> 12 for v in a], a)
    _ints_equal("split_lo", lo, [int(v) - ((int(v) >> 12) << 12) for v in a], a)


def test_dot_element_matches_trace(harness: Any) -> None:
    """Whole elements: block exponents, N and the rounded value against proof/trace.dot_element (which runs
    reference.aligned and reference.matmul); a non-finite row or column is compared on N and blocks only."""
    rng = _rng("dot")
    checked = 0
    while checked < max(SHARE, 64):
        k = int(rng.integers(1, 65))
        row, col = _rows(rng, 2, k)
        if rng.integers(0, 4) == 0:
            col = np.full(k, 0x3F800000, np.uint32)  # a sum: the matmul rule against ones
        want = dot_element(f32(row), f32(col))
        value, n, block_a, block_b = harness.functions.dotElement(row.tolist(), col.tolist()).call()
        assert (n, block_a, block_b) == (want.n, want.block_a, want.block_b)
        hi_lo = [harness.functions.splitBatch(list(want.a)).call()] if checked < 256 else []
        for hi, lo in hi_lo:
            assert tuple(hi) == want.a_hi and tuple(lo) == want.a_lo
        if not want.special:
            assert not len(mismatches(np.array([value], np.uint32), bits_of(np.float32(want.value)).reshape(1)))
        checked += k
    CHECKED["dot"] = checked


def test_gas_probe_runs_every_op(harness: Any, artifacts: dict[str, dict[str, Any]]) -> None:
    """Float32Harness.gasOf (bench/referee_gas.py's measurement) runs each of its 24 ops and refuses others."""
    one = [0x3FC00000]  # 1.5
    for op in range(24):
        used, _sink = call(harness, "gasOf", [op, one, one, [130]], ["uint256[]", "uint256"])
        assert 0 < used[0] < 20_000
    with pytest.raises(Exception) as info:
        harness.functions.gasOf(24, one, one, [0]).call()
    revert = protocol_errors(artifacts).from_exception(info.value)
    assert revert is not None and revert.name == "HarnessUnknownOp"
