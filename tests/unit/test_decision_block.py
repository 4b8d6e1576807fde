"""Which block a decision reads (`chain/decision_block.py`): below the head on anvil, the head elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from gensyn_py.chain.decision_block import decision_block, head_lag


class FakeEth:
    block_number = 120


class FakeWeb3:
    def __init__(self, version: str | Exception) -> None:
        self._version = version
        self.eth = FakeEth()

    @property
    def client_version(self) -> str:
        if isinstance(self._version, Exception):
            raise self._version
        return self._version


@pytest.mark.parametrize(("version", "lag"), [("anvil/v1.7.1", 1), ("Anvil/v0.2.0", 1),
                                               ("Geth/v1.14.11-stable/linux-amd64/go1.22.5", 0),
                                               ("HardhatNetwork/2.22.0/@ethereumjs/vm/7.0.0", 0),
                                               (ValueError("the method web3_clientVersion does not exist"), 0)])
def test_anvil_reads_the_block_below_the_head_and_other_nodes_the_head(version: Any, lag: int) -> None:
    w3: Any = FakeWeb3(version)
    assert head_lag(w3) == lag
    assert decision_block(w3, head_lag(w3)) == 120 - lag


def test_the_decision_block_is_never_below_genesis() -> None:
    w3: Any = FakeWeb3("anvil/v1.7.1")
    w3.eth.block_number = 0
    assert decision_block(w3, 1) == 0


def test_without_a_lag_the_block_reads_the_clients_own() -> None:
    assert decision_block(FakeWeb3("anvil/v1.7.1")) == 119  # type: ignore[arg-type]
    assert decision_block(FakeWeb3("Geth/v1.14.11-stable")) == 120  # type: ignore[arg-type]
