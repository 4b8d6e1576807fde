"""The last move over an elementwise op, recomputed on-chain (`contracts/libraries/ElementStep.sol`).

On REAL traced training steps (the tiny MLP with SGD and AdamW, the tiny transformer with AdamW: every
elementwise op the repro step records, exp's clamp, floor and ldexp_f, log's frexp, GELU's erf, AdamW's sqrt
and div...), the contract proves the op leaf, the input elements an output element reads and that element,
recomputes it with Float32 and agrees with the recorded bits; a forged output element is caught; every way of
lying about the opening reverts by name. `compute` is also checked against `reference.execute` on random and
edge inputs for every elementwise op, `broadcastIndex` against `trace.bcast`, and the clamp attributes'
`float.hex()` against Python's. Static calls to pure functions: no money moves.
"""

from __future__ import annotations

import random
from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np
import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.proof.onchain_trace import double_bits, element_bits, element_check, open_element, open_op, tensor_ref
from gensyn_py.proof.packed_moves import pack_element_check
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.trace import Trace, bcast
from gensyn_py.repro import reference as R
from gensyn_py.repro.opset import ELEMENTWISE
from gensyn_py.train.trainer import Trainer
from tests.contracts.helpers import deploy_artifact
from tests.contracts.test_trace_proofs import assert_no_panic_on_absurd_words, reverts
from tests.unit.trainkit import dataset_for, tiny_spec

