"""The explorer's index and pages against a real anvil: a job through its states, a reorg, a dead RPC,
content that cannot be fetched, unknown ids, and a dispute game played over a real repro unit next to a committee
dispute of the same number, in pages and in headless Chromium. (The browser test over a whole market is in
tests/integration/test_network.py.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from eth_account.signers.local import LocalAccount
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.events import EventRecord
from gensyn_py.devnet.anvil import AnvilNode
from gensyn_py.explorer import games, pages, queries, schema
from gensyn_py.explorer.indexer import Indexer
from gensyn_py.explorer.refs import jsonable
from gensyn_py.explorer.server import ExplorerServer, free_port
from gensyn_py.proof.segment_side import SegmentSide
from gensyn_py.storage.local import LocalStore
from tests.contracts.flows import honest_unit, rejected_unit
from tests.contracts.helpers import E18, Protocol, Work
from tests.contracts.segment_game_play import INTERVAL, GamePlay, honest, play, rejected, work_of
from tests.contracts.test_segment_game import cheat
from tests.integration.browser import as_phone, screenshot, until

ROOT = Path(__file__).resolve().parents[2]


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
                        # the committee's dispute 1 is not the game's: each resolver numbers its own from 1
                        (f"/game/{dispute_id}", f"no game dispute {dispute_id}"), ("/game/77", "no game dispute 77"),
                        ("/step/77", "no step game 77"),
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


# ---- a dispute game next to a committee dispute of the same number ----


def game_disputed(p: Protocol, unit_id: int) -> tuple[list[SegmentSide], Work, int, LocalAccount]:
    """The repro cheat of tests/contracts/test_segment_game.py committed as unit `unit_id` of a job with a step
    table, and its segment 1 rejected, which the pool hands to the game: (sides, work, dispute id, validator)."""
    _, sides = cheat()
    work = work_of(sides)
    did, validator = rejected(p, work, segment=1, unit_id=unit_id)
    assert p.pool.functions.resolverOf(unit_id).call() == p.game.address
    return sides, work, did, validator


def play_game(p: Protocol, did: int, work: Work, sides: list[SegmentSide],
              validator: LocalAccount) -> tuple[GamePlay, Any]:
    """Both sides play from their own replays down to the element; account 9 settles: (the play, settle receipt)."""
    return play(p, did, work, 1, (p.accounts[2], sides[1]), (validator, honest()[1]))


def in_order(wanted: list[tuple[str, str]], seen: list[tuple[str, str]]) -> bool:
    """Every (contract, event) of `wanted` appears in `seen`, in that order (others may come between)."""
    it = iter(seen)
    return all(w in it for w in wanted)


def test_a_game_dispute_and_a_committee_dispute_of_the_same_number_each_have_their_page(
        proto: Protocol, explorer: ExplorerServer) -> None:
    p, a = proto, proto.accounts
    committee_id, _ = rejected_unit(p)  # job 1, unit 1: no step table, so the committee
    sides, work, game_id, validator = game_disputed(p, unit_id=2)
    assert committee_id == game_id == 1  # each resolver numbers its disputes from 1
    g, settled = play_game(p, game_id, work, sides, validator)
    assert g.step_game is not None
    explorer.poll_once()
    db = explorer.reader

    # The committee's dispute 1 holds nothing of the game's, and the game's nothing of the committee's.
    committee = queries.dispute_view(db, committee_id)
    assert committee is not None and committee.unit_id == 1 and committee.outcome == "Open"
    assert not {e.contract for e in committee.events} & games.GAMES
    view = games.game_view(db, game_id)
    assert view is not None and "DisputeCommittee" not in {e.contract for e in view.events}
    assert (view.unit_id, view.job_id, view.solver, view.opener) == (2, 2, a[2].address, validator.address)

    # The stages, both games', in chain order, down to the pool's settlement.
    seen = [(e.contract, e.name) for e in view.events]
    sg, st, pool = "SegmentGame", "StepGame", "TaskPool"
    assert in_order([(sg, "DisputeOpened"), (pool, "UnitDisputed"), (sg, "SegmentOpened"), (sg, "Contested"),
                     (sg, "StepsMoved"), (sg, "StepNarrowed"), (st, "GameOpened"), (sg, "StepRevealed"),
                     (st, "TraceContested"), (st, "OpsMoved"), (st, "OpNarrowed"), (st, "OpOpened"),
                     (st, "GameDecided"), (sg, "GameDecided"), (pool, "DisputeSettled")], seen), seen
    assert view.step_games == [g.step_game.game_id]
    assert ("step", f"{g.step} of the segment (unit step {INTERVAL + g.step})") in view.narrowed
    assert ("op", str(g.step_game.op)) in view.narrowed
    # The contract recomputed the flipped element: the counter won, the solver was convicted.
    assert (view.outcome, view.winner, view.winner_side) == ("Solver Fraud", validator.address, "counter")
    assert view.reason == "StepGame: WrongElement" and view.stage == "decided and settled"

    # Moves and gas per side are the transactions each side sent, as the players counted them; account 9 settled.
    by_role = {s.role: s for s in view.sides}
    for role in ("claimant", "counter"):
        played = (g.moves[role] + g.step_game.moves[role], g.gas[role] + g.step_game.gas[role], 0)
        assert (by_role[role].moves, by_role[role].gas, by_role[role].calls) == played, role
    assert (by_role["others"].moves, by_role["others"].calls, by_role["others"].calls_gas) == (
        0, 1, settled["gasUsed"])

    # Who paid whom: the slash and the credits of the settling transaction, as web3 decodes its receipt.
    registry = p.w3.eth.contract(address=p.registry.address, abi=p.artifacts["NodeRegistry"]["abi"])
    expected = ([("slashed", e["args"]["node"], e["args"]["amount"]) for e in p.events(settled, registry, "Slashed")]
                + [("credited", e["args"]["account"], e["args"]["amount"])
                   for e in p.events(settled, p.pool, "Credited")])
    assert sorted(view.payments) == sorted(expected) and ("slashed", a[2].address, 100 * E18) in view.payments

    # Pages and links: each dispute at its own address, from the network page, the unit pages and the pool's events.
    page = get(explorer, f"/game/{game_id}").text
    for words in ("Game dispute 1", "Solver Fraud", "StepGame: WrongElement", 'href="/unit/2"', "c-StepGame",
                  f'href="/node/{validator.address}"', "TraceContested", "OpOpened",
                  '<span class="k">reason</span> WrongElement'):  # the step game's decision, named in its row
        assert words in page, words
    committee_page = get(explorer, f"/dispute/{committee_id}").text
    assert 'href="/unit/1"' in committee_page and "StepNarrowed" not in committee_page
    network = get(explorer, "/").text
    assert 'href="/game/1"' in network and 'href="/dispute/1"' in network
    game_unit, committee_unit = get(explorer, "/unit/2").text, get(explorer, "/unit/1").text
    assert 'href="/game/1"' in game_unit and 'href="/dispute/1"' not in game_unit
    assert 'href="/dispute/1"' in committee_unit and 'href="/game/1"' not in committee_unit
    job = queries.job_view(db, 2)
    assert job is not None and [d.href for d in job.disputes] == ["/game/1"]
    disputed = next(e for e in job.units[0].events if e.name == "UnitDisputed")  # the pool's: its resolver's link
    assert 'href="/game/1"' in pages.describe(disputed)
    step_page = get(explorer, f"/step/{g.step_game.game_id}")  # a step game's page is its dispute's
    assert step_page.history and step_page.history[0].status_code == 303 and step_page.url.endswith("/game/1")

    # A game event these pages do not know (a stage a later contract adds) is shown by its name and arguments.
    last = view.events[-1]
    explorer.indexer._insert(EventRecord("SegmentGame", "StageAddedLater", {"disputeId": game_id, "note": 4321},
                                         p.game.address, last.block, "0x" + "00" * 32, "0x" + "ab" * 32, 10_000), {})
    later = games.game_view(db, game_id)
    assert later is not None and later.stage == "after StageAddedLater"
    page = get(explorer, f"/game/{game_id}").text
    assert "StageAddedLater" in page and "4321" in page


def test_the_reason_names_are_the_contracts() -> None:
    """The pages name a game's `GameDecided.reason` by the enum of its interface (contracts/interfaces/)."""
    for contract, source in (("SegmentGame", "ISegmentGame.sol"), ("StepGame", "IStepGame.sol")):
        text = (ROOT / "contracts" / "interfaces" / source).read_text()
        body = re.search(r"enum Reason \{(.*?)\}", text, re.S)
        assert body is not None, source
        names = [re.sub(r"//.*", "", line).strip().rstrip(",") for line in body.group(1).splitlines()]
        assert tuple(n for n in names if n) == games.REASONS[contract], source


