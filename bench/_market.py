"""Shared pieces of the end-to-end bench: a market of role daemons, a block clock, records, reaction times.

`BlockClock` watches the chain from a thread and notes the wall-clock time it
first saw each block. The local chain mines every transaction into its own
block the moment it arrives (anvil's mixed mining), so that time stands for
the moment the transaction landed, to within one poll of the clock, far finer
than block timestamps (whole seconds). Daemon logs carry wall-clock times
too (`ts`, milliseconds), on the same host clock.
"""

from __future__ import annotations

import datetime as dt
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from web3 import Web3

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.sim.localnet import E18, LocalNetwork, wait_until
from gensyn_py.types import JobStatus

Report = Callable[[str], None]

# name, role, dev key index, extra args, stake: validators hold enough stake to be bonded on every unit of a burst
NODES: list[tuple[str, str, int, tuple[str, ...], int]] = [
    ("solver-1", "solver", 2, ("--price", "5"), 1_000),
    ("solver-2", "solver", 3, ("--price", "5"), 1_000),
    ("validator-1", "validator", 4, (), 3_000),
    ("validator-2", "validator", 5, (), 3_000),
    ("challenger", "challenger", 6, ("--audit-fraction", "0.3"), 1_000),
]
REQUESTER_KEY = 1


class BlockClock:
    """Polls the block number every `every` seconds; `at(block)` is when that block was first seen."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self.url = url
        self.every = every
        self.seen: dict[int, float] = {}
        self.polls = 0
        self.started = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="block-clock", daemon=True)

    def start(self) -> BlockClock:
        self.started = time.time()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        w3 = Web3(Web3.HTTPProvider(self.url, request_kwargs={"timeout": 10}))
        last = int(w3.eth.block_number)  # blocks up to here predate the clock: no time for them
        while not self._stop.wait(self.every):
            try:
                number = int(w3.eth.block_number)
            except Exception:  # a missed poll only coarsens the clock
                continue
            now = time.time()
            self.polls += 1
            for b in range(last + 1, number + 1):
                self.seen[b] = now
            last = max(last, number)

    def at(self, block: int) -> float | None:
        return self.seen.get(block)

    @property
    def period_ms(self) -> float:
        """The clock's mean poll period: its resolution."""
        return (time.time() - self.started) / max(1, self.polls) * 1000


@dataclass(frozen=True)
class LogRecord:
    node: str
    ts: float  # wall-clock seconds since the epoch
    level: str
    event: str
    fields: dict[str, Any]


