"""The typed contract layer agrees with the shipped ABIs, and nothing outside it names a contract function.

- every `types.py` mirror has the Solidity struct's (or view's) fields, in order, with matching types;
- every function a wrapper (`chain/token.py` ...) calls or sends exists in its contract's ABI with
  that many arguments;
- no production module, script or bench calls a contract function by string.
"""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from gensyn_py.chain.abi import load_abi
from gensyn_py.chain.bound import BoundContract
from gensyn_py.chain.committee import DisputeCommittee
from gensyn_py.chain.pool import TaskPool
from gensyn_py.chain.registry import NodeRegistry
from gensyn_py.chain.segment_game import SegmentGame
from gensyn_py.chain.step_game import StepGame
from gensyn_py.chain.token import GensynToken
from gensyn_py.types import (
    Availability,
    ClaimScore,
    Dispute,
    Hardware,
    JobParams,
    JobState,
    PoolParams,
    Reputation,
    Seat,
    Struct,
    Unbonding,
    Unit,
    UnitPartial,
    solidity_name,
    struct_fields,
)

ROOT = Path(__file__).resolve().parents[2]
WRAPPERS: tuple[type[BoundContract], ...] = (GensynToken, NodeRegistry, TaskPool, DisputeCommittee, SegmentGame,
                                              StepGame)

# (contract, function, "in" or "out", index of the struct parameter or None for all outputs) -> mirror
MIRRORS: list[tuple[str, str, str, int | None, type[Struct]]] = [
    ("TaskPool", "getUnit", "out", 0, Unit),
    ("TaskPool", "availability", "out", 0, Availability),
    ("TaskPool", "params", "out", None, PoolParams),
    ("TaskPool", "jobState", "out", None, JobState),
    ("TaskPool", "claimScore", "out", None, ClaimScore),
    ("TaskPool", "partialOf", "out", None, UnitPartial),
    ("TaskPool", "submitJob", "in", 0, JobParams),
    ("NodeRegistry", "register", "in", 1, Hardware),
    ("NodeRegistry", "hardwareOf", "out", 0, Hardware),
    ("NodeRegistry", "reputationOf", "out", None, Reputation),
    ("NodeRegistry", "unbondingOf", "out", None, Unbonding),
    ("DisputeCommittee", "getDispute", "out", 0, Dispute),
    ("DisputeCommittee", "seatOf", "out", 0, Seat),
]


def function(contract: str, name: str) -> dict[str, Any]:
    (entry,) = [e for e in load_abi(contract) if e.get("type") == "function" and e["name"] == name]
    return entry


def python_type(param: dict[str, Any]) -> str:
    """What the mirror's field annotation must be for this ABI parameter."""
    abi_type, internal = param["type"], param.get("internalType", "")
    if internal.startswith("enum "):
        return internal.removeprefix("enum ")
    if abi_type.endswith("[]"):
        return f"tuple[{python_type({**param, 'type': abi_type[:-2], 'internalType': ''})}, ...]"
    if abi_type == "tuple":
        return internal.removeprefix("struct ").split(".")[-1]
    if abi_type.startswith(("uint", "int")):
        return "int"
    return {"bool": "bool", "address": "str", "string": "str"}.get(abi_type, "bytes")


def annotation(tp: Any) -> str:
    if typing.get_origin(tp) is tuple:
        return f"tuple[{annotation(typing.get_args(tp)[0])}, ...]"
    return str(tp.__name__)


@pytest.mark.parametrize(("contract", "fn", "side", "index", "mirror"), MIRRORS,
                         ids=[f"{c}.{f}-{m.__name__}" for c, f, _, _, m in MIRRORS])
def test_mirror_has_the_solidity_fields_in_order(contract: str, fn: str, side: str, index: int | None,
                                                 mirror: type[Struct]) -> None:
    params = function(contract, fn)["inputs" if side == "in" else "outputs"]
    fields = params if index is None else params[index]["components"]
    hints = typing.get_type_hints(mirror)
    ours = [(name, annotation(hints[name])) for name, _ in struct_fields(mirror)]
    theirs = [(p["name"], python_type(p)) for p in fields]
    assert len(ours) == len(theirs), f"{mirror.__name__} has {len(ours)} fields, {contract}.{fn} {len(theirs)}"
    for (name, tp), (solidity, solidity_tp) in zip(ours, theirs, strict=True):
        if solidity:  # outputs the implementation leaves unnamed are checked by type only
            assert solidity_name(name) == solidity, f"{mirror.__name__}.{name} mirrors {solidity}"
        assert tp == solidity_tp, f"{mirror.__name__}.{name} is {tp}, the ABI says {solidity_tp}"


def test_mirror_round_trips_its_abi_tuple() -> None:
    hw = Hardware(device_class=1, memory_mb=16_000, throughput=1_000, price_per_unit=5)
    assert Hardware.from_abi(hw.to_abi()) == hw
    with pytest.raises(ValueError, match="Unit takes 1 key and 20 struct values"):
        Unit.from_abi((1, 2, 3))


def _names_sent(wrapper: type[BoundContract]) -> list[tuple[str, int]]:
    """(function name, number of arguments) of every `self.call("x", ...)`/`self.transact("x", ...)` in a wrapper."""
    source = inspect.getsource(inspect.getmodule(wrapper))  # type: ignore[arg-type]
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("call", "transact") and node.args
                and isinstance(node.args[0], ast.Constant)):
            out.append((str(node.args[0].value), len(node.args) - 1))
    return out


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=[w.NAME for w in WRAPPERS])
def test_every_wrapped_function_is_in_the_contract_abi(wrapper: type[BoundContract]) -> None:
    sent = _names_sent(wrapper)
    assert sent, f"{wrapper.__name__} wraps no function"
    abi = {(e["name"], len(e["inputs"])) for e in load_abi(wrapper.NAME) if e.get("type") == "function"}
    missing = [f"{name}/{n}" for name, n in sent if (name, n) not in abi]
    assert not missing, f"{wrapper.NAME} has no {missing}"


def test_nothing_outside_the_wrappers_names_a_contract_function() -> None:
    offenders = []
    files = [*(ROOT / "gensyn_py").rglob("*.py"), *(ROOT / "scripts").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
    for path in files:
        if path.is_relative_to(ROOT / "gensyn_py" / "chain"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("call", "transact", "fn") and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}({node.args[0].value!r})")
    assert not offenders, "use the typed wrappers in gensyn_py/chain/:\n" + "\n".join(offenders)
