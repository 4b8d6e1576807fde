"""Page models from the index: plain dataclasses the templates render.

Everything a page shows about history comes from the index (one SQLite read per table,
so a job of hundreds of units renders without touching the chain); a node's standing and
the solvers' prices are read live from the chain, where they are the present state.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eth_utils import to_checksum_address

from gensyn_py.explorer.content import losses_key, spec_key
from gensyn_py.explorer.refs import RESOLVER_KINDS, id_kinds, page_of
from gensyn_py.types import Outcome

# The unit state a person reads after each event (events not listed leave it as it was).
STATE_AFTER = {
    "UnitOpened": "Open", "UnitClaimed": "Claimed", "UnitTimedOut": "Open", "UnitPartialCommitted": "Claimed",
    "UnitCommitted": "Committed", "SeedExpired": "Open", "ValidatorsDrawn": "Drawn", "UnitVerified": "Verified",
    "UnitDisputed": "Disputed", "DataWithheld": "Open", "UnitReopened": "Open", "UnitCancelled": "Cancelled",
    "UnitFinalized": "Final", "UnitVoided": "Voided",
}
IN_FLIGHT = frozenset({"Claimed", "Committed", "Drawn", "Verified", "Disputed"})
TOKEN = 10**18


def tokens(amount: int | str | None) -> str:
    """An amount in whole tokens, at most 4 decimals, thousands separated."""
    if amount is None:
        return "-"
    value = int(amount)
    whole, frac = divmod(abs(value), TOKEN)
    text = f"{whole:,}"
    if frac:
        text += ("." + f"{frac:018d}"[:4]).rstrip("0").rstrip(".")
    return ("-" if value < 0 else "") + text


def when(ts: int | None) -> str:
    """A chain timestamp as UTC date and time."""
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def outcome_label(outcome: int) -> str:
    """A dispute outcome as the pages title it: `Solver Fraud`."""
    return Outcome(outcome).name.replace("_", " ").title()


def short(address: str) -> str:
    return address[:8] + "…" + address[-4:] if len(address) == 42 else address


@dataclass(frozen=True)
class Event:
    block: int
    log_index: int
    tx: str
    contract: str
    name: str
    args: dict[str, Any]
    timestamp: int | None
    sender: str | None
    gas: int | None  # of the whole transaction
    kinds: Mapping[str, str] = field(default_factory=dict)  # id argument -> what it names (refs.py)


@dataclass(frozen=True)
class DisputeLink:
    """A dispute and the resolver that holds it: `dispute` (the committee) or `game` (the segment game)."""

    kind: str
    dispute_id: int

    @property
    def href(self) -> str:
        return page_of(self.kind, self.dispute_id)[0]

    @property
    def label(self) -> str:
        return page_of(self.kind, self.dispute_id)[1]

    @classmethod
    def opened(cls, ev: Event) -> DisputeLink:
        """The dispute a resolver's `DisputeOpened` opened."""
        return cls(RESOLVER_KINDS.get(ev.contract, "dispute"), int(ev.args["disputeId"]))


@dataclass
class UnitView:
    unit_id: int
    job_id: int
    round: int
    shard: int
    aggregation: bool
    state: str = "Open"
    solver: str | None = None
    events: list[Event] = field(default_factory=list)
    losses: list[tuple[int, float]] = field(default_factory=list)
    losses_error: str | None = None
    gas: int = 0
    disputes: list[DisputeLink] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"round {self.round} · aggregation" if self.aggregation else f"round {self.round} · shard {self.shard}"


@dataclass
class JobView:
    job_id: int
    requester: str
    budget: int
    spec_cid: str
    spec_hash: str
    block: int
    timestamp: int | None
    status: str
    spec: dict[str, Any] | None
    spec_error: str | None
    units: list[UnitView]
    paid_solvers: int
    paid_validators: int
    refund: int | None
    slashed: int
    final_hash: str | None
    disputes: list[DisputeLink]

    @property
    def final_units(self) -> int:
        return sum(1 for u in self.units if u.state == "Final")


@dataclass
class DisputeView:
    dispute_id: int
    unit_id: int | None
    job_id: int | None
    solver: str | None
    opener: str | None
    outcome: str
    members: list[str]
    events: list[Event]
    payments: list[tuple[str, str, int]]  # (what, who, amount)


@functools.cache
def _kinds(contract: str, dispute_kind: str | None) -> Mapping[str, str]:
    kinds = id_kinds(contract)
    return {**kinds, "disputeId": dispute_kind} if dispute_kind else kinds


