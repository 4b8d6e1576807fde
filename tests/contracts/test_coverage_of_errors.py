"""Every custom error declared in contracts/interfaces/*.sol is reached by some contract test.

A test "reaches" error X when a tests/contracts/*.py source names "X" as a string (the expected
revert name given to `expect(...)` / compared with `ContractRevert.name`). Errors that no other test
reaches are triggered here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gensyn_py.devnet.deploy import DEFAULT_PARAMS, POOL_FIELDS, _deploy
from tests.contracts.helpers import Protocol
from tests.contracts.test_registry import expect

ROOT = Path(__file__).resolve().parents[2]
ERROR_RE = re.compile(r"^\s*error\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.MULTILINE)
# Errors no test can reach, each with the reason.
UNREACHABLE: dict[str, str] = {
    "InvalidReplayClass": "a class id is keccak256 of a non-empty description: one below 256 needs a preimage of "
    "a hash with 248 leading zero bits",
}


def declared_errors() -> set[str]:
    names: set[str] = set()
    for sol in sorted((ROOT / "contracts" / "interfaces").glob("*.sol")):
        names |= set(ERROR_RE.findall(sol.read_text()))
    return names


def reached_errors() -> set[str]:
    text = "\n".join(f.read_text() for f in sorted((ROOT / "tests" / "contracts").glob("*.py")))
    return {name for name in declared_errors() if re.search(rf"[\"']{name}[\"']", text)}


def test_every_interface_error_is_reached_by_a_test() -> None:
    declared = declared_errors()
    assert len(declared) > 30  # the parser really found the interfaces' errors
    assert set(UNREACHABLE) <= declared
    missing = sorted(declared - reached_errors() - set(UNREACHABLE))
    assert not missing, f"custom errors no test reaches: {missing}"


def test_unwired_pool_refuses_jobs(proto: Protocol) -> None:
    """NotWired: a TaskPool used before `wire(resolver)` refuses submitJob."""
    p = proto
    d, params = p.deployer, DEFAULT_PARAMS
    pool_addr = _deploy(
        p.w3,
        d,
        p.artifacts["TaskPool"],
        p.token.address,
        p.registry.address,
        tuple(int(params[k]) for k in POOL_FIELDS),
        d.address,
        libraries=p.info["libraries"],  # libraries hold no state: the first deployment's serve this pool too
    )
    pool: Any = p._c("TaskPool", pool_addr)
    p.tx(p.accounts[1], p.token.functions.approve(pool_addr, 2**256 - 1))
    expect(p, "NotWired", p.accounts[1], pool.functions.submitJob(p.job_params()))
    p.tx(d, pool.functions.wire(p.committee.address, "0x" + "00" * 20))  # once wired, the same call goes through
    p.tx(p.accounts[1], pool.functions.submitJob(p.job_params()))
    assert pool.functions.totalEscrow().call() > 0