def test_a_game_dispute_page_follows_the_game_in_a_browser(proto: Protocol, explorer: ExplorerServer,
                                                          browser: WebDriver) -> None:
    """Opened from the network page while the counter has not moved yet, the page follows the game to its
    decision without a reload: the winner, the reason, each side's moves, the step game's events, who paid."""
    p = proto
    sides, work, did, validator = game_disputed(p, unit_id=1)
    explorer.poll_once()
    browser.get(explorer.url)
    browser.find_element(By.CSS_SELECTOR, f"#disputes a[href='/game/{did}']").click()
    until(browser, lambda d: f"Game dispute {did}" in d.find_element(By.TAG_NAME, "h1").text, 30, "the game page")
    assert "Open" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.ID, "stage").text == "the counter contests the segment"
    version = browser.find_element(By.TAG_NAME, "body").get_attribute("data-version")

    g, _ = play_game(p, did, work, sides, validator)
    assert g.step_game is not None
    explorer.poll_once()  # the index changes: the page swaps itself in
    until(browser, lambda d: "Solver Fraud" in d.find_element(By.TAG_NAME, "h1").text, 30, "the decision, live")
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-version") != version  # no reload
    assert browser.find_element(By.ID, "winner").text == "counter"
    assert browser.find_element(By.ID, "reason").text == "StepGame: WrongElement"
    moves = {role: browser.find_element(By.CSS_SELECTOR, f"#sides tr.side-{role} td:nth-child(3)").text
             for role in ("claimant", "counter")}
    assert moves == {role: str(g.moves[role] + g.step_game.moves[role]) for role in moves}
    assert browser.find_elements(By.CSS_SELECTOR, "tr.c-StepGame.ev-OpNarrowed")
    paid = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.pay")]
    assert any(r.startswith("slashed") and "100" in r for r in paid), paid
    screenshot(browser, "game-dispute")
    as_phone(browser)  # a phone's width: the tables scroll inside their boxes
    try:
        browser.get(f"{explorer.url}/game/{did}")
        width = browser.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
        assert width == [390, 390], width
    finally:
        as_phone(browser, False)