@dataclass
class Market:
    """The five daemons of the demo market, a requester with a standing allowance, and helpers to watch them."""

    net: LocalNetwork
    report: Report
    actors: dict[str, str] = field(default_factory=dict)  # node name -> address
    _requester: Any = None

    @property
    def protocol(self) -> ProtocolContracts:
        assert self.net.protocol is not None, "start the network first"
        return self.net.protocol

    @property
    def from_block(self) -> int:
        return int(self.protocol.deployment.get("block", 0))

    def start_nodes(self, timeout: float = 180) -> None:
        for name, role, key, extra, stake in NODES:
            node = self.net.add_node(name, role, key, *extra, tokens=stake + 1_000, stake=stake)
            self.actors[name] = str(node.account.address)
        registry = self.protocol.registry()

        def registered() -> bool:
            return all(registry.bonded_of(self.actors[n]) > 0 for n, *_ in NODES)

        wait_until(registered, timeout, "the daemons to register and stake", every=0.5, on_wait=self.check_alive)

    @property
    def requester(self) -> Any:
        """A requester for dev key 1, funded, with an unlimited allowance so a submission sends one tx."""
        if self._requester is None:
            from gensyn_py.requester.session import Requester
            from gensyn_py.storage.factory import open_store

            account = self.net.account(REQUESTER_KEY)
            self.net.fund(account.address, 100_000)
            self._requester = Requester(self.protocol, open_store(self.net.store_spec), account)
            self._requester.token.approve(self._requester.pool.address, 2**256 - 1)
        return self._requester

    def put_dataset(self, ds: Any) -> dict[str, Any]:
        from gensyn_py.train.data import dataset_entry

        data = ds.to_bytes()
        self.requester.store.put(data)
        return dict(dataset_entry(ds, data))

    def submit(self, spec: dict[str, Any], commit_window: int = 300) -> tuple[int, float]:
        """Submit a job spec; (job id, wall time just before the submission began)."""
        from gensyn_py.requester.pricing import Offer
        from gensyn_py.requester.submit import submit_job
        from gensyn_py.train.spec import parse_spec

        parsed = parse_spec(spec)
        started = time.time()
        result = submit_job(self.requester, parsed, Offer(10 * E18, 100 * E18, commit_window))
        return result.job_id, started

    def completed(self, job_ids: list[int]) -> bool:
        from gensyn_py.chain.view import ChainView

        view = ChainView(self.protocol)
        return all(view.job_state(j).status is JobStatus.COMPLETED for j in job_ids)

    def wait_completed(self, job_ids: list[int], timeout: float, every: float = 0.5) -> None:
        pending = set(job_ids)

        def done() -> bool:
            for j in sorted(pending):
                if self.completed([j]):
                    pending.discard(j)
            return not pending

        wait_until(done, timeout, f"job(s) {sorted(pending)} to complete", every=every, on_wait=self.check_alive)

    # -- chain events and daemon logs --------------------------------------------------------

    def pool_logs(self, event: str, **filters: Any) -> list[Any]:
        contract = self.protocol["TaskPool"]
        logs = contract.events[event]().get_logs(argument_filters=filters or None, from_block=self.from_block)
        return sorted(logs, key=lambda e: (e["blockNumber"], e["logIndex"]))

    def block_time(self, block: int) -> int:
        return int(self.protocol.w3.eth.get_block(block)["timestamp"])

    def records(self, name: str | None = None) -> list[LogRecord]:
        """Every daemon's JSON log records (or one daemon's), with wall-clock times."""
        out: list[LogRecord] = []
        for node in [name] if name else list(self.net.nodes):
            for rec in self.net.log_lines(node):
                try:
                    ts = dt.datetime.fromisoformat(str(rec["ts"])).timestamp()
                except (KeyError, ValueError):
                    continue
                out.append(LogRecord(node, ts, str(rec.get("level", "")), str(rec.get("event", "")),
                                     dict(rec.get("fields") or {})))
        return out

    def name_of(self, address: str) -> str:
        names = {a.lower(): n for n, a in self.actors.items()}
        return names.get(address.lower(), address)

    def check_alive(self) -> None:
        for name, node in self.net.nodes.items():
            if node.process is not None and node.process.poll() is not None:
                raise RuntimeError(f"{name} exited with code {node.process.returncode}; see {node.log_path}")

    def trouble(self, last: int = 8) -> list[str]:
        """The last warning/error records of each daemon and any exit codes: what to show when a run fails."""
        lines: list[str] = []
        for name, node in self.net.nodes.items():
            code = node.process.poll() if node.process is not None else None
            bad = [r for r in self.records(name) if r.level in ("warning", "error")]
            if code is not None:
                lines.append(f"{name}: exited with code {code}")
            for r in bad[-last:]:
                fields = {k: (str(v)[-600:] if k == "exc" else v) for k, v in r.fields.items()}
                lines.append(f"{name}: {r.level} {r.event} {fields}")
        return lines


# -- reaction times --------------------------------------------------------------------------------


def _ms(values: list[float], q: float = 0.5) -> float | None:
    """The q-quantile (nearest rank; the median for 0.5) in milliseconds, or None without samples."""
    if not values:
        return None
    v = sorted(values)
    mid = statistics.median(v) if q == 0.5 else v[min(len(v) - 1, int(q * len(v)))]
    return round(1000 * mid, 1)


