"""Contract-test fixtures: one deployment per session, a chain snapshot per test."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contracts.helpers import CHALLENGER, SOLVER, VALIDATOR, Protocol


@pytest.fixture(scope="session")
def proto_base(w3: Any, accounts: Any, artifacts: Any) -> Protocol:
    p = Protocol(w3, accounts, artifacts)
    p.node(accounts[2], SOLVER)
    for a in accounts[3:8]:
        p.node(a, VALIDATOR)
    p.node(accounts[8], CHALLENGER)
    p.fund(accounts[1], 100_000 * 10**18)
    return p


@pytest.fixture
def proto(proto_base: Protocol, snapshot: None) -> Protocol:
    proto_base.gas_used = 0
    return proto_base
