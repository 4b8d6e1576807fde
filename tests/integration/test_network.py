"""Reliability of the market: real anvil, real daemon processes, real training and replay.

One market (2 solvers, 2 validators, 1 challenger) serves the tests in order;
each test leaves every daemon running again. The store-outage test runs its
own small market on a real IPFS node behind a proxy it can switch off.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from gensyn_py.chain.view import ChainView
from gensyn_py.explorer.queries import tokens
from gensyn_py.explorer.server import ExplorerServer
from gensyn_py.sim.localnet import LocalNetwork, wait_until
from gensyn_py.sim.market import Market, NodeSpec
from gensyn_py.storage.base import ContentStore
from gensyn_py.storage.factory import open_store
from gensyn_py.types import UnitStatus
from tests.integration.browser import as_phone, screenshot, until
from tests.integration.ipfs_daemon import JsIpfsDaemon
from tests.integration.market_kit import (
    assert_conservation,
    first_new_block,
    pool_actions,
    protocol,
    slashes,
    start_market,
    submit,
    wait_job,
    wait_log,
)
from tests.integration.outage_proxy import OutageProxy

E18 = 10**18
COLLATERAL = 100 * E18


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNetwork]:
    # A validator is killed between sealing its verdict and committing it: its restart on a loaded 2-core CI
    # machine (process start, imports, resync) took longer than the 12 s test window once, and a validator
    # absent for its whole commit window is rightly penalised. The window here covers a restart.
    net = start_market(tmp_path_factory.mktemp("market"), verdictCommitWindow=40)
    try:
        yield net
    finally:
        net.stop()


def _assigned(net: LocalNetwork, job: int, count: int) -> list[str]:
    """Names of the solvers once `count` of the job's units are assigned at the same time."""
    view = ChainView(protocol(net))

    def assigned() -> list[str] | None:
        units = [u for u in view.units(job) if u.status is UnitStatus.ASSIGNED]
        return [u.solver for u in units] if len(units) >= count else None

    by_address = {n.account.address: name for name, n in net.nodes.items()}
    return [by_address[a] for a in wait_until(assigned, 60, f"{count} units assigned")]


def _wait_retry(net: LocalNetwork, marks: dict[str, int], error: str) -> None:
    """Until some daemon logs a retried cycle whose error mentions `error`."""
    def retried() -> bool:
        return any(r.get("event") == "cycle.retry" and error in str((r.get("fields") or {}).get("error"))
                   for name in net.nodes for r in net.log_lines(name)[marks[name]:])

    wait_until(retried, 60, f"a daemon to back off on {error}")