def busy_between(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of [start, end] covered by the (disjoint, one-process) intervals."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)


def event_to_action(market: Market, clock: BlockClock, from_block: int) -> dict[str, Any]:
    """Validators' reaction times to the events of blocks from `from_block` on (see DEFINITION)."""
    replays: dict[str, list[tuple[float, float]]] = {}  # node -> replay (start, end), wall clock
    own: dict[tuple[str, int], tuple[float, float]] = {}  # (validator, unit) -> its verdict replay
    for r in market.records():
        if r.event in ("verdict", "dispute.voted") and "verify_s" in r.fields:
            span = (r.ts - float(r.fields["verify_s"]), r.ts)
            replays.setdefault(r.node, []).append(span)
            if r.event == "verdict":
                own[(r.node, int(r.fields["unit"]))] = span
    drawn: dict[int, list[Any]] = {}
    for e in market.pool_logs("ValidatorsDrawn"):
        if int(e["blockNumber"]) >= from_block:
            drawn.setdefault(int(e["args"]["unitId"]), []).append(e)
    net_s: list[float] = []
    raw_s: list[float] = []
    coarse_s: list[float] = []
    pickup_s: list[float] = []  # the event landing -> the validator starting this unit's replay
    send_s: list[float] = []  # the replay done -> the commitVerdict tx landing
    commits: dict[tuple[int, int], list[Any]] = {}
    for c in market.pool_logs("VerdictCommitted"):
        unit, block = int(c["args"]["unitId"]), int(c["blockNumber"])
        draw = [d for d in drawn.get(unit, []) if int(d["blockNumber"]) <= block]
        if not draw:
            continue
        d = draw[-1]
        commits.setdefault((unit, int(d["blockNumber"])), []).append(c)
        te, ta = clock.at(int(d["blockNumber"])), clock.at(block)
        if te is None or ta is None:
            continue
        name = market.name_of(c["args"]["validator"])
        busy = busy_between(replays.get(name, []), te, ta)
        raw_s.append(ta - te)
        net_s.append(ta - te - busy)
        if (name, unit) in own:
            start, end = own[(name, unit)]
            pickup_s.append(start - te - busy_between(replays.get(name, []), te, start))
            send_s.append(ta - end - busy_between(replays.get(name, []), end, ta))
        coarse_s.append(market.block_time(block) - market.block_time(int(d["blockNumber"])))
    # A second, compute-free reaction: reveals open when the last drawn validator commits.
    reveal_s: list[float] = []
    for (unit, draw_block), cs in commits.items():
        d = next(x for x in drawn[unit] if int(x["blockNumber"]) == draw_block)
        if len(cs) < len(d["args"]["validators"]):
            continue
        t_open = clock.at(int(cs[-1]["blockNumber"]))
        for rv in market.pool_logs("VerdictRevealed", unitId=unit):
            t_rev = clock.at(int(rv["blockNumber"]))
            if t_open is None or t_rev is None or int(rv["blockNumber"]) < int(cs[-1]["blockNumber"]):
                continue
            busy = busy_between(replays.get(market.name_of(rv["args"]["validator"]), []), t_open, t_rev)
            reveal_s.append(t_rev - t_open - busy)

    return {
        "event_to_action_ms": _ms(net_s),
        "event_to_action_p90_ms": _ms(net_s, 0.9),
        "event_to_action_samples": len(net_s),
        "event_to_action_raw_ms": _ms(raw_s),
        "event_to_action_pickup_ms": _ms(pickup_s),
        "event_to_action_send_ms": _ms(send_s),
        "event_to_action_raw_block_timestamps_ms": _ms(coarse_s),
        "reveal_open_to_reveal_ms": _ms(reveal_s),
        "reveal_open_to_reveal_samples": len(reveal_s),
        "clock_resolution_ms": round(clock.period_ms, 1),
    }


DEFINITION = (
    "median over (unit, drawn validator) of: wall time the validator's commitVerdict tx landed minus wall time "
    "the ValidatorsDrawn tx naming it landed, less the seconds the validator spent replaying (this unit's "
    "segment and any other it was busy with) in between; landing times from a block clock polling the node "
    "(one block per tx, mined on arrival), resolution ~clock_resolution_ms; includes event polling, state "
    "reads, the static call, signing and sending (not the receipt wait: the tx has landed). "
    "raw = without the replay subtraction; "
    "raw_block_timestamps = raw from the blocks' 1-s timestamps (a cross-check of the clock); "
    "pickup = event landed -> the validator starts this replay, send = replay done -> tx landed (medians of "
    "each, less other replays); "
    "reveal_open_to_reveal = the last verdict commit of a unit (reveals open) to each validator's "
    "revealVerdict, less replays in between"
)
