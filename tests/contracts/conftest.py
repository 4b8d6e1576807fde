"""Contract-test fixtures: one deployment per session, a chain snapshot per test."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contracts.helpers import Protocol
from tests.integration.browser import browser  # the explorer's game page in headless Chromium

__all__ = ["browser"]


@pytest.fixture(scope="session")
def proto_base(w3: Any, accounts: Any, artifacts: Any) -> Protocol:
    p = Protocol(w3, accounts, artifacts)
    p.standard_cast()
    return p


@pytest.fixture
def proto(proto_base: Protocol, snapshot: None) -> Protocol:
    proto_base.gas_used = 0
    return proto_base
