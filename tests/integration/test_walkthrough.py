"""The README's main job, in-process: one whole honest job on a fresh chain."""

from __future__ import annotations

from pathlib import Path

import pytest
from eth_account import Account
from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode
from gensyn_py.devnet.compiler import compile_contracts
from gensyn_py.devnet.deploy import deploy_protocol
from gensyn_py.sim.walkthrough import Walkthrough, default_store
from gensyn_py.types import UnitStatus

pytestmark = pytest.mark.slow
E18 = 10**18


def test_honest_job_trains_verifies_settles_and_slashes_nobody(tmp_path: Path) -> None:
    lines: list[str] = []
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url))
        deployment = deploy_protocol(w3, Account.from_key(DEV_KEYS[0]), compile_contracts())
        protocol = ProtocolContracts(w3, deployment)
        result = Walkthrough(w3, protocol, default_store(tmp_path / "store"), lines.append).run()

        pool = protocol.pool()
        assert pool.total_escrow() == 0
        assert pool.total_credit() == 0

    assert result.unit_status == UnitStatus.FINAL
    assert result.accuracy >= 0.90
    assert all(v == 0 for v in result.slashed.values()), result.slashed
    assert any("accept" in line for line in lines)
    assert not any("reject" in line for line in lines)

    change = {k: result.balances_after[k] - result.balances_before[k] for k in result.balances_before}
    assert change["solver"] == 5 * E18  # its declared price
    paid_validators = [k for k, v in change.items() if k.startswith("validator") and v > 0]
    assert len(paid_validators) == 2
    # What the requester spent is exactly what the solver and the validators earned: nothing lost or created.
    assert sum(change.values()) == 0
