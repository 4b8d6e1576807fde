"""The explorer's index and pages against a real anvil: a job through its states, a reorg, a dead RPC,
content that cannot be fetched, unknown ids. (The browser test over a whole market is in
tests/integration/test_network.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.events import EventRecord
from gensyn_py.devnet.anvil import AnvilNode
from gensyn_py.explorer import queries, schema
from gensyn_py.explorer.indexer import Indexer
from gensyn_py.explorer.refs import jsonable
from gensyn_py.explorer.server import ExplorerServer, free_port
from gensyn_py.storage.local import LocalStore
from tests.contracts.flows import honest_unit, rejected_unit
from tests.contracts.helpers import E18, Protocol, Work


def contracts_of(p: Protocol, w3: Web3 | None = None) -> ProtocolContracts:
    return ProtocolContracts(w3 or p.w3, {"chainId": p.info["chainId"], "contracts": p.info["contracts"]})


@pytest.fixture
def explorer(proto: Protocol, tmp_path: Path) -> Iterator[ExplorerServer]:
    with ExplorerServer(contracts_of(proto), tmp_path / "index.sqlite", LocalStore(tmp_path / "store"),
                        follow=False) as server:  # the test polls
        yield server


def get(server: ExplorerServer, path: str) -> requests.Response:
    return requests.get(server.url + path, timeout=30)


def test_a_settled_unit_shows_every_state_with_gas_and_the_money(proto: Protocol, explorer: ExplorerServer) -> None:
    job = proto.submit(proto.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
    honest_unit(proto, 1, proto.accounts[2], Work.honest(4))
    explorer.poll_once()
    view = queries.job_view(explorer.reader, job)
    assert view is not None and [u.state for u in view.units] == ["Final"]
    unit = view.units[0]
    names = [e.name for e in unit.events]
    assert names[:4] == ["UnitOpened", "UnitClaimed", "UnitCommitted", "ValidatorsDrawn"]
    assert names[-1] == "UnitFinalized" and names.count("VerdictRevealed") == len(proto.unit(1)["validators"])
    assert all(e.gas and e.sender for e in unit.events)  # every line says who sent it and its gas
    assert unit.solver == proto.accounts[2].address and view.paid_solvers > 0
    page = get(explorer, f"/job/{job}").text
    assert "UnitFinalized" in page and f'href="/node/{proto.accounts[2].address}"' in page
    assert 'href="/unit/1"' in page
    # The spec's CID names nothing in the store: the page says so instead of failing.
    assert explorer.content is not None and explorer.content.run_once() >= 1
    explorer.poll_once()
    assert "cannot be fetched" in get(explorer, f"/job/{job}").text


def test_a_reorg_takes_back_what_it_removed(proto: Protocol, explorer: ExplorerServer) -> None:
    w3 = proto.w3
    proto.submit(proto.accounts[1])  # job 1, in the last block
    explorer.poll_once()
    assert queries.job_view(explorer.reader, 1) is not None
    w3.provider.make_request("anvil_reorg", [1, []])  # type: ignore[arg-type]  # its block, replaced by an empty one
    result = explorer.indexer.poll()
    assert result.reorged_to is not None and result.reorged_to < result.head
    assert queries.job_view(explorer.reader, 1) is None
    assert get(explorer, "/job/1").status_code == 404
    job = proto.submit(proto.accounts[1], specCid="bafyother")  # the chain goes on: the index follows it
    explorer.poll_once()
    view = queries.job_view(explorer.reader, job)
    assert view is not None and view.spec_cid == "bafyother"
    assert explorer.reader.execute("SELECT COUNT(*) FROM events WHERE name = 'JobSubmitted'").fetchone()[0] == 1


def test_a_dead_rpc_keeps_the_pages_serving_and_says_so(proto: Protocol, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    job = proto.submit(proto.accounts[1])
    Indexer(contracts_of(proto), schema.connect(db)).poll()
    dead = Web3(Web3.HTTPProvider(f"http://127.0.0.1:{free_port()}", request_kwargs={"timeout": 2}))
    with ExplorerServer(contracts_of(proto, dead), db, None, follow=False) as server:
        page = get(server, f"/job/{job}")
        assert page.status_code == 200 and "The chain did not answer" in page.text
        node = get(server, f"/node/{proto.accounts[1].address}")  # known from the index, standing unreadable
        assert node.status_code == 200 and "did not answer" in node.text


def test_unknown_ids_and_addresses_get_a_clear_404(proto: Protocol, explorer: ExplorerServer) -> None:
    dispute_id, _ = rejected_unit(proto)
    explorer.poll_once()
    assert get(explorer, f"/dispute/{dispute_id}").status_code == 200
    for path, words in [("/job/77", "no job 77"), ("/unit/77", "no unit 77"), ("/dispute/77", "no dispute 77"),
                        ("/node/0x1234", "not a 20-byte hex address"), ("/node/" + "0x" + "ab" * 20, "no protocol"),
                        ("/nothing/here", "/nothing/here"), ("/job/1/model", "only a completed job")]:
        r = get(explorer, path)
        assert r.status_code == 404 and words in r.text, (path, r.text[-300:])


def test_a_restarted_chain_is_followed_without_losing_the_index(tmp_path: Path, accounts: list,
                                                                 artifacts: dict) -> None:
    """anvil stopped and started again from its state file: the index keeps what it had and goes on."""
    state = tmp_path / "chain.json"
    node = AnvilNode(state_path=state).start()
    try:
        p = Protocol(Web3(Web3.HTTPProvider(node.url)), accounts, artifacts)
        p.fund(accounts[1], 1000 * E18)
        first = p.submit(accounts[1])
        db = schema.connect(tmp_path / "index.sqlite")
        Indexer(contracts_of(p), db).poll()
        node.stop()
        node = AnvilNode(port=node.port, state_path=state).start()
        second = p.submit(accounts[1])
        result = Indexer(contracts_of(p), db).poll()  # a new indexer process over the same file
        assert result.reorged_to is None
        assert queries.job_view(db, first) is not None and queries.job_view(db, second) is not None
    finally:
        node.stop()


def test_the_index_decodes_every_event_as_web3_does(proto: Protocol) -> None:
    """The explorer decodes raw logs with eth-abi (fast); web3's own decoding is the reference."""
    rejected_unit(proto)  # a dispute (address arrays) after the registrations (structs), a unit, verdicts
    contracts = contracts_of(proto)
    head = int(proto.w3.eth.block_number)
    ours = Indexer(contracts, schema.connect(":memory:")).fetch(0, head)
    theirs = contracts.event_reader().fetch(0, head)
    assert {"NodeRegistered", "ValidatorsDrawn", "VerdictRevealed", "UnitDisputed"} <= {r.event for r in ours}

    def seen(records: list[EventRecord]) -> list[tuple[Any, ...]]:
        return [(r.contract, r.event, jsonable(r.args), list(r.args), r.address, r.block_number, r.log_index,
                 r.tx_hash, r.block_hash) for r in records]

    assert seen(ours) == seen(theirs)
