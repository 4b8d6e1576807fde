"""Explorer benchmark: how fast the index catches up, and how fast a big job's page shows in a browser.

A real anvil with the real protocol: 10 jobs of 100 shards (1,000 units), every unit claimed, committed
and drawn (real transactions). Then:
  index_events_per_s   a fresh index catching up from block 0 to the head (decode, block headers,
                       receipts for gas, SQLite), events per second
  getlogs_events_per_s the baseline: one plain `eth_getLogs` over the same range and contracts, undecoded
  job_page_ms          job 1 (100 units, 450 events) served by the explorer and loaded in headless
                       Chromium until its load event (median of 5 loads after a first one); goal <= 1,000
  job_page_served_ms   the same page's HTML alone, fetched with requests (median of 5)
  job_getlogs_ms       the baseline: `eth_getLogs` of the same units' events straight from the chain
Prints the figures, then ONE JSON line (last).

Usage: .venv/bin/python bench/explorer.py [--jobs 10] [--shards 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import requests  # noqa: E402
from eth_account import Account  # noqa: E402
from eth_account.signers.local import LocalAccount  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.chain.contracts import ProtocolContracts  # noqa: E402
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.explorer import schema  # noqa: E402
from gensyn_py.explorer.indexer import Indexer  # noqa: E402
from gensyn_py.explorer.server import ExplorerServer  # noqa: E402
from tests.contracts.helpers import E18, SOLVER, VALIDATOR, Protocol, Work  # noqa: E402
from tests.integration.browser import start_browser  # noqa: E402


class Sender:
    """Signs and sends without waiting: anvil mines each transaction at once, in order of nonce."""

    def __init__(self, w3: Web3, acct: LocalAccount) -> None:
        self.w3, self.acct = w3, acct
        self.nonce = int(w3.eth.get_transaction_count(acct.address))
        self.last: Any = None

    def send(self, fn: Any) -> None:
        tx = fn.build_transaction({"from": self.acct.address, "nonce": self.nonce, "gas": 3_000_000,
                                   "maxFeePerGas": 10**10, "maxPriorityFeePerGas": 1})
        self.last = self.w3.eth.send_raw_transaction(self.acct.sign_transaction(tx).raw_transaction)
        self.nonce += 1

    def wait(self) -> None:
        if self.last is not None:
            assert self.w3.eth.wait_for_transaction_receipt(self.last)["status"] == 1


def build_chain(p: Protocol, jobs: int, shards: int) -> int:
    """`jobs` jobs of `shards` units, each claimed, committed and drawn; returns the unit count."""
    a = p.accounts
    p.node(a[2], SOLVER, stake=10 * jobs * shards * E18, price=E18)
    for v in a[3:8]:
        p.node(v, VALIDATOR)
    p.fund(a[1], 100 * jobs * shards * E18)
    for _ in range(jobs):
        p.submit(a[1], shards=shards, collateralPerUnit=2 * E18, maxPricePerUnit=2 * E18, commitWindow=3600)
    p.advance(p.params["claimWindow"])
    solver, keeper = Sender(p.w3, a[2]), Sender(p.w3, a[9])
    work = Work.honest(4)
    units = jobs * shards
    started = time.perf_counter()
    for unit in range(1, units + 1):
        solver.send(p.pool.functions.claim(unit))
        solver.send(p.pool.functions.commit(unit, work.root, work.final_hash, f"bafymanifest{unit}"))
        if unit > 1:
            keeper.send(p.pool.functions.drawValidators(unit - 1))  # its seed block is mined by now
        if unit % 200 == 0:
            solver.wait()
            keeper.wait()
            print(f"  chain: {unit}/{units} units claimed, committed, drawn ({time.perf_counter() - started:.0f}s)",
                  flush=True)
    solver.wait()
    p.mine(2)
    keeper.send(p.pool.functions.drawValidators(units))
    keeper.wait()
    return units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--shards", type=int, default=100)
    args = parser.parse_args()
    artifacts = compile_contracts()
    with AnvilNode() as node, tempfile.TemporaryDirectory() as tmp:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        p = Protocol(w3, [Account.from_key(k) for k in DEV_KEYS], artifacts)
        units = build_chain(p, args.jobs, args.shards)
        protocol = ProtocolContracts(w3, {"chainId": p.info["chainId"], "contracts": p.info["contracts"]})
        head = int(w3.eth.block_number)
        addresses = list(protocol.addresses.values())

        t = time.perf_counter()
        logs = w3.eth.get_logs({"fromBlock": 0, "toBlock": head, "address": addresses})
        getlogs_s = time.perf_counter() - t
        events = len(logs)
        print(f"chain: {units} units, {head} blocks, {events} protocol events")

        db_path = Path(tmp) / "index.sqlite"
        t = time.perf_counter()
        indexed = Indexer(protocol, schema.connect(db_path)).poll().events
        index_s = time.perf_counter() - t
        assert indexed == events, (indexed, events)
        print(f"index catch-up: {index_s:.2f}s, {events / index_s:,.0f} events/s; "
              f"eth_getLogs alone {getlogs_s:.2f}s, {events / getlogs_s:,.0f} events/s")

        unit_topics = ["0x" + (u).to_bytes(32, "big").hex() for u in range(1, args.shards + 1)]
        t = time.perf_counter()
        job_logs = w3.eth.get_logs({"fromBlock": 0, "toBlock": head, "address": addresses,
                                    "topics": [None, unit_topics]})
        job_getlogs_ms = (time.perf_counter() - t) * 1000

        with ExplorerServer(protocol, db_path, None, follow=False) as server:
            served = []
            for _ in range(5):
                t = time.perf_counter()
                html = requests.get(f"{server.url}/job/1", timeout=60).text
                served.append((time.perf_counter() - t) * 1000)
            job_served_ms = statistics.median(served)
            browser = start_browser()
            try:
                loads = []
                for _ in range(6):
                    t = time.perf_counter()
                    browser.get(f"{server.url}/job/1")  # returns at the page's load event
                    loads.append((time.perf_counter() - t) * 1000)
                rows = browser.execute_script("return document.querySelectorAll('tr.ev').length")
                sections = browser.execute_script("return document.querySelectorAll('section.unit').length")
            finally:
                browser.quit()
        assert sections == args.shards, sections
        job_page_ms = statistics.median(loads[1:])  # the first load also warms the browser's cache of the CSS
        print(f"job page: {sections} units, {rows} timeline rows, {len(html) / 1024:.0f} KiB; served in "
              f"{job_served_ms:.0f} ms, shown in Chromium in {job_page_ms:.0f} ms median (first {loads[0]:.0f} ms); "
              f"eth_getLogs of its {len(job_logs)} unit events {job_getlogs_ms:.0f} ms")
        print(json.dumps({
            "units": units, "events": events, "blocks": head,
            "index_events_per_s": round(events / index_s), "getlogs_events_per_s": round(events / getlogs_s),
            "index_vs_getlogs": round(getlogs_s / index_s, 4),
            "job_page_ms": round(job_page_ms, 1), "job_page_first_ms": round(loads[0], 1),
            "job_page_served_ms": round(job_served_ms, 1), "job_page_kib": round(len(html) / 1024, 1),
            "job_getlogs_ms": round(job_getlogs_ms, 1), "job_events": len(job_logs), "job_page_rows": rows,
        }))


if __name__ == "__main__":
    main()
