"""`gensyn node ...` against a real anvil: an operator reads its node's standing and work, and unbonds, withdraws,
claims, changes its price and its hardware; what the contract would refuse is refused, decoded, before sending."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result
from eth_account.signers.local import LocalAccount

from gensyn_py.cli.main import cli
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import submit_job
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import DEVICE_CLASSES
from tests.integration.test_requester_kit import (
    E18,
    SOLVER_PRICE,
    Deployed,
    deployed,
    play_unit_to_final,
    store_digits,
    tiny_spec,
)

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
pytestmark = pytest.mark.usefixtures("snapshot")


def _node(d: Deployed, who: LocalAccount | None, *args: str) -> Result:
    env = {**d.env, "GENSYN_KEY": who.key.hex() if who else ""}
    return CliRunner().invoke(cli, ["node", *args], env=env)


def _status(d: Deployed, who: LocalAccount) -> dict[str, Any]:
    out = _node(d, who, "status", "--json")
    assert out.exit_code == 0, out.output
    return dict(json.loads(out.output))


def _nonce(d: Deployed, who: LocalAccount) -> int:
    return int(d.protocol().w3.eth.get_transaction_count(who.address))


def _advance(d: Deployed, seconds: int) -> None:
    w3 = d.protocol().w3
    w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
    w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def _submit(d: Deployed) -> int:
    store_digits(d)
    return submit_job(d.session(d.requester), parse_spec(tiny_spec()), Offer(max_price_per_unit=7 * E18)).job_id


def test_status_shows_stake_roles_price_and_the_units_in_flight(deployed: Deployed) -> None:
    d = deployed
    s = _status(d, d.solver)
    assert (s["registered"], s["roles"], s["device"]) == (True, ["solver"], "cpu")
    assert (int(s["bonded"]), int(s["locked"]), int(s["pricePerUnit"])) == (1_000 * E18, 0, SOLVER_PRICE)
    assert (s["solving"], s["inValidatorSet"], s["jailedUntil"]) == ([], False, 0)
    assert _status(d, d.validators[0])["inValidatorSet"] is True

    job = _submit(d)
    (unit_id,) = d.session().view.unit_ids(job)
    req = d.session()
    solver = d.protocol().pool(d.protocol().sender(d.solver))
    if not req.protocol.pool().claim_score(d.solver.address, unit_id).eligible:
        _advance(d, req.pool_params().claim_window)  # the required score decays to zero over the claim window
    solver.claim(unit_id)
    s = _status(d, d.solver)
    assert s["solving"] == [{"unit": unit_id, "status": "ASSIGNED"}]
    assert int(s["locked"]) > 0 and int(s["free"]) == int(s["bonded"]) - int(s["locked"])

    table = _node(d, None, "status", d.solver.address)  # anyone's node, by address, without a key
    assert table.exit_code == 0, table.output
    assert f"unit {unit_id} (ASSIGNED)" in table.output and "1,000.00 bonded" in table.output
    stranger = _node(d, None, "status", d.stranger.address)
    assert "is not registered" in stranger.output
    bad = _node(d, None, "status", "0x1234")
    assert bad.exit_code == 2 and "is not an address" in bad.output


def test_unbond_and_withdraw_refuse_what_the_contract_would_before_sending(deployed: Deployed) -> None:
    d = deployed
    token = d.protocol().token()
    nonce = _nonce(d, d.solver)
    too_much = _node(d, d.solver, "unbond", "5000")
    assert too_much.exit_code == 1 and "InsufficientFreeStake" in too_much.output, too_much.output
    assert _nonce(d, d.solver) == nonce  # nothing was sent

    ok = _node(d, d.solver, "unbond", "100")
    assert ok.exit_code == 0 and "unbonding 100.00 tokens" in ok.output, ok.output
    s = _status(d, d.solver)
    assert (int(s["bonded"]), int(s["unbonding"])) == (900 * E18, 100 * E18) and s["unbondingRelease"] > s["now"]

    nonce = _nonce(d, d.solver)
    early = _node(d, d.solver, "withdraw")
    assert early.exit_code == 1 and "StillUnbonding" in early.output, early.output
    assert _nonce(d, d.solver) == nonce

    _advance(d, s["unbondingRelease"] - s["now"] + 1)
    before = token.balance_of(d.solver.address)
    done = _node(d, d.solver, "withdraw")
    assert done.exit_code == 0 and "withdrew 100.00 tokens" in done.output, done.output
    assert token.balance_of(d.solver.address) == before + 100 * E18
    assert int(_status(d, d.solver)["unbonding"]) == 0


def test_claim_withdraws_the_fees_a_node_earned(deployed: Deployed) -> None:
    d = deployed
    assert "no credit to withdraw" in _node(d, d.solver, "claim").output
    play_unit_to_final(d, _submit(d))
    credit = int(_status(d, d.solver)["credit"])
    assert credit >= SOLVER_PRICE
    token = d.protocol().token()
    before = token.balance_of(d.solver.address)
    out = _node(d, d.solver, "claim")
    assert out.exit_code == 0, out.output
    assert token.balance_of(d.solver.address) == before + credit and int(_status(d, d.solver)["credit"]) == 0


def test_set_price_and_update_hardware_change_what_the_registry_declares(deployed: Deployed) -> None:
    d = deployed
    registry = d.protocol().registry()
    out = _node(d, d.solver, "set-price", "3.5")
    assert out.exit_code == 0, out.output
    hw = registry.hardware_of(d.solver.address)
    assert (hw.price_per_unit, hw.memory_mb, hw.throughput) == (35 * E18 // 10, 16_000, 1_000)

    v = d.validators[0]
    cpu, cuda = DEVICE_CLASSES["cpu"], DEVICE_CLASSES["cuda"]
    counts = registry.validator_count(cpu), registry.validator_count(cuda)
    out = _node(d, v, "update-hardware", "--device", "cuda", "--memory-mb", "80000")
    assert out.exit_code == 0, out.output
    hw = registry.hardware_of(v.address)
    assert (hw.device_class, hw.memory_mb, hw.throughput) == (cuda, 80_000, 1_000)
    assert (registry.validator_count(cpu), registry.validator_count(cuda)) == (counts[0] - 1, counts[1] + 1)
    assert registry.is_validator(v.address)  # it moved sets; it did not leave

    assert _node(d, v, "update-hardware").exit_code == 2  # nothing to change
    nonce = _nonce(d, d.stranger)
    unknown = _node(d, d.stranger, "set-price", "1")
    assert unknown.exit_code == 1 and "NotRegistered" in unknown.output, unknown.output
    assert _nonce(d, d.stranger) == nonce