# A dispute id in an event of a contract other than its resolver (the pool's `UnitDisputed`): the kind the
# indexer gave it (refs.py), read only for such events.
_RESOLVERS = ",".join(f"'{c}'" for c in RESOLVER_KINDS)
_RESOLVER_KINDS = ",".join(f"'{k}'" for k in RESOLVER_KINDS.values())
_DISPUTE_KIND = (f"CASE WHEN e.contract NOT IN ({_RESOLVERS}) AND instr(e.args, '\"disputeId\"') THEN "
                 "(SELECT r.kind FROM refs r WHERE r.block = e.block AND r.log_index = e.log_index "
                 f"AND r.kind IN ({_RESOLVER_KINDS}) LIMIT 1) END")


def events_where(db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[Event]:
    """Events matching an SQL condition over `events e`, in chain order."""
    rows = db.execute(
        "SELECT e.block, e.log_index, e.tx, e.contract, e.name, e.args, b.timestamp, t.sender, t.gas_used, "
        f"{_DISPUTE_KIND} FROM events e LEFT JOIN blocks b ON b.number = e.block LEFT JOIN txs t ON t.hash = e.tx "
        f"WHERE {where} ORDER BY e.block, e.log_index", params).fetchall()
    return [Event(int(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4]), json.loads(r[5]),
                  None if r[6] is None else int(r[6]), None if r[7] is None else to_checksum_address(r[7]),
                  None if r[8] is None else int(r[8]), _kinds(str(r[3]), r[9])) for r in rows]


def ref_events(db: sqlite3.Connection, kind: str, refs: list[str]) -> list[Event]:
    """Events that name any of `refs` of `kind` (refs.py), in chain order."""
    if not refs:
        return []
    marks = ",".join("?" * len(refs))
    return events_where(db, f"(e.block, e.log_index) IN (SELECT block, log_index FROM refs WHERE kind = ? "
                            f"AND ref IN ({marks}))", (kind, *refs))


def _content(db: sqlite3.Connection, key: str) -> tuple[str | None, str | None] | None:
    row = db.execute("SELECT body, error FROM content WHERE key = ?", (key,)).fetchone()
    return None if row is None else (row["body"], row["error"])


def job_view(db: sqlite3.Connection, job_id: int) -> JobView | None:
    submitted = events_where(db, "e.name = 'JobSubmitted' AND (e.block, e.log_index) IN "
                                 "(SELECT block, log_index FROM refs WHERE kind = 'job' AND ref = ?)", (str(job_id),))
    if not submitted:
        return None
    sub = submitted[0]
    unit_rows = db.execute("SELECT * FROM units WHERE job_id = ? ORDER BY unit_id", (job_id,)).fetchall()
    units = {int(r["unit_id"]): UnitView(int(r["unit_id"]), job_id, int(r["round"]), int(r["shard"]),
                                         bool(r["aggregation"])) for r in unit_rows}
    paid_s = paid_v = slashed = 0
    disputes: list[DisputeLink] = []
    for ev in ref_events(db, "unit", [str(u) for u in units]):
        unit = units.get(int(ev.args.get("unitId", -1)))
        if unit is None:
            continue
        unit.events.append(ev)
        unit.gas += ev.gas or 0
        unit.state = STATE_AFTER.get(ev.name, unit.state)
        if ev.name == "UnitClaimed":
            unit.solver = str(ev.args["solver"])
        elif ev.name == "UnitFinalized":
            paid_s += int(ev.args["solverPay"])
            paid_v += int(ev.args["validatorPay"])
        elif ev.name in ("UnitTimedOut", "SeedExpired"):
            slashed += int(ev.args["penalty"])
        elif ev.name == "DataWithheld":
            slashed += int(ev.args["slashed"])
        elif ev.name == "DisputeOpened":  # the resolver's (the committee or the game) names its kind
            unit.disputes.append(DisputeLink.opened(ev))
            disputes.append(unit.disputes[-1])
        elif ev.name == "UnitCommitted" and not unit.aggregation:
            found = _content(db, losses_key(unit.unit_id, str(ev.args["manifestCid"])))
            unit.losses, unit.losses_error = [], None
            if found is not None:
                body, unit.losses_error = found
                unit.losses = [(int(s), float(v)) for s, v in json.loads(body)] if body else []
    job_events = ref_events(db, "job", [str(job_id)])
    status, refund = "Active", None
    for ev in job_events:
        if ev.name in ("JobCompleted", "JobCancelled"):
            status, refund = ev.name.removeprefix("Job"), int(ev.args["refund"])
    found = _content(db, spec_key(job_id))
    spec = json.loads(found[0]) if found and found[0] else None
    spec_error = found[1] if found else None
    final_hash = None
    ordered = sorted(units.values(), key=lambda u: u.unit_id)
    if status == "Completed" and ordered:
        last = ordered[-1]
        commits = [e for e in last.events if e.name == "UnitCommitted"]
        final_hash = str(commits[-1].args["finalStateHash"]) if commits else None
    return JobView(job_id, str(sub.args["requester"]), int(sub.args["budget"]), str(sub.args["specCid"]),
                   str(sub.args["specHash"]), sub.block, sub.timestamp, status, spec, spec_error, ordered,
                   paid_s, paid_v, refund, slashed, final_hash, disputes)


