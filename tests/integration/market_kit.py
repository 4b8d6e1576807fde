"""Helpers for tests that run a market of real daemon processes on a real anvil."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.decision_block import decision_block
from gensyn_py.chain.view import ChainView
from gensyn_py.errors import GensynError
from gensyn_py.sim import accounting
from gensyn_py.sim.localnet import LOCAL_PARAMS, LocalNetwork, wait_until
from gensyn_py.sim.market import Market, NodeSpec, digits_job_spec
from gensyn_py.train.data import digits

if TYPE_CHECKING:
    from gensyn_py.sim.poison import PoisonKit

# Shorter windows than the demo's: tests wait on reveal deadlines and challenge windows.
TEST_PARAMS = {**LOCAL_PARAMS, "claimWindow": 2, "verdictCommitWindow": 12, "revealWindow": 10,
               "challengeWindow": 4, "votingPeriod": 20}
NODES = {"solver-1": ("solver", 2), "solver-2": ("solver", 3), "validator-1": ("validator", 4),
         "validator-2": ("validator", 5), "challenger": ("challenger", 6)}
POOL_ACTIONS = ("claim", "commit", "commitVerdict", "revealVerdict", "challenge")


def start_market(workdir: Path, store: str | None = None, nodes: dict[str, tuple[str, int]] | None = None,
                 **params: int) -> LocalNetwork:
    net = LocalNetwork(workdir, params={**TEST_PARAMS, **params}, store=store).start()
    cast = [NodeSpec(name, role, key) for name, (role, key) in (nodes or NODES).items()]
    Market(net).start_nodes(cast)
    net.fund(net.account(1).address, 100_000)
    return net


def protocol(net: LocalNetwork) -> ProtocolContracts:
    assert net.protocol is not None
    return net.protocol


def submit(net: LocalNetwork, rounds: int = 1, shards: int = 1, steps: int = 100, seed: int = 1,
           commit_window: int = 60, **over: Any) -> int:
    """Submit the market's digits job (`over`: spec fields to set, e.g. `aggregation`)."""
    market = Market(net, requester_tokens=0)  # start_market funded the requester
    train, _ = digits(image=False)
    spec = {**digits_job_spec(market.put_dataset(train), rounds, shards, steps, seed), **over}
    return market.submit(spec, commit_window).job_id


def wait_job(net: LocalNetwork, job: int, timeout: float = 180) -> None:
    """Until the job is Completed; a timeout says where each of its units stands and what the daemons said."""
    try:
        Market(net).wait_jobs([job], timeout)
    except GensynError as e:
        raise AssertionError(f"{e}\n{story(net, job)}") from e


def story(net: LocalNetwork, job: int, tail: int = 25) -> str:
    """What a stuck job shows: each unit's state on chain, then each daemon's last warnings, errors, starts and
    unit decisions, timed (a failure message, so a flake on a loaded machine can be read after the fact)."""
    view = ChainView(protocol(net))
    lines = [f"chain block {net.w3.eth.block_number}, time {net.w3.eth.get_block('latest')['timestamp']}"]
    lines += [f"unit {u.unit_id} {u.status.name} solver {u.solver} deadline {u.deadline} "
              f"verdicts {u.committed}/{u.revealed} validators {list(u.validators)}" for u in view.units(job)]
    for name, node in net.nodes.items():
        said = [r for r in net.log_lines(name)
                if r.get("level") in ("warning", "error") or str(r.get("event", "")).startswith(_TOLD)]
        lines.append(f"-- {name} {node.account.address} (restarts {node.restarts}, down {node.down})")
        lines += [f"{r.get('ts', '')} {r.get('event')} {r.get('fields', '')}" for r in said[-tail:]]
    return "\n".join(lines)


_TOLD = ("daemon.", "unit.claim", "unit.commit", "unit.final", "unit.resumed", "verdict", "keeper.", "cycle.",
         "game.", "dispute.")


def wait_log(net: LocalNetwork, name: str, event: str, timeout: float = 120, after: int = 0,
             **match: Any) -> dict[str, Any]:
    """The first JSON log record of `name` with this event (and fields), past the first `after` records."""
    def found() -> dict[str, Any] | None:
        for rec in net.log_lines(name)[after:]:
            fields = rec.get("fields") or {}
            if rec.get("event") == event and all(fields.get(k) == v for k, v in match.items()):
                return rec
        return None

    return wait_until(found, timeout, f"{name} to log {event} {match}", on_wait=net.check_alive)


def first_new_block(net: LocalNetwork) -> int:
    """The first block that can hold what a test does from now on (its window for counting events). Not the latest
    block: that may hold the end of the test before, say a keeper's finalize mined in the same second, which is
    not this test's to count."""
    return int(net.w3.eth.block_number) + 1


def slashes(net: LocalNetwork, from_block: int) -> list[tuple[str, int]]:
    return accounting.slashes(protocol(net), from_block)


def pool_actions(net: LocalNetwork, from_block: int) -> Counter[tuple[str, str, int]]:
    """(sender, function, unitId) of every successful pool transaction from `from_block`."""
    w3 = net.w3
    pool = protocol(net)["TaskPool"]
    seen: Counter[tuple[str, str, int]] = Counter()
    for number in range(from_block, int(w3.eth.block_number) + 1):
        txs: list[Any] = list(w3.eth.get_block(number, full_transactions=True)["transactions"])
        for tx in txs:
            if str(tx.get("to") or "").lower() != pool.address.lower():
                continue
            fn, args = pool.decode_function_input(tx["input"])
            if fn.fn_name in POOL_ACTIONS and w3.eth.get_transaction_receipt(tx["hash"])["status"] == 1:
                seen[(str(tx["from"]), fn.fn_name, int(args["unitId"]))] += 1
    return seen


def assert_conservation(net: LocalNetwork) -> None:
    """Tokens held equal tokens owed, all read at one block (the daemons keep transacting meanwhile)."""
    p = protocol(net)
    token, pool, registry = p.token(), p.pool(), p.registry()
    # The block before the head on anvil (`chain/decision_block.py`): anvil serves calls at its head block from its
    # live state, which a block being mined meanwhile changes between two calls (a credit claimed between the
    # balance and the totals read at "one" block once showed 90 tokens missing); a block behind the head is a kept
    # snapshot.
    at = decision_block(net.w3)
    pool_balance = token.balance_of(pool.address, block=at)
    owed = pool.total_escrow(block=at) + pool.total_bonds(block=at) + pool.total_credit(block=at)
    assert pool_balance == owed, f"pool holds {pool_balance}, owes {owed} at block {at}"
    assert token.balance_of(registry.address, block=at) == registry.total_staked(block=at)


def assert_every_solver_quarantines(net: LocalNetwork, kit: PoisonKit, spec: dict[str, Any], reason: str) -> None:
    """`spec` sent straight to the contract (the pool cannot read specs or models): every solver quarantines
    its job with `reason` in its log, and nobody claims its unit."""
    from gensyn_py.types import UnitStatus

    marks = {name: len(net.log_lines(name)) for name in ("solver-1", "solver-2")}
    job = kit.submit_stored(spec)
    for name in marks:
        rec = wait_log(net, name, "unit.quarantined", after=marks[name], job=job)
        assert reason in rec["fields"]["reason"]
    view = kit.market.requester.view
    (unit_id,) = view.unit_ids(job)
    assert view.unit(unit_id).status is UnitStatus.OPEN  # nobody claimed it
    assert protocol(net)["TaskPool"].events.UnitClaimed().get_logs(
        from_block=0, argument_filters={"unitId": unit_id}) == []
