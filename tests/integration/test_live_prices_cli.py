"""Against a real anvil: `gensyn job estimate` reads what solvers declare on-chain (their latest hardware and
price), counts only registered, unjailed SOLVER nodes, and names the price that wins the claim auction; and a
daemon's standing gauges carry the chain's numbers, a slash included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from eth_account.signers.local import LocalAccount

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.cli.main import cli
from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.standing_gauges import StandingGauges
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import submit_job
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import DEVICE_CLASSES, PERM_FRAUD, ROLE_SOLVER, ROLE_VALIDATOR, Hardware
from tests.integration.test_requester_kit import E18, Deployed, deployed, store_digits, tiny_spec

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
pytestmark = pytest.mark.usefixtures("snapshot")
CPU, CUDA = DEVICE_CLASSES["cpu"], DEVICE_CLASSES["cuda"]


def _register(d: Deployed, who: LocalAccount, roles: int, device: int, price: int) -> None:
    registry = d.protocol().registry(d.protocol().sender(who))
    registry.register(roles, Hardware(device_class=device, memory_mb=16_000, throughput=1_000, price_per_unit=price))


def _jail(d: Deployed, node: str) -> None:
    """`recordFraud` sent as the contract that holds PERM_FRAUD (anvil impersonation): a proven fraud's jail
    without playing a dispute through, which `tests/integration/test_network.py` does."""
    protocol = d.protocol()
    registry = protocol.registry()
    holder = next(a for a in protocol.deployment["contracts"].values() if registry.permissions_of(a) & PERM_FRAUD)
    mk = protocol.w3.provider.make_request
    mk("anvil_impersonateAccount", [holder])  # type: ignore[arg-type]
    mk("anvil_setBalance", [holder, hex(10**20)])  # type: ignore[arg-type]
    try:
        tx = protocol["NodeRegistry"].functions.recordFraud(node).transact({"from": holder, "gas": 500_000})
        assert protocol.w3.eth.wait_for_transaction_receipt(tx)["status"] == 1
    finally:
        mk("anvil_stopImpersonatingAccount", [holder])  # type: ignore[arg-type]
    assert registry.is_jailed(node)


def _estimate(d: Deployed, tmp_path: Path, *args: str) -> Any:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(tiny_spec()))
    out = CliRunner().invoke(cli, ["job", "estimate", str(spec), "--max-price", "10", *args], env=d.env)
    assert out.exit_code == 0, out.output
    return json.loads(out.output) if "--json" in args else " ".join(out.output.split())


def test_estimate_shows_what_solvers_ask_and_the_winning_price(deployed: Deployed, tmp_path: Path) -> None:
    d = deployed
    protocol = d.protocol()
    cheap, dear, jailed, gpu, both = _accounts(d)
    # The fixture's solver asks 5 tokens; it lowers its price to 4 (HardwareUpdated is the latest word).
    protocol.registry(protocol.sender(d.solver)).update_hardware(
        Hardware(device_class=CPU, memory_mb=16_000, throughput=1_000, price_per_unit=4 * E18))
    _register(d, cheap, ROLE_SOLVER, CPU, 3 * E18)
    _register(d, dear, ROLE_SOLVER, CPU, 12 * E18)  # above --max-price: counted, never eligible
    _register(d, jailed, ROLE_SOLVER, CPU, 1 * E18)  # the cheapest, but jailed: not counted
    _register(d, gpu, ROLE_SOLVER, CUDA, 2 * E18)
    _register(d, both, ROLE_SOLVER | ROLE_VALIDATOR, CPU, 6 * E18)
    _jail(d, jailed.address)
    # The fixture's two validators (VALIDATOR only, price 0) are not solvers: not counted either.

    data = _estimate(d, tmp_path, "--json")
    market = data["onChainPrices"]
    assert market["read"] is True and market["block"] == protocol.w3.eth.block_number
    cpu, cuda = market["classes"]
    assert (cpu["device"], cpu["solvers"], cpu["eligible"]) == ("cpu", 4, 3)  # solver, cheap, dear, both
    assert (int(cpu["minPrice"]), int(cpu["medianPrice"])) == (3 * E18, 5 * E18)  # 3, 4, 6, 12
    # All newcomers: the cheapest eligible scores highest and is the first the falling threshold lets in.
    assert (cpu["winner"], int(cpu["winningPrice"]), cpu["tied"]) == (cheap.address, 3 * E18, 1)
    assert (cuda["solvers"], int(cuda["winningPrice"]), cuda["winner"]) == (1, 2 * E18, gpu.address)
    assert data["cloudPrices"]["date"]

    # The winner's score is the contract's: submit the job for real and ask `claimScore`.
    store_digits(d)
    job = submit_job(d.session(d.requester), parse_spec(tiny_spec()), Offer(max_price_per_unit=10 * E18)).job_id
    (unit_id,) = d.session().view.unit_ids(job)
    pool = protocol.pool()
    scores = {n.address: pool.claim_score(n.address, unit_id).score for n in (d.solver, cheap, both)}
    assert max(scores, key=lambda k: scores[k]) == cheap.address and scores[cheap.address] == cpu["winningScore"]

    text = _estimate(d, tmp_path)
    assert "what solvers ask on-chain (block " in text and "│ cpu * │ 4 │ 3.00 │ 5.00 │ 3 │ 3.00" in text


def _accounts(d: Deployed) -> list[LocalAccount]:
    """Five fresh funded accounts (ether for gas) that the fixture did not register."""
    from eth_account import Account

    w3 = d.protocol().w3
    out = []
    for i in range(5):
        acct = Account.from_key((0x1600 + i).to_bytes(32, "big"))
        w3.provider.make_request("anvil_setBalance", [acct.address, hex(10**20)])  # type: ignore[arg-type]
        out.append(acct)
    return out


def test_estimate_offline_still_prices_the_job(deployed: Deployed, tmp_path: Path) -> None:
    data = _estimate(deployed, tmp_path, "--json", "--offline")
    assert data["onChainPrices"]["read"] is False and data["tokens"]["escrow"]


def test_the_standing_gauges_carry_the_chains_numbers_and_a_slash(deployed: Deployed) -> None:
    d = deployed
    protocol: ProtocolContracts = d.protocol()
    metrics = DaemonMetrics("solver-test")
    gauges = StandingGauges(protocol, d.solver.address, metrics)
    gauges.refresh()
    assert metrics.value("gensyn_stake_tokens", state="bonded") == 1_000
    assert metrics.value("gensyn_stake_tokens", state="locked") == 0
    assert (metrics.value("gensyn_slashes"), metrics.value("gensyn_reputation", kind="missed")) == (0, 0)

    store_digits(d)
    job = submit_job(d.session(d.requester), parse_spec(tiny_spec()), Offer(max_price_per_unit=7 * E18)).job_id
    (unit_id,) = d.session().view.unit_ids(job)
    params = d.session().pool_params()
    _advance(protocol, params.claim_window)
    protocol.pool(protocol.sender(d.solver)).claim(unit_id)
    gauges.refresh()
    registry = protocol.registry()
    locked = registry.locked_of(d.solver.address)
    assert locked > 0 and metrics.value("gensyn_stake_tokens", state="locked") == locked / E18

    deadline = d.session().view.unit(unit_id).deadline
    _advance(protocol, deadline - int(protocol.w3.eth.get_block("latest")["timestamp"]))  # past the commit deadline
    protocol.pool(protocol.sender(d.stranger)).timeout_claim(unit_id)
    gauges.refresh()
    slashed = 1_000 * E18 - registry.bonded_of(d.solver.address)
    assert slashed > 0
    assert (metrics.value("gensyn_slashes"), metrics.value("gensyn_slashed_tokens")) == (1, slashed / E18)
    assert metrics.value("gensyn_reputation", kind="missed") == registry.reputation_of(d.solver.address).missed == 1
    assert metrics.value("gensyn_stake_tokens", state="bonded") == registry.bonded_of(d.solver.address) / E18
    assert metrics.value("gensyn_credit_tokens") == protocol.pool().credit(d.solver.address) / E18
    assert metrics.value("gensyn_standing_block") == protocol.w3.eth.block_number
    gauges.refresh()  # the Slashed scan is incremental: the same slash is not counted twice
    assert metrics.value("gensyn_slashes") == 1
    # Money is conserved: what the solver lost went to the requester's credit (the liveness penalty).
    assert d.session().pool.credit(d.requester.address) == slashed


def _advance(protocol: ProtocolContracts, seconds: int) -> None:
    mk = protocol.w3.provider.make_request
    mk("evm_increaseTime", [seconds + 1])  # type: ignore[arg-type]
    mk("evm_mine", [])  # type: ignore[arg-type]