def unit_job(db: sqlite3.Connection, unit_id: int) -> int | None:
    row = db.execute("SELECT job_id FROM units WHERE unit_id = ?", (unit_id,)).fetchone()
    return None if row is None else int(row["job_id"])


def node_events(db: sqlite3.Connection, address: str, limit: int = 500) -> list[Event]:
    return ref_events(db, "node", [address.lower()])[-limit:]


@dataclass(frozen=True)
class NodeHistory:
    events: list[Event]
    earned: int
    claimed: int
    slashed: int
    units_solved: list[int]
    verdicts: list[tuple[int, bool]]


def node_history(db: sqlite3.Connection, address: str) -> NodeHistory:
    a = address.lower()
    events = node_events(db, a)
    earned = claimed = slashed = 0
    solved: list[int] = []
    verdicts: list[tuple[int, bool]] = []

    def mine(key: str, ev: Event) -> bool:
        return str(ev.args.get(key, "")).lower() == a

    for ev in events:
        if ev.name == "Credited" and mine("account", ev):
            earned += int(ev.args["amount"])
        elif ev.name == "CreditClaimed" and mine("account", ev):
            claimed += int(ev.args["amount"])
        elif ev.name == "Slashed" and mine("node", ev):
            slashed += int(ev.args["amount"])
        elif ev.name == "UnitFinalized" and mine("solver", ev):
            solved.append(int(ev.args["unitId"]))
        elif ev.name == "VerdictRevealed" and mine("validator", ev):
            verdicts.append((int(ev.args["unitId"]), bool(ev.args["accept"])))
    return NodeHistory(list(reversed(events)), earned, claimed, slashed, solved, verdicts)


def known_node(db: sqlite3.Connection, address: str) -> bool:
    row = db.execute("SELECT 1 FROM refs WHERE kind = 'node' AND ref = ? LIMIT 1", (address.lower(),)).fetchone()
    return row is not None


# The event each resolver decides a dispute with (its `outcome` argument is the pool's `Outcome`).
DECISIONS = {"DisputeCommittee": "DisputeResolved", "SegmentGame": "GameDecided"}


def merged(*groups: list[Event]) -> list[Event]:
    """Events of several reads, each once, in chain order."""
    return sorted({(e.block, e.log_index): e for g in groups for e in g}.values(), key=lambda e: (e.block, e.log_index))


def settlement(db: sqlite3.Connection, decisions: list[Event]) -> tuple[list[Event], list[tuple[str, str, int]]]:
    """The pool's settlement of a dispute: every event of the transactions that decided it (a resolver calls
    `ITaskPool.onDisputeResolved` in the transaction of its decision), and (what, who, amount) of each slash and
    credit in them."""
    txs = sorted({e.tx for e in decisions})
    if not txs:
        return [], []
    events = events_where(db, f"e.tx IN ({','.join('?' * len(txs))})", tuple(txs))
    payments: list[tuple[str, str, int]] = []
    for ev in events:
        if ev.name == "Slashed":
            payments.append(("slashed", str(ev.args["node"]), int(ev.args["amount"])))
        elif ev.name == "Credited":
            payments.append(("credited", str(ev.args["account"]), int(ev.args["amount"])))
    return events, payments