def test_daemons_killed_mid_job_finish_it_without_repeating_anything(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    rng = random.Random()
    marks = {name: len(net.log_lines(name)) for name in net.nodes}
    steps = 2000  # seconds of training: the kill lands mid-unit
    job = submit(net, rounds=1, shards=2, steps=steps, seed=11)
    solver = _assigned(net, job, 2)[0]
    step = rng.choice(range(200, 1000, 200))  # progress is logged every 200 steps
    print(f"killing {solver} at step {step}")
    wait_log(net, solver, "unit.progress", after=marks[solver], step=step)
    net.restart(solver)  # SIGKILL, then start again
    assert not any(r.get("event") == "unit.committed" for r in net.log_lines(solver)[marks[solver]:])
    wait_log(net, "validator-1", "verdict", after=marks["validator-1"])
    net.restart("validator-1")
    wait_log(net, "challenger", "audit", after=marks["challenger"])
    net.restart("challenger")
    wait_job(net, job)

    resumed = wait_log(net, solver, "unit.resumed", after=marks[solver])
    # From its last local checkpoint (training went on between the log line and the kill), not from scratch.
    assert 0 < resumed["fields"]["step"] < steps and resumed["fields"]["step"] % 20 == 0
    repeated = {k: n for k, n in pool_actions(net, start).items() if n > 1}
    assert not repeated, f"actions sent twice: {repeated}"
    finalized = protocol(net)["TaskPool"].events.UnitFinalized().get_logs(from_block=start)
    assert len(finalized) == 3 and len({e["args"]["unitId"] for e in finalized}) == 3  # each unit paid once
    assert slashes(net, start) == []
    assert_conservation(net)


def test_the_daemons_run_a_diloco_job_with_carried_inner_state_over_two_rounds(market: LocalNetwork) -> None:
    """Solvers aggregate with the outer step from the previous round's aggregate, validators recompute it,
    and each shard's round-1 unit starts from its own round-0 optimizer state: nobody is slashed."""
    net = market
    start = first_new_block(net)
    diloco = {"rule": "diloco", "outer_lr": 0.7, "outer_momentum": 0.9, "inner_state": "carry"}
    job = submit(net, rounds=2, shards=2, steps=40, seed=13, aggregation=diloco)
    wait_job(net, job, 240)
    view = ChainView(protocol(net))
    units = [view.unit(u) for u in view.unit_ids(job)]
    aggregates = [u for u in units if u.is_aggregation]
    assert sorted(u.round for u in aggregates) == [0, 1]
    assert all(u.status is UnitStatus.FINAL for u in units)
    store = open_store(net.store_spec)
    for agg in aggregates:  # each aggregate carries the outer momentum the next round continues
        commitment = view.commitment(agg.unit_id)
        assert commitment is not None
        names = load_state_names(store, commitment.manifest_cid)
        assert any(n.startswith("outer/") and n.endswith("/momentum") for n in names), agg.round
    assert slashes(net, start) == []
    assert_conservation(net)


def test_a_unit_trained_by_two_processes_commits_the_one_process_root(market: LocalNetwork, tmp_path: Path) -> None:
    """Issue 15's bar: a solver running `--data-parallel 2` trains a repro unit with a helper process; its
    committed checkpoint root is the one a single process computes, validators accept it, nobody is slashed."""
    from gensyn_py.proof.content import JobContent
    from gensyn_py.proof.unit import commit_segments
    from gensyn_py.storage.local import LocalStore
    from gensyn_py.train.trainer import Trainer

    net = market
    start = first_new_block(net)
    net.kill("solver-1")  # the unit goes to the data-parallel solver
    grouped = net.nodes["solver-2"]
    mark = len(net.log_lines("solver-2"))
    net.restart("solver-2", "--data-parallel", "2")
    try:
        job = submit(net, steps=60, seed=14)
        wait_job(net, job)
        wait_log(net, "solver-2", "unit.data_parallel", after=mark, processes=2)
    finally:
        grouped.args = [a for a in grouped.args if a not in ("--data-parallel", "2")]
        net.restart("solver-2")
        net.restart("solver-1")
    view = ChainView(protocol(net))
    (unit_id,) = view.unit_ids(job)
    unit = view.unit(unit_id)
    assert unit.solver == grouped.account.address
    commitment = view.commitment(unit_id)
    assert commitment is not None
    content = JobContent(view, open_store(net.store_spec))
    spec, dataset = content.spec(job), content.dataset(job)
    alone = commit_segments(Trainer(spec, dataset, unit.round, unit.shard, "cpu"), LocalStore(tmp_path), job,
                            overlap=False, solver=grouped.account.address)  # transcripts bind the committer
    assert alone.checkpoint_root == commitment.checkpoint_root
    assert slashes(net, start) == []
    assert_conservation(net)


def load_state_names(store: ContentStore, manifest_cid: str) -> set[str]:
    """The tensor names of a unit's last committed checkpoint."""
    from gensyn_py.proof.aggregation_unit import load_state
    from gensyn_py.proof.commitment import Manifest

    manifest = Manifest.from_bytes(store.get(manifest_cid))
    return set(load_state(store.get(manifest.checkpoint_cids[-1])))


def test_a_vanished_solver_loses_its_unit_reputation_and_a_bounded_liveness_penalty(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    registry = protocol(net).registry()
    net.kill("solver-1")  # only solver-2 is there to claim
    mark = len(net.log_lines("solver-2"))
    job = submit(net, steps=2000, seed=12, commit_window=20)  # seconds of training: it vanishes mid-unit
    assert _assigned(net, job, 1) == ["solver-2"]
    vanished = net.nodes["solver-2"].account.address
    before = registry.reputation_of(vanished)
    wait_log(net, "solver-2", "unit.progress", after=mark)
    net.kill("solver-2")  # SIGKILL and stays away
    assert not any(r.get("event") == "unit.committed" for r in net.log_lines("solver-2")[mark:])
    net.restart("solver-1")
    try:
        wait_job(net, job)
    finally:
        net.restart("solver-2")

    unit = ChainView(protocol(net)).units(job)[0]
    assert unit.solver == net.nodes["solver-1"].account.address
    timed_out = protocol(net)["TaskPool"].events.UnitTimedOut().get_logs(from_block=start)
    assert [e["args"]["solver"] for e in timed_out] == [vanished]
    after = registry.reputation_of(vanished)
    assert (after.missed, after.frauds) == (before.missed + 1, before.frauds) and not registry.is_jailed(vanished)
    # a fault, not fraud: not jailed, and only the liveness penalty taken (a share of the unit's collateral,
    # credited to the requester whose job waited), so claiming and abandoning is not free
    collateral = Market(net, requester_tokens=0).collateral_for(2000 // 20)  # 100 segments: above COLLATERAL
    penalty = collateral * int(protocol(net).deployment["params"]["livenessPenaltyBps"]) // 10_000
    assert slashes(net, start) == [(vanished, penalty)]
    assert [e["args"]["penalty"] for e in timed_out] == [penalty]
    assert registry.bonded_of(vanished) == 1_000 * E18 - penalty
    assert_conservation(net)


def test_a_vanished_solvers_unit_is_resumed_from_its_last_partial_commitment(market: LocalNetwork) -> None:
    """Issue 11, resume not restart: the vanished solver had published partial progress; the next solver
    resumes from it (not from step 0), its unit replays on every sampled segment and is paid; the vanished
    one pays the liveness penalty and is paid nothing."""
    from gensyn_py.proof.commitment import Manifest
    from gensyn_py.storage.factory import open_store

    net = market
    start = first_new_block(net)
    net.kill("solver-1")
    vanishing = net.nodes["solver-2"]
    mark = len(net.log_lines("solver-2"))
    net.restart("solver-2", "--partial-every", "5")  # a partial every 5 of the 100 segments (100 steps)
    try:
        job = submit(net, steps=2000, seed=15, commit_window=20)
        assert _assigned(net, job, 1) == ["solver-2"]
        published = wait_log(net, "solver-2", "unit.partial", after=mark)
        net.kill("solver-2")  # SIGKILL and stays away, having published at least one partial
        assert not any(r.get("event") == "unit.committed" for r in net.log_lines("solver-2")[mark:])
        mark1 = len(net.log_lines("solver-1"))
        net.restart("solver-1")
        wait_job(net, job)
    finally:
        vanishing.args = [a for a in vanishing.args if a not in ("--partial-every", "5")]
        net.restart("solver-2")

    view = ChainView(protocol(net))
    unit = view.units(job)[0]
    assert unit.solver == net.nodes["solver-1"].account.address
    # The vanished solver's last partial (the resuming solver may have published partials of its own since).
    partial = [q for q in view.partials(unit.unit_id) if q.solver == vanishing.account.address][-1]
    assert partial.segments >= published["fields"]["segments"]
    resumed = wait_log(net, "solver-1", "unit.resumed_partial", after=mark1)
    assert resumed["fields"]["step"] == partial.segments * 20 > 0  # from the partial, not from step 0
    commitment = view.commitment(unit.unit_id)
    assert commitment is not None
    manifest = Manifest.from_bytes(open_store(net.store_spec).get(commitment.manifest_cid))
    assert manifest.inherited == ((vanishing.account.address, partial.segments),)
    assert manifest.prefix(partial.segments).root() == partial.root
    finalized = protocol(net)["TaskPool"].events.UnitFinalized().get_logs(from_block=start)
    assert [e["args"]["solver"] for e in finalized] == [unit.solver]
    timed_out = protocol(net)["TaskPool"].events.UnitTimedOut().get_logs(from_block=start)
    penalty = timed_out[0]["args"]["penalty"]
    assert [(e["args"]["solver"]) for e in timed_out] == [vanishing.account.address] and penalty > 0
    assert slashes(net, start) == [(vanishing.account.address, penalty)]  # the penalty only: nobody honest slashed
    assert_conservation(net)


def test_a_lazy_validator_is_caught_and_loses_stake(market: LocalNetwork) -> None:
    net = market
    start = first_new_block(net)
    net.restart("validator-2", "--lazy")
    lazy = net.nodes["validator-2"]
    try:
        job = submit(net, steps=100, seed=13)
        wait_log(net, "validator-2", "verdict.reveal_refused", after=0, reason="TranscriptMismatch")
        wait_job(net, job)
    finally:
        lazy.args = [a for a in lazy.args if a != "--lazy"]
        net.restart("validator-2")
    bond = 50 * E18 * 500 // 10_000
    assert slashes(net, start) == [(lazy.account.address, bond)]
    assert_conservation(net)


@dataclass(frozen=True)
class CheatPlay:
    start: int  # the first block of the cheat play
    cheater: str
    job: int
    unit_id: int


@pytest.fixture(scope="module")
def cheat_played(market: LocalNetwork) -> CheatPlay:
    """A solver restarted dishonest takes a unit, is convicted and slashed; an honest one redoes the unit.

    Played once per module: its test checks the outcome, the explorer's browser test shows it."""
    net = market
    # The committee never seats the unit's own validators: a third validator, there before the dispute opens,
    # is the committee (one seat, so one revealed vote is a quorum).
    if "validator-3" not in net.nodes:
        Market(net).start_nodes([NodeSpec("validator-3", "validator", 7)])
    start = first_new_block(net)
    net.kill("solver-1")
    cheater = net.nodes["solver-2"]
    net.restart("solver-2", "--cheat", "wrong_lr")  # every segment differs: any replay rejects
    try:
        job = submit(net, steps=100, seed=14)
        view = ChainView(protocol(net))
        unit_id = view.unit_ids(job)[0]
        wait_until(lambda: view.unit(unit_id).status is UnitStatus.OPEN and slashes(net, start), 120,
                   "the cheater to be slashed and the unit reopened")
        net.restart("solver-1")
        wait_job(net, job)
    finally:
        cheater.args = [a for a in cheater.args if a not in ("--cheat", "wrong_lr")]
        net.restart("solver-2")
    return CheatPlay(start, cheater.account.address, job, unit_id)


def test_a_cheating_solver_is_slashed_and_its_unit_redone(market: LocalNetwork, cheat_played: CheatPlay) -> None:
    net, play = market, cheat_played
    assert slashes(net, play.start) == [(play.cheater, COLLATERAL)]  # its whole collateral, nobody else
    assert protocol(net).registry().is_jailed(play.cheater)
    assert ChainView(protocol(net)).unit(play.unit_id).solver == net.nodes["solver-1"].account.address
    assert_conservation(net)


def test_the_explorer_follows_the_market_in_a_browser(market: LocalNetwork, cheat_played: CheatPlay,
                                                      tmp_path: Path, browser: WebDriver) -> None:
    """What a person sees: a new job's units reach Final live (no reload), its loss chart has points, the
    cheater of the test before has its slash on its node page, the dispute says who paid whom, phones fit."""
    net = market
    pool = protocol(net).pool()
    cheater = cheat_played.cheater
    with ExplorerServer(protocol(net), tmp_path / "index.sqlite", open_store(net.store_spec)) as explorer:
        job = submit(net, steps=40, seed=21)
        browser.get(f"{explorer.url}/job/{job}")
        first_version = int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-version") or 0)
        # Opened at once, the page may say "no job" until the index has the block; it swaps itself in live.
        until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "section.unit"), 60, "the job's units")
        states = lambda d: d.execute_script(  # noqa: E731  (read at once: the page may be swapped meanwhile)
            "return [...document.querySelectorAll('.unit h3 .st')].map(e => e.textContent)")
        # The chain first (a stuck market says where each unit stands), then the page, which follows it live.
        wait_job(net, job, 240)
        try:
            until(browser, lambda d: states(d) and all(s == "Final" for s in states(d)), 60, "every unit to be Final")
        except TimeoutException as e:  # the chain is done: say what the page and the index hold
            version = browser.find_element(By.TAG_NAME, "body").get_attribute("data-version")
            health = requests.get(f"{explorer.url}/healthz", timeout=10).json()
            fragment = requests.get(f"{explorer.url}/job/{job}?fragment=1", timeout=10)
            now = f"HTTP {fragment.status_code} {fragment.text[:2000]}"
            raise AssertionError(f"{e.msg}: the page shows {states(browser)} at version {version}; the index: "
                                 f"{health}; its fragment now: {now}") from e
        assert int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-version") or 0) > first_version
        assert pool.job_state(job).status.name == "COMPLETED"
        points = until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#loss circle.pt")), 120,
                       "the loss chart's points")
        assert points >= 2  # one per committed checkpoint replayed (a 40-step unit has 2 segments)
        until(browser, lambda d: d.find_elements(By.ID, "download"), 60, "the final model's download link")
        screenshot(browser, "job")

        browser.get(f"{explorer.url}/node/{cheater}")
        slashed = browser.find_element(By.ID, "slashed").text
        # Its whole collateral for the cheat, plus whatever the module's earlier tests slashed it (a liveness
        # penalty when it played the vanished solver): the page sums the node's history, as the chain does.
        assert slashed == tokens(sum(a for node, a in slashes(net, 0) if node == cheater)), slashed
        assert int(slashed.split(".")[0].replace(",", "")) >= 100
        assert browser.find_elements(By.CSS_SELECTOR, "tr.ev-Slashed") and browser.find_elements(By.ID, "jailed")
        screenshot(browser, "cheater-node")

        # The committee's dispute page (/dispute/N) or the dispute game's (/game/N), as the pool routed it.
        disputes = browser.find_elements(By.CSS_SELECTOR, "a[href^='/dispute/'], a[href^='/game/']")
        assert disputes, "the cheater's page links its dispute"
        dispute_page = "/" + str(disputes[0].get_attribute("href")).split("/", 3)[3]
        disputes[0].click()
        until(browser, lambda d: "dispute" in d.find_element(By.TAG_NAME, "h1").text.lower(), 30, "the dispute page")
        assert "Solver Fraud" in browser.find_element(By.TAG_NAME, "h1").text
        paid = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.pay")]
        assert any(r.startswith("slashed") and "100" in r for r in paid), paid
        screenshot(browser, "dispute")

        browser.get(explorer.url)
        rows = browser.find_elements(By.CSS_SELECTOR, "a.addr")
        assert {cheater.lower()} <= {r.get_attribute("title").lower() for r in rows if r.get_attribute("title")}
        screenshot(browser, "network")
        as_phone(browser)  # nothing wider than a phone's screen but the tables, which scroll in their box
        for page in (f"/job/{job}", f"/node/{cheater}", dispute_page, "/"):
            browser.get(explorer.url + page)
            width = browser.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
            assert width == [390, 390], (page, width)  # a wider page would widen a phone's layout viewport
        screenshot(browser, "network-phone")
        as_phone(browser, False)
        browser.get(f"{explorer.url}/job/999")
        assert "There is no job 999" in browser.page_source
    assert slashes(net, cheat_played.start) == [(cheater, COLLATERAL)]  # watching changed nothing