ADAMW = {"name": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
CASES = [("mlp", "adamw"), ("transformer", "adamw")]  # SGD records a subset of AdamW's ops
DTYPES = {"float32": 1, "int32": 2, "int64": 3, "bool": 4}


@cache
def traced(family: str, optimizer: str) -> Trace:
    over: dict[str, Any] = {"mode": "repro"}
    if optimizer == "adamw":
        over["optimizer"] = ADAMW
    t = Trainer(tiny_spec(family, **over), dataset_for(family), 0, 0, "cpu")
    t.run(1)  # one step in, so the optimizer state is part of the trace
    return trace_step(t)


@pytest.fixture(scope="module")
def harness(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    return deploy_artifact(w3, accounts[0], artifacts["ElementStepHarness"])


@pytest.fixture(scope="module")
def errors(artifacts: dict[str, dict[str, Any]]) -> ErrorDecoder:
    return ErrorDecoder([artifacts["ElementStepHarness"]["abi"]])


def checked(harness: Any, tr: Trace, i: int, element: int) -> Any:
    """The referee's check of output element `element` of elementwise op `i`, sent packed."""
    return harness.functions.check(tr.root, pack_element_check(element_check(tr, i, element))).call()


def test_every_elementwise_op_of_real_steps_is_recomputed_on_chain(harness: Any) -> None:
    rng = random.Random(5)
    seen: set[str] = set()
    for family, optimizer in CASES:
        tr = traced(family, optimizer)
        by_code: dict[str, list[int]] = {}
        for i, op in enumerate(tr.ops):
            if op.code in ELEMENTWISE and tr.values[i].size:
                by_code.setdefault(op.code, []).append(i)
        for code, ops in by_code.items():
            for i in rng.sample(ops, 1):  # one op of each code and one element of it per step: hashing is slow
                for element in rng.sample(range(tr.values[i].size), 1):
                    expected, committed, same = checked(harness, tr, i, element)
                    assert same, (family, optimizer, code, i, element, hex(expected), hex(committed))
                    assert committed == element_bits(tr.values[i], element)
                    seen.add(code)
    # the steps record (nearly) the whole elementwise set: each of these was recomputed at least once
    assert seen >= {"add", "sub", "mul", "div", "sqrt", "neg", "clamp", "gt", "where", "floor",
                    "ldexp_f", "frexp_m", "frexp_e", "abs", "lt", "isnan"}, sorted(seen)


def test_a_forged_output_element_is_caught(harness: Any) -> None:
    """The solver's trace with one element of one op's output changed by one ulp: its own opening proves
    (the roots are the solver's), and the recomputation from the (honest) inputs disagrees."""
    tr = traced("mlp", "adamw")
    i = next(i for i, op in enumerate(tr.ops) if op.code == "sqrt")
    values = list(tr.values)
    forged = values[i].copy()
    forged.reshape(-1).view(np.uint32)[3] ^= 1
    values[i] = forged
    liar = replace(tr, values=values)
    expected, committed, same = checked(harness, liar, i, 3)
    assert not same and committed == element_bits(forged, 3) and expected == element_bits(tr.values[i], 3)
    assert checked(harness, liar, i, 4)[2]  # the untouched element holds


def test_lies_about_the_opening_revert_by_name(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("transformer", "adamw")
    add = next(i for i, op in enumerate(tr.ops) if op.code == "add" and tr.values[op.inputs[1]].ndim == 2
               and tr.values[op.inputs[1]].shape[0] == 1 and tr.values[i].shape[0] > 1)  # a broadcast add
    op, ins, in_els, out, out_el, bounds = element_check(tr, add, 5)

    def check(root: bytes, c: tuple[Any, ...]) -> Any:
        return harness.functions.check(root, pack_element_check(c))

    moved = (in_els[1][0] + 1, *in_els[1][1:])  # the broadcast operand opened at another element
    assert reverts(errors, check(tr.root, (op, ins, [in_els[0], moved], out, out_el, bounds))) == "WrongOperand"
    assert reverts(errors, check(keccak256(b"other"), (op, ins, in_els, out, out_el, bounds))) == "OpNotInTrace"
    # The roots are the op leaf's: a header other than the committed input's does not hash to its root.
    other = (ins[1][0], 2, ins[1][2])  # int32: the same item size, another header
    assert reverts(errors, check(tr.root, (op, [ins[0], other], in_els, out, out_el, bounds))) == "TensorRootMismatch"
    assert reverts(errors, check(tr.root, (op, ins[:1], in_els[:1], out, out_el, bounds))) == "Truncated"
    assert reverts(errors, check(tr.root, (op, ins, in_els, (out[0], 2, out[2]), out_el, bounds))) == "OutputMismatch"
    assert reverts(errors, harness.functions.check(tr.root, pack_element_check(
        (op, ins, in_els, out, out_el, bounds))[:-33])) == "Truncated"  # a move cut inside its last word

    clamp = next(i for i, o in enumerate(tr.ops) if o.code == "clamp")
    c_op, c_ins, c_els, c_out, c_el, c_bounds = element_check(tr, clamp, 0)
    lie = [c_bounds[0], double_bits(1000.0)]  # a looser bound than the one committed
    assert reverts(errors, check(tr.root, (c_op, c_ins, c_els, c_out, c_el, lie))) == "BadAttributes"

    mm = next(i for i, o in enumerate(tr.ops) if o.code == "matmul")
    m_op = open_op(tr, mm).as_arg()
    m_ins = [tensor_ref(tr, j).as_arg() for j in tr.ops[mm].inputs]
    m_els = [open_element(tr, j, 0).as_arg() for j in tr.ops[mm].inputs]
    m_arg = (m_op, m_ins, m_els, tensor_ref(tr, mm).as_arg(), open_element(tr, mm, 0).as_arg(), [0, 0])
    assert reverts(errors, check(tr.root, m_arg)) == "NotElementwise"
    assert reverts(errors, harness.functions.broadcastBatch([2, 3], [4], [0])) == "BadBroadcast"


EDGE_F32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001,
            0x807FFFFF, 0x7F7FFFFF, 0x4B000000, 0x4F000000, 0xCF000001, 0x3F000000, 0x40490FDB, 0xC2D00000]


def _f32(rng: random.Random, n: int) -> list[int]:
    out = list(EDGE_F32)
    while len(out) < n:
        r = rng.random()
        if r < 0.5:
            out.append(rng.getrandbits(32))
        else:  # moderate magnitudes, where rounding and integer parts matter
            out.append(int(np.float32(rng.uniform(-300, 300)).view(np.uint32)))
    return out[:n]


def _as(bits: list[int], dtype: str) -> np.ndarray[Any, Any]:
    if dtype == "float32":
        return np.array(bits, dtype=np.uint32).view(np.float32)
    if dtype == "bool":
        return np.array(bits, dtype=bool)
    return np.array([b - (1 << (8 * np.dtype(dtype).itemsize)) if b >> (8 * np.dtype(dtype).itemsize - 1) else b
                     for b in bits], dtype=dtype)


ARGS: dict[str, tuple[str, ...]] = {
    **{c: ("float32", "float32") for c in ("add", "sub", "mul", "div", "maximum", "minimum", "lt", "gt", "eq",
                                             "ldexp_f")},
    **{c: ("float32",) for c in ("sqrt", "neg", "abs", "floor", "isnan", "to_int32", "frexp_m", "frexp_e",
                                 "clamp")},
    "where": ("bool", "float32", "float32"), "from_int": ("int64",), "ldexp": ("float32", "int32"),
}


@pytest.mark.parametrize("code", sorted(ARGS))
def test_compute_matches_the_reference_on_random_and_edge_inputs(harness: Any, code: str) -> None:
    rng = random.Random(code)
    n = 160
    cols: list[list[int]] = []
    for dtype in ARGS[code]:
        if dtype == "float32":
            col = _f32(rng, n)
            if code == "ldexp_f":  # the exponent operand: integral floats, as floor produces them
                col = [int(np.float32(rng.randint(-450, 450)).view(np.uint32)) for _ in range(n)]
        elif dtype == "bool":
            col = [rng.getrandbits(1) for _ in range(n)]
        elif dtype == "int32":
            col = [rng.randint(-500, 500) % 2**32 for _ in range(n)]
        else:
            col = [rng.randint(-2**53 + 1, 2**53 - 1) % 2**64 for _ in range(n)]
        cols.append(col)
    attrs = (-104.0, 89.0) if code == "clamp" else ()
    bounds = [double_bits(-104.0), double_bits(89.0)] if code == "clamp" else [0, 0]
    rows = [list(r) for r in zip(*cols, strict=True)]
    got = harness.functions.computeBatch(Web3.keccak(text=code), rows, [DTYPES[d] for d in ARGS[code]],
                                         bounds).call()
    want = np.asarray(R.execute(code, [_as(c, d) for c, d in zip(cols, ARGS[code], strict=True)], attrs))
    for k in range(n):
        w = want.reshape(-1)[k]
        g = got[k]
        if want.dtype == np.float32 and np.isnan(w):
            assert np.isnan(np.uint32(g).view(np.float32)), (code, [c[k] for c in cols])
        else:
            assert g == element_bits(want.reshape(-1), k), (code, [hex(c[k]) for c in cols], hex(g))


def test_broadcast_index_is_numpy_broadcasting(harness: Any) -> None:
    rng = random.Random(3)
    for out_shape, in_shape in [((4, 6), (1, 6)), ((4, 6), (6,)), ((4, 6), (4, 1)), ((4, 6), ()), ((2, 3, 5), (3, 1)),
                                ((2, 3, 5), (2, 3, 5)), ((7,), (1,))]:
        elements = rng.sample(range(int(np.prod(out_shape))), min(10, int(np.prod(out_shape))))
        got = harness.functions.broadcastBatch(list(out_shape), list(in_shape), elements).call()
        for e, g in zip(elements, got, strict=True):
            idx = bcast(np.unravel_index(e, out_shape), in_shape)
            assert g == (int(np.ravel_multi_index(idx, in_shape)) if in_shape else 0), (out_shape, in_shape, e)


def test_clamp_bounds_are_written_as_python_writes_them(harness: Any) -> None:
    rng = random.Random(9)
    values = [0.0, -0.0, 1.0, -104.0, 89.0, 0.5, 1e-310, -5e-324, 1.7976931348623157e308, 3.4028235e38, 1e-45]
    values += [rng.uniform(-1e6, 1e6) for _ in range(20)] + [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300)
                                                            for _ in range(20)]
    for v in values:
        text, f32 = harness.functions.double(double_bits(v)).call()
        assert text == v.hex(), v
        with np.errstate(over="ignore"):  # doubles beyond float32's range round to inf, as the contract's do
            want = np.float32(v)
        assert f32 == int(want.view(np.uint32)), v


def test_a_move_cut_short_or_with_an_absurd_count_reverts_by_name(harness: Any, errors: ErrorDecoder) -> None:
    """Whatever a stranger sends as a packed move, the referee reverts with a named error: a move cut at any word
    or inside one, and counts (a path's depth, a header's dims) as large as a word holds, which must not wrap."""
    tr = traced("mlp", "adamw")
    i = next(i for i, op in enumerate(tr.ops) if op.code == "where")
    move = pack_element_check(element_check(tr, i, 1))
    names = {reverts(errors, harness.functions.check(tr.root, move[:cut]))
             for cut in [*range(0, len(move), 32), 33, len(move) - 1]}
    assert names <= {"Truncated", "NotElementwise"}, names  # cut inside the op's code word: no known op
    assert_no_panic_on_absurd_words(errors, lambda lie: harness.functions.check(tr.root, lie), move)
