"""`contracts/libraries/IndexMaps.sol` through `MoveReferee`: every element of every index map kind equals
`gensyn_py/repro/maps.py`'s, for shapes with and without padding; the parameters a map refuses revert by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.proof.onchain_trace import NO_ELEMENT, open_element, open_op, tensor_ref
from gensyn_py.proof.step_side import INDEX_MAPS
from gensyn_py.proof.trace import Trace, TraceOp
from gensyn_py.repro.maps import index_map
from tests.contracts.helpers import deploy_artifact
from tests.contracts.test_trace_proofs import reverts

NONE = (bytes(32), 0, [])
CASES = [("im2col", (2, 2, 4, 3, 3, 1)), ("im2col", (1, 1, 3, 3, 2, 0)), ("col2im", (1, 2, 3, 4, 3, 1)),
         ("pool", (2, 2, 4, 4, 2)), ("unpool", (1, 3, 4, 2, 2)), ("causal", (5,))]


@pytest.fixture(scope="module")
def referee(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    return deploy_artifact(w3, accounts[0], artifacts["MoveReferee"])


@pytest.fixture(scope="module")
def errors(artifacts: dict[str, dict[str, Any]]) -> ErrorDecoder:
    return ErrorDecoder([artifacts["MoveReferee"]["abi"]])


def _check(t: Trace, e: int, params: list[int], kind: int) -> tuple[Any, ...]:
    return (open_op(t, 0).as_arg(), NONE, NO_ELEMENT.as_arg(), tensor_ref(t, 0).as_arg(),
            open_element(t, 0, e).as_arg(), params, kind, NONE, NO_ELEMENT.as_arg())


@pytest.mark.parametrize(("kind", "params"), CASES)
def test_every_element_of_every_map_is_numpy_s(referee: Any, kind: str,
                                               params: tuple[int, ...]) -> None:
    m = np.ascontiguousarray(index_map(kind, params))
    t = Trace([TraceOp("index_map", (), (kind, params))], [m])
    for e in range(m.size):
        expected, committed, same = referee.functions.check(t.root, _check(t, e, list(params),
                                                                          INDEX_MAPS.index(kind))).call()
        assert same and expected == committed, (kind, e)
    if kind != "causal":  # one wrong element is found
        bad = m.copy()
        bad.reshape(-1)[m.size // 2] += 1
        tb = Trace([TraceOp("index_map", (), (kind, params))], [bad])
        assert referee.functions.check(tb.root, _check(tb, m.size // 2, list(params),
                                                       INDEX_MAPS.index(kind))).call()[2] is False


def test_a_map_of_other_parameters_or_kind_or_shape_is_refused(referee: Any, errors: ErrorDecoder) -> None:
    kind, params = "pool", (2, 2, 4, 4, 2)
    t = Trace([TraceOp("index_map", (), (kind, params))], [np.ascontiguousarray(index_map(kind, params))])
    assert reverts(errors, referee.functions.check(t.root, _check(t, 0, [2, 2, 4, 4, 1], 2))) == "BadAttributes"
    assert reverts(errors, referee.functions.check(t.root, _check(t, 0, list(params), 3))) == "BadAttributes"
    odd = (1, 1, 3, 3, 2)  # windows that do not tile the input: NumPy's unpool leaves garbage, the contract refuses
    u = Trace([TraceOp("index_map", (), ("unpool", odd))], [np.zeros((1, 1, 3, 3), np.int64)])
    assert reverts(errors, referee.functions.check(u.root, _check(u, 0, list(odd), 3))) == "BadMove"
