"""Shared pieces of the end-to-end bench: a market of role daemons, a block clock, records, reaction times.

`BlockClock` watches the chain from a thread and notes the wall-clock time it
first saw each block. The local chain mines every transaction into its own
block the moment it arrives (anvil's mixed mining), so that time stands for
the moment the transaction landed, to within one poll of the clock, far finer
than block timestamps (whole seconds). Daemon logs carry wall-clock times
too (`ts`, milliseconds), on the same host clock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import json
import signal
import statistics
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gensyn_py.sim.localnet import LocalNetwork
from gensyn_py.sim.market import STANDARD_NODES, NodeSpec
from gensyn_py.sim.market import Market as SimMarket

Report = Callable[[str], None]
BLOCK_NUMBER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []})

# Validators hold enough stake to be bonded on every unit of a burst.
NODES = tuple(replace(n, stake=3_000) if n.role == "validator" else n for n in STANDARD_NODES)


class BlockClock:
    """Polls the block number every `every` seconds; `at(block)` is when that block was first seen."""

    def __init__(self, url: str, every: float = 0.05) -> None:
        self.url = url
        self.every = every
        self.seen: dict[int, float] = {}
        self.polls = 0
        self.started = 0.0
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._conn: http.client.HTTPConnection | None = None
        self._thread = threading.Thread(target=self._run, name="block-clock", daemon=True)

    def start(self) -> BlockClock:
        self.started = time.time()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        last = self._block_number()  # blocks up to here predate the clock: no time for them
        while not self._stop.wait(self.every):
            if self._paused.is_set():
                continue
            try:
                number = self._block_number()
            except Exception:  # a missed poll only coarsens the clock
                continue
            now = time.time()
            self.polls += 1
            for b in range(last + 1, number + 1):
                self.seen[b] = now
            last = max(last, number)

    def _block_number(self) -> int:
        """`eth_blockNumber` on one kept connection: 0.35 ms of CPU where web3 takes 1.6 ms. The clock polls 20
        times a second on the machine whose training it measures, so its own cost is kept small."""
        if self._conn is None:
            url = urllib.parse.urlparse(self.url)
            self._conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
        try:
            self._conn.request("POST", "/", BLOCK_NUMBER, {"Content-Type": "application/json"})
            return int(json.loads(self._conn.getresponse().read())["result"], 16)
        except Exception:
            self._conn.close()
            self._conn = None
            raise

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No polls meanwhile (a baseline is measured in this process); blocks mined meanwhile get no time."""
        self._paused.set()
        try:
            yield
        finally:
            self._paused.clear()

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


class Market(SimMarket):
    """The shared market harness (`sim/market.py`) with a standing allowance, plus what the bench watches."""

    def __init__(self, net: LocalNetwork, report: Report) -> None:
        super().__init__(net, requester_tokens=100_000, standing_allowance=True)
        self.report = report

    @property
    def from_block(self) -> int:
        return int(self.protocol.deployment.get("block", 0))

    def start_nodes(self, nodes: Sequence[NodeSpec] = NODES, timeout: float = 180) -> None:
        super().start_nodes(nodes, timeout)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Every daemon stopped (SIGSTOP) meanwhile and continued after, so a baseline measured now shares the
        machine with nothing of the market but the chain (idle between jobs: one empty block a second)."""
        procs = [n.process for n in self.net.nodes.values() if n.process is not None and n.process.poll() is None]
        for p in procs:
            p.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            for p in procs:
                p.send_signal(signal.SIGCONT)

    def submit_timed(self, spec: dict[str, Any], commit_window: int = 300) -> tuple[int, float]:
        """Submit a job spec; (job id, wall time just before the submission began)."""
        started = time.time()
        return self.submit(spec, commit_window).job_id, started

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
            end = r.ts - float(r.fields.get("waited_s", 0.0))  # a verdict is logged when the cycle takes it
            span = (end - float(r.fields["verify_s"]), end)
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