def test_rpc_restart_and_store_outage_are_ridden_out(tmp_path: Path) -> None:
    with JsIpfsDaemon() as ipfs:
        host, port = ipfs.api_url.removeprefix("http://").split(":")
        proxy = OutageProxy(host, int(port))
        proxy.up()
        net = start_market(tmp_path, store=proxy.url, nodes={
            "solver-1": ("solver", 2), "validator-1": ("validator", 4), "validator-2": ("validator", 5)},
            verdictCommitWindow=60, revealWindow=30)  # windows longer than the outages, as on a real network
        try:
            start = first_new_block(net)
            marks = {name: len(net.log_lines(name)) for name in net.nodes}
            job = submit(net, steps=200, seed=15)
            view = ChainView(protocol(net))
            unit_id = view.unit_ids(job)[0]
            wait_until(lambda: view.unit(unit_id).status is UnitStatus.COMMITTED, 90, "the commitment")
            proxy.down()  # the IPFS node is unreachable while the validators fetch checkpoints
            _wait_retry(net, marks, "StorageError")
            proxy.up()
            marks = {name: len(net.log_lines(name)) for name in net.nodes}
            net.chain_down()  # anvil goes down, saving its state
            _wait_retry(net, marks, "")
            net.chain_up()  # and comes back on the same port with the same chain
            wait_job(net, job)
            assert slashes(net, start) == []
            assert_conservation(net)
        finally:
            net.stop()
            proxy.down()
