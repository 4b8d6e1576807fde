"""The last move over one multiply-add of a dot element, on-chain (`contracts/libraries/DotElementStep.sol`).

On REAL traced steps (the tiny MLP: 2-D matmuls and sums; the tiny transformer: batched matmuls and index_sum),
the contract proves step k's operands and the block exponents' witnesses, recomputes partial[k] from the agreed
partial[k-1] and agrees with the honest prefix sums; a solver's prefix sums with one wrong multiply-add are
caught at that step; the full sum rounds to the recorded element; a block exponent claimed too high has no
witness and one claimed too low is refuted by the row's largest entry. Static calls to pure functions.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.proof.onchain_trace import dot_move, dot_partials, element_bits, exponent_field
from gensyn_py.proof.packed_moves import pack_dot_step
from gensyn_py.proof.trace import Trace, recompute_element
from tests.contracts.helpers import deploy_artifact
from tests.contracts.test_element_step import traced
from tests.contracts.test_trace_proofs import assert_no_panic_on_absurd_words, reverts


@pytest.fixture(scope="module")
def harness(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    return deploy_artifact(w3, accounts[0], artifacts["DotElementStepHarness"])


@pytest.fixture(scope="module")
def errors(artifacts: dict[str, dict[str, Any]]) -> ErrorDecoder:
    return ErrorDecoder([artifacts["DotElementStepHarness"]["abi"]])


def packed(tr: Trace, i: int, element: int, k: int, sums: tuple[int, int]) -> bytes:
    """The packed ``refuteDotStep`` move of step k (``DotReferee.step``), from the ``DotMove`` of the same step."""
    op, ins, rows, _, step, block_a, block_b, _, _ = dot_move(tr, i, element, k)
    b = None if tr.ops[i].code == "sum" else step[2]
    return pack_dot_step(op, ins, rows, element, k, step[1], b, sums, (block_a, block_b))


def _ops(family: str, code: str) -> list[int]:
    tr = traced(family, "adamw")
    return [i for i, op in enumerate(tr.ops) if op.code == code and tr.values[i].size]


@pytest.mark.parametrize(("family", "code"), [("mlp", "matmul"), ("mlp", "sum"), ("transformer", "matmul"),
                                              ("transformer", "index_sum")])
def test_honest_steps_recompute_and_the_full_sum_rounds_to_the_element(
    harness: Any, family: str, code: str
) -> None:
    tr = traced(family, "adamw")
    rng = random.Random(f"{family}{code}")
    for i in rng.sample(_ops(family, code), min(2, len(_ops(family, code)))):
        element = rng.randrange(tr.values[i].size)
        d = recompute_element(tr, i, element).detail
        assert d is not None
        for k in sorted({0, len(d.a) - 1, rng.randrange(len(d.a))}):
            _, committed, same = harness.functions.check(tr.root, dot_move(tr, i, element, k)).call()
            assert same and committed == d.partial[k], (family, code, i, element, k)
            # The game's packed move: the same operands, the sums given (the game binds them), no paths to them.
            sums = (d.partial[k - 1] if k else 0, d.partial[k])
            assert harness.functions.step(tr.root, packed(tr, i, element, k, sums)).call() == [sums[1], sums[1]]
        if not d.special:  # the finite rule: one rounding of N
            out = harness.functions.roundedOutput(d.n, d.block_a, d.block_b).call()
            assert out == element_bits(tr.values[i], element)


def test_a_wrong_multiply_add_is_caught_at_its_step(harness: Any) -> None:
    tr = traced("mlp", "adamw")
    i = max(_ops("mlp", "matmul"), key=lambda j: tr.values[tr.ops[j].inputs[0]].shape[-1])  # the longest K
    honest = list(dot_partials(tr, i, 3))
    k = len(honest) // 2
    lie = honest[:k] + [p + 1 for p in honest[k:]]  # one partial sum off by one unit, carried to the end
    expected, committed, same = harness.functions.check(tr.root, dot_move(tr, i, 3, k, lie)).call()
    assert not same and committed == honest[k] + 1 and expected == honest[k]
    assert harness.functions.check(tr.root, dot_move(tr, i, 3, k - 1, lie)).call()[2]  # the step before holds
    assert harness.functions.step(tr.root, packed(tr, i, 3, k, (honest[k - 1], lie[k]))).call() == [honest[k], lie[k]]


def test_block_exponents_must_be_witnessed_and_cannot_hide_a_larger_entry(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("mlp", "adamw")
    i = _ops("mlp", "matmul")[0]
    element = 1
    d = recompute_element(tr, i, element).detail
    assert d is not None
    too_high = dot_move(tr, i, element, 0, blocks=(d.block_a + 1, d.block_b))
    assert reverts(errors, harness.functions.check(tr.root, too_high)) == "BlockNotReached"
    honest = dot_move(tr, i, element, 0)
    a_wit = honest[7]
    moved = ((a_wit[0] + 1) % len(d.a), a_wit[1])  # the witness opened, but claimed at another step
    moved_arg = (*honest[:7], moved, honest[8])
    assert reverts(errors, harness.functions.check(tr.root, moved_arg)) in ("WrongOperand", "BlockNotReached")
    # too low: whoever aligned with a smaller exponent is refuted by the row's largest entry
    row_max = int(tr.values[tr.ops[i].inputs[0]].reshape(-1)[a_wit[1][0]].view("uint32"))
    assert exponent_field(row_max) == d.block_a
    assert harness.functions.refutesBlock(row_max, d.block_a - 1).call()
    assert not harness.functions.refutesBlock(row_max, d.block_a).call()


def test_a_packed_step_cut_short_or_with_an_absurd_count_reverts_by_name(harness: Any, errors: ErrorDecoder) -> None:
    tr = traced("transformer", "adamw")
    i = _ops("transformer", "index_sum")[0]
    sums = dot_partials(tr, i, 1)
    move = packed(tr, i, 1, 2, (sums[1], sums[2]))
    assert harness.functions.step(tr.root, move).call() == [sums[2], sums[2]]
    names = {reverts(errors, harness.functions.step(tr.root, move[:cut])) for cut in range(0, len(move), 32)}
    assert names <= {"Truncated", "NotADotOp"}, names
    assert_no_panic_on_absurd_words(errors, lambda lie: harness.functions.step(tr.root, lie), move)
