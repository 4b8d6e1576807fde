"""The Python side of the on-chain trace openings, without a chain: the operand maps the contract mirrors read the
same elements as the recomputation (`_dot_operands`), op openings rebuild the trace's leaves, and bisection over
two prefix-sum sequences ends on one multiply-add."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from gensyn_py.errors import VerificationError
from gensyn_py.proof.onchain_trace import DOT_OPS, dot_operands, open_op
from gensyn_py.proof.prefix_sums import bisect, int256, open_partial, prefix_root, verify_partial
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.trace import Trace, TraceError, _dot_operands, recompute_element
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, tiny_spec


@cache
def traced(family: str) -> Trace:
    t = Trainer(tiny_spec(family, mode="repro"), dataset_for(family), 0, 0, "cpu")
    t.run(1)
    return trace_step(t)


def _same(x: object, y: object) -> bool:
    return bool(np.float32(x).tobytes() == np.float32(y).tobytes())


@pytest.mark.parametrize("family", ["mlp", "transformer"])
def test_operand_maps_read_the_elements_the_recomputation_reads(family: str) -> None:
    tr = traced(family)
    for i, op in enumerate(tr.ops):
        if i % 50 == 0:
            assert open_op(tr, i).leaf() == tr.op_leaf(i)
        if op.code not in DOT_OPS:
            continue
        out = tr.values[i]
        e = out.size // 2 + 1 if out.size > 1 else 0
        ins = [tr.values[j] for j in op.inputs]
        row, col = _dot_operands(op, ins, np.unravel_index(e, out.shape))
        for k in sorted({0, len(row) // 2, len(row) - 1}):
            d = dot_operands(tr, i, e, k)
            assert d.length == len(row)
            a = tr.values[d.a_tensor].reshape(-1)[d.a_index]
            if op.code == "index_sum":
                a = np.float32(a == e // out.shape[1])
            b = np.float32(1) if d.b_tensor is None else tr.values[d.b_tensor].reshape(-1)[d.b_index]
            assert _same(row[k], a) and _same(col[k], b), (family, op.code, k)
    mm = next(i for i, op in enumerate(tr.ops) if op.code == "matmul")
    with pytest.raises(TraceError):
        dot_operands(tr, mm, 0, 10**6)
    with pytest.raises(TraceError):
        dot_operands(tr, mm, tr.values[mm].size, 0)


def test_bisection_ends_where_the_prefix_sums_first_part() -> None:
    tr = traced("mlp")
    i = next(i for i, op in enumerate(tr.ops) if op.code == "matmul")
    d = recompute_element(tr, i, 3).detail
    assert d is not None
    for bad in (0, 1, len(d.partial) // 2, len(d.partial) - 1):
        theirs = [p + (7 if k >= bad else 0) for k, p in enumerate(d.partial)]
        assert bisect(d.partial, theirs) == bad
    assert bisect(d.partial, d.partial) is None
    root = prefix_root(d.partial)
    p = open_partial(d.partial, 2)
    assert verify_partial(root, len(d.partial), p)
    assert not verify_partial(root, 2, p)  # k out of range for the claimed length
    with pytest.raises(VerificationError):
        prefix_root([])
    assert int256(-1) == b"\xff" * 32
    with pytest.raises(ValueError):
        int256(2**255)
