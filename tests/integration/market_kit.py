"""Helpers for tests that run a market of real daemon processes on a real anvil."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.session import Requester
from gensyn_py.requester.submit import submit_job
from gensyn_py.sim import accounting
from gensyn_py.sim.demo import job_spec_dict
from gensyn_py.sim.localnet import E18, LOCAL_PARAMS, LocalNetwork, wait_until
from gensyn_py.storage.factory import open_store
from gensyn_py.train.data import dataset_entry, digits
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import JobStatus

# Shorter windows than the demo's: tests wait on reveal deadlines and challenge windows.
TEST_PARAMS = {**LOCAL_PARAMS, "claimWindow": 2, "verdictCommitWindow": 12, "revealWindow": 10,
               "challengeWindow": 4, "votingPeriod": 20}
NODES = {"solver-1": ("solver", 2), "solver-2": ("solver", 3), "validator-1": ("validator", 4),
         "validator-2": ("validator", 5), "challenger": ("challenger", 6)}
POOL_ACTIONS = ("claim", "commit", "commitVerdict", "revealVerdict", "challenge")


def start_market(workdir: Path, store: str | None = None, nodes: dict[str, tuple[str, int]] | None = None,
                 **params: int) -> LocalNetwork:
    net = LocalNetwork(workdir, params={**TEST_PARAMS, **params}, store=store).start()
    for name, (role, key) in (nodes or NODES).items():
        net.add_node(name, role, key)
    registry = protocol(net).registry()
    names = list(net.nodes)
    wait_until(lambda: all(registry.bonded_of(net.nodes[n].account.address) > 0 for n in names),
               120, "daemons to register and stake", on_wait=net.check_alive)
    net.fund(net.account(1).address, 100_000)
    return net


def protocol(net: LocalNetwork) -> ProtocolContracts:
    assert net.protocol is not None
    return net.protocol


def submit(net: LocalNetwork, rounds: int = 1, shards: int = 1, steps: int = 100, seed: int = 1,
           commit_window: int = 60) -> int:
    train, _ = digits(image=False)
    store = open_store(net.store_spec)
    data = train.to_bytes()
    store.put(data)
    spec = parse_spec(job_spec_dict(dataset_entry(train, data), rounds, shards, steps, seed))
    requester = Requester(protocol(net), store, net.account(1))
    return submit_job(requester, spec, Offer(10 * E18, 100 * E18, commit_window)).job_id


def wait_job(net: LocalNetwork, job: int, timeout: float = 180) -> None:
    view = ChainView(protocol(net))
    wait_until(lambda: view.job_state(job).status is JobStatus.COMPLETED, timeout, f"job {job} to complete",
               every=0.5, on_wait=net.check_alive)


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
    at = int(net.w3.eth.block_number)
    pool_balance = token.balance_of(pool.address, block=at)
    owed = pool.total_escrow(block=at) + pool.total_bonds(block=at) + pool.total_credit(block=at)
    assert pool_balance == owed, f"pool holds {pool_balance}, owes {owed} at block {at}"
    assert token.balance_of(registry.address, block=at) == registry.total_staked(block=at)
