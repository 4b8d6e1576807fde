"""Openings of a REAL traced training step verify on-chain (TraceProofs through its harness), and lies do not.

The traces are the tiny repro trainers' next steps (`trace_step`): the MLP (2-D matmuls, sums, float32 /
int32 / int64 / bool tensors) and the transformer (batched 3-D matmuls, index_sum). Every call is a static
call to pure functions: no state, no money moves, so there is nothing to conserve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np
import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.crypto.merkle import merkle_root
from gensyn_py.proof.onchain_trace import (
    FLOAT32_ONE,
    ElementOpening,
    TensorRef,
    dot_operands,
    dot_partials,
    dot_step_args,
    element_bits,
    open_dot_step,
    open_element,
    open_op,
    opening_of,
    ref_of,
    tensor_ref,
)
from gensyn_py.proof.prefix_sums import bisect, open_partial, partial_leaf, prefix_root, verify_partial
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.tensor_commit import tensor_leaves
from gensyn_py.proof.trace import Trace, recompute_element
from gensyn_py.train.trainer import Trainer
from tests.contracts.helpers import deploy_artifact
from tests.unit.trainkit import dataset_for, tiny_spec


@cache
def traced(family: str) -> Trace:
    t = Trainer(tiny_spec(family, mode="repro"), dataset_for(family), 0, 0, "cpu")
    t.run(1)  # one step in, so the optimizer state is part of the trace
    return trace_step(t)


def first(tr: Trace, code: str, pred: Any = lambda tr, i: True) -> int:
    return next(i for i, op in enumerate(tr.ops) if op.code == code and pred(tr, i))


@pytest.fixture(scope="module")
def harness(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    return deploy_artifact(w3, accounts[0], artifacts["TraceProofsHarness"])


@pytest.fixture(scope="module")
def errors(artifacts: dict[str, dict[str, Any]]) -> ErrorDecoder:
    return ErrorDecoder([artifacts["TraceProofsHarness"]["abi"]])


def reverts(errors: ErrorDecoder, fn: Any) -> str:
    """The name of the custom error a static call reverts with."""
    try:
        fn.call()
    except Exception as exc:  # web3 raises one of several types; the decoder digs the data out of any
        err = errors.from_exception(exc)
        assert err is not None, exc
        return err.name
    raise AssertionError("the call did not revert")


def assert_no_panic_on_absurd_words(errors: ErrorDecoder, call: Callable[[bytes], Any], move: bytes) -> None:
    """Each word of a packed move replaced by the largest count (a depth, a dim, an element): the referee reads it
    and returns or reverts by name, never with a panic (no count is scaled before it is bounded)."""
    for at in range(len(move) // 32):
        lie = move[:32 * at] + b"\xff" * 32 + move[32 * (at + 1):]
        try:
            call(lie).call()
        except Exception as exc:  # web3 raises several types; the decoder reads any
            err = errors.from_exception(exc)
            assert err is not None and err.name != "Panic", (at, exc)


def bits_of(harness: Any, tr: Trace, tid: int, e: int) -> int:
    return int(harness.functions.elementBits(tensor_ref(tr, tid).as_arg(), open_element(tr, tid, e).as_arg()).call())


# ---- op leaves ----


def test_op_leaves_of_a_real_trace_verify_against_its_root(harness: Any) -> None:
    tr = traced("mlp")
    picks = {0, first(tr, "matmul"), first(tr, "sum"), first(tr, "gather"), first(tr, "cat"), len(tr.ops) - 1}
    for i in sorted(picks):
        op = open_op(tr, i)
        assert op.leaf() == tr.op_leaf(i)
        assert bytes(harness.functions.opLeaf(op.as_arg()).call()) == tr.op_leaf(i)
        assert harness.functions.verifyOp(tr.root, op.as_arg()).call()


def test_op_leaf_with_one_input_root_changed_or_moved_does_not_verify(harness: Any) -> None:
    tr = traced("mlp")
    i = first(tr, "matmul")
    op = open_op(tr, i)
    (a, ra), b = op.inputs
    changed = replace(op, inputs=((a, keccak256(ra)), b))
    assert not harness.functions.verifyOp(tr.root, changed.as_arg()).call()
    swapped = replace(op, inputs=(b, (a, ra)))  # the same roots, in the other order
    assert not harness.functions.verifyOp(tr.root, swapped.as_arg()).call()
    moved = replace(op, index=i + 1)  # the index is inside the leaf: a leaf proves one position
    assert not harness.functions.verifyOp(tr.root, moved.as_arg()).call()
    recoded = replace(op, code_hash=keccak256(b"add"))
    assert not harness.functions.verifyOp(tr.root, recoded.as_arg()).call()


# ---- elements ----


def test_elements_of_every_dtype_open_with_their_bits(harness: Any) -> None:
    tr = traced("mlp")
    seen: set[str] = set()
    for tid, v in enumerate(tr.values):
        dt = str(v.dtype)
        if dt in seen or v.size == 0:
            continue
        seen.add(dt)
        ref = tensor_ref(tr, tid)
        data_root = merkle_root(tensor_leaves(v))
        assert bytes(harness.functions.tensorRoot(ref.dtype, list(ref.shape), data_root).call()) == ref.root
        for e in sorted({0, v.size // 2, v.size - 1}):
            got = bits_of(harness, tr, tid, e)
            assert got == element_bits(v, e)
            assert got.to_bytes(v.dtype.itemsize, "little") == v.reshape(-1)[e : e + 1].tobytes()
    assert seen == {"float32", "int32", "int64", "bool"}


def test_element_openings_that_lie_revert_with_named_errors(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("mlp")
    tid = first(tr, "matmul")
    v = tr.values[tid]
    e = v.size - 3  # far from element 0: another chunk
    ref, good = tensor_ref(tr, tid), open_element(tr, tid, e)

    def call(r: TensorRef, o: ElementOpening) -> str:
        return reverts(errors, harness.functions.elementBits(r.as_arg(), o.as_arg()))

    flipped = bytes([good.chunk[0] ^ 1]) + good.chunk[1:]
    assert call(ref, replace(good, chunk=flipped)) == "TensorRootMismatch"  # a wrong chunk
    assert call(ref, replace(open_element(tr, tid, 0), element=e)) == "WrongChunkIndex"  # a wrong index
    assert call(ref, replace(good, chunk_index=0)) == "WrongChunkIndex"
    assert call(ref, replace(good, proof=good.proof[1:])) == "TensorRootMismatch"
    other = next(j for j in range(len(tr.values)) if j != tid and tr.values[j].shape == v.shape
                 and tr.values[j].dtype == v.dtype and tr.tensor_roots[j] != ref.root)
    assert call(ref, open_element(tr, other, e)) == "TensorRootMismatch"  # a proof for another tensor
    assert call(replace(ref, shape=(v.size,)), good) == "TensorRootMismatch"  # a lied header (same elements)
    assert call(ref, replace(good, element=v.size)) == "ElementOutOfRange"
    assert call(replace(ref, dtype=9), good) == "UnknownDtype"
    # The padding after the last element is in the committed chunk, but it is no element.
    b = next(j for j, x in enumerate(tr.values) if x.nbytes % 32)
    assert call(tensor_ref(tr, b), replace(open_element(tr, b, tr.values[b].size - 1),
                                           element=tr.values[b].size)) == "ElementOutOfRange"


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "bool"])
def test_tensors_of_odd_sizes_and_a_scalar_open_every_element(harness: Any, errors: ErrorDecoder, dtype: str) -> None:
    """Sizes whose chunk trees promote odd nodes, a partial last chunk, a scalar; an empty tensor opens nothing."""
    rng = np.random.default_rng(7)
    for shape in [(), (1,), (3, 3), (9,), (5, 7), (2, 3, 11)]:
        arr = (rng.integers(-(2**40), 2**40, size=shape) if dtype != "bool" else rng.random(shape) < 0.5)
        arr = np.asarray(arr).astype(dtype) if dtype != "float32" else np.asarray(rng.standard_normal(shape), dtype)
        ref = ref_of(arr)
        picks = range(arr.size) if arr.size <= 9 else {0, 7, 8, 31, 32, arr.size // 2, arr.size - 1}
        for e in sorted(picks):  # chunk boundaries: 8 float32 / int32, 4 int64, 32 bool per chunk
            got = harness.functions.elementBits(ref.as_arg(), opening_of(arr, e).as_arg()).call()
            assert got == element_bits(arr, e)
    empty = np.zeros((0, 4), dtype)
    assert reverts(errors, harness.functions.elementBits(ref_of(empty).as_arg(), opening_of(np.zeros(1, dtype), 0)
                                                         .as_arg())) == "ElementOutOfRange"


# ---- prefix sums and dot steps ----


def test_prefix_sum_commitment_matches_and_opens_at_chosen_k(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("mlp")
    i = first(tr, "matmul", lambda tr, i: tr.values[tr.ops[i].inputs[0]].shape[-1] > 32)
    partial = dot_partials(tr, i, 5)
    root, n = prefix_root(partial), len(partial)
    for k in (0, 1, n // 2, n - 1):
        p = open_partial(partial, k)
        assert bytes(harness.functions.partialLeaf(k, partial[k]).call()) == partial_leaf(k, partial[k])
        assert verify_partial(root, n, p)
        assert harness.functions.verifyPartial(root, n, p.as_arg()).call()
        assert not harness.functions.verifyPartial(root, n, replace(p, value=p.value + 1).as_arg()).call()
    assert reverts(errors, harness.functions.verifyPartial(root, n, replace(p, k=n).as_arg())) == "PartialOutOfRange"
    negative = [-5, -(2**200), 3]  # int256 leaves: negative partial sums round-trip
    assert harness.functions.verifyPartial(prefix_root(negative), 3, open_partial(negative, 1).as_arg()).call()


def check_step(harness: Any, tr: Trace, i: int, e: int, k: int) -> None:
    """Step k of element e opens on-chain to the operands and prefix sums of the Python recomputation."""
    d = recompute_element(tr, i, e).detail
    assert d is not None
    ops = dot_operands(tr, i, e, k)
    got = harness.functions.openDotStep(*dot_step_args(tr, i, e, open_dot_step(tr, i, e, k))).call()
    a_bits, b_bits, prev, cur, length = got
    assert length == len(d.partial) == ops.length
    assert (prev, cur) == ((d.partial[k - 1] if k else 0), d.partial[k])
    assert cur - prev == d.a[k] * d.b[k]  # one integer multiply-add
    a_raw = element_bits(tr.values[ops.a_tensor], ops.a_index)
    if tr.ops[i].code == "index_sum":
        a_raw = FLOAT32_ONE if a_raw == e // tr.values[i].shape[1] else 0
    assert a_bits == a_raw
    want_b = FLOAT32_ONE if ops.b_tensor is None or ops.b_index is None else element_bits(tr.values[ops.b_tensor],
                                                                                          ops.b_index)
    assert b_bits == want_b


def test_matmul_element_operands_and_prefix_sums_open_end_to_end(harness: Any) -> None:
    tr = traced("mlp")
    i = first(tr, "matmul", lambda tr, i: tr.values[tr.ops[i].inputs[0]].shape[-1] > 32)
    e = 5
    length = tr.values[tr.ops[i].inputs[0]].shape[-1]
    for k in (0, 1, length // 2, length - 1):
        check_step(harness, tr, i, e, k)
    # (c) of the game: the output element itself opens against the op leaf's output root
    op = open_op(tr, i)
    out = TensorRef(op.output_root, 1, tr.values[i].shape)
    bits = harness.functions.elementBits(out.as_arg(), open_element(tr, i, e).as_arg()).call()
    assert bits == element_bits(tr.values[i], e)


def test_sum_batched_matmul_and_index_sum_steps_open(harness: Any) -> None:
    mlp, tf = traced("mlp"), traced("transformer")
    for dim in (0, 1):
        i = first(mlp, "sum", lambda tr, i, dim=dim: tr.ops[i].attrs == (dim,))
        check_step(harness, mlp, i, mlp.values[i].size - 1, mlp.values[mlp.ops[i].inputs[0]].shape[dim] - 1)
    i = first(tf, "matmul", lambda tr, i: tr.values[i].ndim == 3)
    check_step(harness, tf, i, tf.values[i].size - 7, 3)
    i = first(tf, "index_sum")
    idx = tf.values[tf.ops[i].inputs[0]]
    cols = tf.values[i].shape[1]
    e = int(idx[0]) * cols + 2  # a row that token 0 is a member of: a_0 = 1
    check_step(harness, tf, i, e, 0)
    check_step(harness, tf, i, (e + cols) % tf.values[i].size, 0)  # another row: a_0 = 0


def test_dot_steps_that_lie_revert_with_named_errors(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("mlp")
    i = first(tr, "matmul", lambda tr, i: tr.values[tr.ops[i].inputs[0]].shape[-1] > 32)
    e, k = 5, 7
    step = open_dot_step(tr, i, e, k)
    root, op, ins, rows, _, _ = dot_step_args(tr, i, e, step)

    def call(*args: Any) -> str:
        return reverts(errors, harness.functions.openDotStep(*args))

    a, b = step.a, step.b
    # an operand of another step, or of another element: proven in its tensor, but not the one step k reads
    assert call(root, op, ins, rows, e, replace(step, a=open_element(tr, tr.ops[i].inputs[0], a.element + 1))
                .as_arg()) == "WrongOperand"
    assert call(root, op, ins, rows, e, replace(step, b=open_element(tr, tr.ops[i].inputs[1], b.element + 1))
                .as_arg()) == "WrongOperand"
    partial = dot_partials(tr, i, e)
    assert call(root, op, ins, rows, e, replace(step, prev=open_partial(partial, k - 2)).as_arg()) == "PartialNotProven"
    forged = replace(step.cur, value=step.cur.value + 1)
    assert call(root, op, ins, rows, e, replace(step, cur=forged).as_arg()) == "PartialNotProven"
    assert call(root, op, ins, rows, e, replace(step, k=len(partial)).as_arg()) == "PartialOutOfRange"
    assert call(root, op, ins, rows, tr.values[i].size, step.as_arg()) == "ElementOutOfRange"
    bad_op = (op[0], op[1], op[2], [(op[3][0][0], keccak256(op[3][0][1])), op[3][1]], op[4], op[5])
    assert call(root, bad_op, ins, rows, e, step.as_arg()) == "OpNotInTrace"  # one input root changed
    bad_ins = [ins[0], (keccak256(ins[1][0]), ins[1][1], ins[1][2])]
    assert call(root, op, bad_ins, rows, e, step.as_arg()) == "InputRootMismatch"
    g = first(tr, "gather")  # a committed op that is no dot op
    assert call(*dot_step_args(tr, g, 0, step)) == "NotADotOp"
    tf = traced("transformer")
    j = first(tf, "index_sum")
    s = open_dot_step(tf, j, 3, 0)
    args = list(dot_step_args(tf, j, 3, s))
    args[3] += 1  # a row count other than the committed attribute
    assert call(*args) == "BadDotInputs"


def test_bisection_over_two_prefix_sum_roots_ends_on_one_multiply_add(harness: Any) -> None:
    """A solver that got one product wrong commits other prefix sums; bisection over the two roots' openings
    finds that step, where the contract holds the agreed partial[k-1], the proven a_k, b_k and both partial[k]."""
    tr = traced("mlp")
    i = first(tr, "matmul", lambda tr, i: tr.values[tr.ops[i].inputs[0]].shape[-1] > 32)
    e = 5
    honest = dot_partials(tr, i, e)
    bad_k = len(honest) // 3
    cheat = tuple(p + (1 if k >= bad_k else 0) for k, p in enumerate(honest))
    assert prefix_root(cheat) != prefix_root(honest)
    k = bisect(honest, cheat)
    assert k == bad_k
    d = recompute_element(tr, i, e).detail
    assert d is not None
    mine = harness.functions.openDotStep(*dot_step_args(tr, i, e, open_dot_step(tr, i, e, k))).call()
    theirs = harness.functions.openDotStep(*dot_step_args(tr, i, e, open_dot_step(tr, i, e, k, cheat))).call()
    assert mine[:3] == theirs[:3]  # same operands, same agreed partial[k-1]
    assert mine[3] - mine[2] == d.a[k] * d.b[k] != theirs[3] - theirs[2]  # only the cheater's step is wrong


def test_gas_of_one_opening_stays_small(harness: Any) -> None:
    """Each check is a few hashes per tree level: far below what a dispute move can spend."""
    tr = traced("mlp")
    i = first(tr, "matmul")
    gas_elem = harness.functions.elementBits(tensor_ref(tr, i).as_arg(), open_element(tr, i, 3).as_arg()).estimate_gas()
    gas_op = harness.functions.verifyOp(tr.root, open_op(tr, i).as_arg()).estimate_gas()
    assert gas_elem < 60_000 and gas_op < 60_000