def test_a_page_whose_refresh_failed_catches_up_with_the_index(proto: Protocol, explorer: ExplorerServer,
                                                              browser: WebDriver) -> None:
    """A live page told of a change whose fetch then fails (the server busy or restarting) tries again: it does
    not wait for a next change that may never come, as when the job it shows has just completed."""
    job = proto.submit(proto.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
    explorer.poll_once()
    browser.get(f"{explorer.url}/job/{job}")
    state = lambda d: d.find_element(By.CSS_SELECTOR, ".unit h3 .st").text  # noqa: E731
    assert state(browser) == "Open"
    browser.execute_script("""const real = window.fetch; window.fetches = 0;
                              window.fetch = function () { window.fetches++; return real.apply(this, arguments); };""")
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*fragment=1*"]})
    try:
        honest_unit(proto, 1, proto.accounts[2], Work.honest(4))
        explorer.poll_once()  # the stream announces the change; the page's fetch of it fails
        until(browser, lambda d: d.execute_script("return window.fetches") >= 2, 30, "a failed fetch tried again")
        assert state(browser) == "Open"
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    until(browser, lambda d: state(d) == "Final", 30, "the page to catch up with no further change")


def test_a_live_page_keeps_its_elements_when_an_index_change_leaves_it_as_it_was(
        proto: Protocol, explorer: ExplorerServer, browser: WebDriver) -> None:
    """Another job's news bumps the index: the page reads it, but swaps in only what changed (the footer's block
    and version), so an element a user is clicking (or a test holds) stays attached. A change to the page's own
    content is still swapped in."""
    job = proto.submit(proto.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
    explorer.poll_once()
    browser.get(f"{explorer.url}/job/{job}")
    version = lambda d: int(d.find_element(By.TAG_NAME, "body").get_attribute("data-version") or 0)  # noqa: E731
    first = version(browser)
    browser.execute_script("window.held = document.querySelector('.unit h3 .st');")  # the unit's state
    attached = "return document.getElementById('page').contains(window.held)"
    proto.submit(proto.accounts[1], collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)  # another job
    explorer.poll_once()
    until(browser, lambda d: version(d) > first, 30, "the page to read the new index version")
    assert browser.execute_script(attached), "an unchanged page was swapped in anew"
    honest_unit(proto, 1, proto.accounts[2], Work.honest(4))  # this job's unit settles: the page changes
    explorer.poll_once()
    until(browser, lambda d: d.find_element(By.CSS_SELECTOR, ".unit h3 .st").text == "Final", 30, "Final")
    assert not browser.execute_script(attached)