def dispute_view(db: sqlite3.Connection, dispute_id: int) -> DisputeView | None:
    """A committee's dispute (`/dispute/N`; the segment game's are in games.py)."""
    events = ref_events(db, "dispute", [str(dispute_id)])
    if not events:
        return None
    unit_id = next((int(e.args["unitId"]) for e in events if "unitId" in e.args), None)
    solver = opener = None
    outcome = "Open"
    members: list[str] = []
    payments: list[tuple[str, str, int]] = []
    for ev in events:
        if ev.name == "DisputeOpened":
            solver, opener = str(ev.args["solver"]), str(ev.args["opener"])
        elif ev.name == "CommitteeDrawn":
            members += [str(m) for m in ev.args["members"]]
        elif ev.name == "DisputeResolved":
            outcome = outcome_label(int(ev.args["outcome"]))
        elif ev.name == "MemberSlashed":
            payments.append(("member slashed", str(ev.args["member"]), int(ev.args["amount"])))
        elif ev.name == "MemberRewarded":
            payments.append(("member rewarded", str(ev.args["to"]), int(ev.args["amount"])))
    settled, paid = settlement(db, [e for e in events if e.name == "DisputeResolved"])
    job_id = unit_job(db, unit_id) if unit_id is not None else None
    return DisputeView(dispute_id, unit_id, job_id, solver, opener, outcome, members, merged(events, settled),
                       payments + paid)


@dataclass(frozen=True)
class NetworkSummary:
    head: int | None
    jobs: list[tuple[int, str, str, int]]  # (id, requester, status, units)
    units_by_state: dict[str, int]
    jobs_completed: int
    slashes: list[Event]
    disputes: list[tuple[DisputeLink, str, int]]  # (dispute, outcome, unit), newest first
    throughput: list[tuple[int, int]]  # (bucket start block, units finalized)
    nodes: list[tuple[str, list[str]]]  # (address, event names that define it)
    events: int


def network_summary(db: sqlite3.Connection, buckets: int = 24) -> NetworkSummary:
    head_row = db.execute("SELECT MAX(number) AS n FROM blocks").fetchone()
    head = None if head_row["n"] is None else int(head_row["n"])
    states: dict[int, str] = {}
    names = ",".join(f"'{n}'" for n in STATE_AFTER)
    for row in db.execute(f"SELECT name, args FROM events WHERE name IN ({names}) ORDER BY block, log_index"):
        states[int(json.loads(row["args"])["unitId"])] = STATE_AFTER[row["name"]]
    by_state = Counter(states.values())
    units_per_job = Counter(int(r["job_id"]) for r in db.execute("SELECT job_id FROM units"))
    jobs = []
    status: dict[int, str] = {}
    for row in db.execute("SELECT name, args FROM events WHERE name IN ('JobCompleted', 'JobCancelled')"):
        status[int(json.loads(row["args"])["jobId"])] = row["name"].removeprefix("Job")
    for row in db.execute("SELECT args FROM events WHERE name = 'JobSubmitted' ORDER BY block DESC"):
        a = json.loads(row["args"])
        jid = int(a["jobId"])
        jobs.append((jid, str(a["requester"]), status.get(jid, "Active"), units_per_job.get(jid, 0)))
    slashes = events_where(db, "e.name = 'Slashed'", ())
    disputes = []
    outcomes: dict[tuple[str, int], str] = {}
    for contract, name in DECISIONS.items():
        for row in db.execute("SELECT args FROM events WHERE contract = ? AND name = ?", (contract, name)):
            a = json.loads(row["args"])
            outcomes[(contract, int(a["disputeId"]))] = outcome_label(int(a["outcome"]))
    resolvers = ",".join(f"'{c}'" for c in DECISIONS)
    for row in db.execute(f"SELECT contract, args FROM events WHERE name = 'DisputeOpened' AND contract IN "
                          f"({resolvers}) ORDER BY block DESC, log_index DESC"):
        a = json.loads(row["args"])
        d = int(a["disputeId"])
        disputes.append((DisputeLink(RESOLVER_KINDS[row["contract"]], d),
                         outcomes.get((row["contract"], d), "Open"), int(a["unitId"])))
    finals = [int(r["block"]) for r in db.execute("SELECT block FROM events WHERE name = 'UnitFinalized'")]
    throughput: list[tuple[int, int]] = []
    if finals and head is not None:
        first = int(db.execute("SELECT MIN(block) FROM events").fetchone()[0])
        width = max(1, -(-(head - first + 1) // buckets))
        counts: dict[int, int] = defaultdict(int)
        for b in finals:
            counts[first + (b - first) // width * width] += 1
        throughput = [(first + i * width, counts.get(first + i * width, 0))
                      for i in range((head - first) // width + 1)]
    nodes = []
    for row in db.execute("SELECT args FROM events WHERE name = 'NodeRegistered' ORDER BY block"):
        nodes.append((str(json.loads(row["args"])["node"]), ["registered"]))
    count = int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    return NetworkSummary(head, jobs, dict(by_state), sum(1 for s in status.values() if s == "Completed"),
                          list(reversed(slashes)), disputes, throughput, nodes, count)
