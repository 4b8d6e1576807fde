"""Follow a job on-chain: poll its state, its units and its events, and draw a live view.

`JobWatcher.poll()` returns a `Snapshot` (job state, every unit, the latest
events in words); `render()` turns one into a rich renderable; `follow()`
polls until the job is Completed or Cancelled (or a timeout) and, given a
console, keeps a `rich.live.Live` view of it up to date.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from gensyn_py.chain.view import ChainView, JobInfo
from gensyn_py.requester.amounts import format_tokens
from gensyn_py.types import JobState, JobStatus, Outcome, Unit, UnitStatus

if TYPE_CHECKING:
    from rich.console import Console

    from gensyn_py.chain.events import EventRecord

DONE = (JobStatus.COMPLETED, JobStatus.CANCELLED)
STATUS_STYLE = {
    UnitStatus.OPEN: "cyan", UnitStatus.ASSIGNED: "blue", UnitStatus.COMMITTED: "magenta",
    UnitStatus.VERIFIED: "yellow", UnitStatus.DISPUTED: "bold red", UnitStatus.FINAL: "green",
    UnitStatus.CANCELLED: "dim", UnitStatus.VOIDED: "dim red",
}
JOB_STYLE = {JobStatus.ACTIVE: "cyan", JobStatus.COMPLETED: "bold green", JobStatus.CANCELLED: "yellow"}


def short(address: str) -> str:
    return f"{address[:6]}…{address[-4:]}" if address and int(address, 16) else "-"


def describe_event(e: EventRecord) -> str:
    """One line in words for a TaskPool event of the job."""
    a = e.args
    unit = f"unit {a['unitId']}" if "unitId" in a else ""
    match e.event:
        case "JobSubmitted":
            return f"job submitted; {format_tokens(int(a['budget']))} tokens escrowed"
        case "UnitOpened":
            kind = "aggregation" if a["isAggregation"] else f"shard {a['shard']}"
            return f"{unit} opened (round {a['round']}, {kind})"
        case "PhaseArmed":
            kind = "aggregation" if a["isAggregation"] else "training"
            return f"round {a['round']} {kind} armed: what it is built on is verified, its units may commit"
        case "UnitClaimed":
            return f"{unit} claimed by {short(a['solver'])} at {format_tokens(int(a['price']))}"
        case "UnitTimedOut":
            return (f"{unit}: solver {short(a['solver'])} missed its commit deadline and paid "
                    f"{format_tokens(int(a['penalty']))} to the requester; reopened")
        case "UnitCommitted":
            return f"{unit} committed (root 0x{bytes(a['checkpointRoot']).hex()[:12]}…)"
        case "ValidatorsDrawn":
            return f"{unit}: {len(a['validators'])} validators drawn for segments {list(a['segments'])}"
        case "VerdictCommitted":
            return f"{unit}: {short(a['validator'])} sealed its verdict"
        case "VerdictRevealed":
            return f"{unit}: {short(a['validator'])} {'accepted' if a['accept'] else 'REJECTED'}"
        case "ValidatorNoShow":
            return f"{unit}: validator {short(a['validator'])} did not reveal"
        case "UnitVerified":
            return f"{unit} verified; challenge window open"
        case "UnitDisputed":
            return f"{unit} disputed by {short(a['opener'])} (segment {a['segmentIndex']})"
        case "DisputeSettled":
            return f"{unit} dispute settled: {Outcome(int(a['outcome'])).name.lower().replace('_', ' ')}"
        case "UnitReopened":
            return f"{unit} reopened for another solver"
        case "UnitCancelled":
            return f"{unit} cancelled"
        case "UnitVoided":
            return f"{unit} voided: a unit it was built on was overturned; its phase reopens"
        case "UnitFinalized":
            return f"{unit} final; solver paid {format_tokens(int(a['solverPay']))}"
        case "JobCompleted":
            return f"job completed; {format_tokens(int(a['refund']))} unspent tokens credited back"
        case "JobCancelled":
            return f"job cancelled; {format_tokens(int(a['refund']))} tokens credited back"
        case "UnavailabilityReported":
            return f"{unit}: {short(a['validator'])} could not fetch the data of segment {a['segment']}"
        case "UnavailabilityClaimed":
            return f"{unit}: the model could not be downloaded; the solver must answer"
        case "UnavailabilityAnswered":
            return f"{unit}: the solver answered the unavailability report (slot {a['slot']})"
        case "DataWithheld":
            return f"{unit}: solver {short(a['solver'])} withheld its data and lost {format_tokens(int(a['slashed']))}"
    return f"{e.event} {unit}".strip()


@dataclass(frozen=True)
class Snapshot:
    """The job as of one poll."""

    job: JobInfo
    state: JobState
    units: tuple[Unit, ...]
    total_units: int | None  # known from the spec; None if the spec could not be read
    rounds: int | None
    events: tuple[str, ...]  # the latest, oldest first
    block: int
    now: int  # chain time

    @property
    def done(self) -> bool:
        return self.state.status in DONE

    @property
    def settled(self) -> int:
        return sum(1 for u in self.units if u.status in (UnitStatus.FINAL, UnitStatus.CANCELLED))

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job.job_id, "requester": self.job.requester, "status": self.state.status.name,
            "round": self.state.round, "rounds": self.rounds, "aggregationPhase": self.state.agg_phase,
            "pendingUnits": self.state.pending, "escrow": str(self.state.escrow), "specCid": self.job.spec_cid,
            "totalUnits": self.total_units, "block": self.block,
            "units": [
                {"unitId": u.unit_id, "round": u.round, "shard": None if u.is_aggregation else u.shard,
                 "aggregation": u.is_aggregation, "status": u.status.name, "solver": u.solver, "price": str(u.price)}
                for u in self.units
            ],
            "events": list(self.events),
        }


class JobWatcher:
    """Polls one job: new events since the last poll, then the job's and its units' state."""

    def __init__(self, view: ChainView, job_id: int, rounds: int | None = None, shards: int | None = None,
                 keep_events: int = 8) -> None:
        from gensyn_py.requester.pricing import unit_count

        self.view = view
        self.job = view.job(job_id)
        self.rounds = rounds
        self.total_units = unit_count(rounds, shards) if rounds and shards else None
        self.events: deque[str] = deque(maxlen=keep_events)
        self._units: set[int] = set()
        self._reader = view.protocol.event_reader(names=["TaskPool"], start_block=self.job.block)

    def _on_event(self, e: EventRecord) -> None:
        a = e.args
        if a.get("jobId") == self.job.job_id and e.event == "UnitOpened":
            self._units.add(int(a["unitId"]))
        mine = a.get("jobId") == self.job.job_id if "jobId" in a else a.get("unitId") in self._units
        if mine and e.event not in ("Credited", "CreditClaimed"):
            self.events.append(describe_event(e))

    def poll(self) -> Snapshot:
        self._reader.poll(self._on_event)
        block = int(self.view.protocol.w3.eth.block_number)
        state = self.view.job_state(self.job.job_id)
        units = tuple(self.view.units(self.job.job_id))
        return Snapshot(self.job, state, units, self.total_units, self.rounds, tuple(self.events), block,
                        self.view.now())


def _until(u: Unit, now: int) -> str:
    """The unit's next deadline, in chain seconds from now."""
    match u.status:
        case UnitStatus.ASSIGNED:
            what, at = "commit", u.deadline
        case UnitStatus.COMMITTED if u.drawn:
            what, at = "verdicts", u.reveal_deadline
        case UnitStatus.VERIFIED:
            what, at = "challenges", u.deadline
        case _:
            return ""
    left = at - now
    return f"{what} {left}s" if left >= 0 else f"{what} overdue {-left}s"


def render(s: Snapshot) -> RenderableType:
    """The job's header, a progress bar over its units, a unit table and the latest events."""
    st = s.state
    phase = "aggregation" if st.agg_phase else "training"
    of_rounds = f"/{s.rounds}" if s.rounds else ""
    header = Text.assemble(
        (f"job {s.job.job_id} ", "bold"), (st.status.name.lower(), JOB_STYLE.get(st.status, "")),
        f"  round {st.round + 1}{of_rounds} ({phase})  pending {st.pending}  "
        f"escrow left {format_tokens(st.escrow)}  block {s.block}",
    )
    total = s.total_units or max(len(s.units), 1)
    bar = Table.grid(padding=(0, 1))
    bar.add_row(ProgressBar(total=total, completed=s.settled, width=40), f"{s.settled}/{total} units settled")
    units = Table("unit", "round", "phase", "status", "solver", "price", "deadline", expand=False)
    for u in s.units:
        units.add_row(
            str(u.unit_id), str(u.round), "aggregation" if u.is_aggregation else f"shard {u.shard}",
            Text(u.status.name.lower(), STATUS_STYLE.get(u.status, "")), short(u.solver),
            format_tokens(u.price) if u.price else "-", _until(u, s.now),
        )
    events = Text("\n".join(s.events) or "(no events yet)", style="dim")
    return Group(header, bar, units, Panel(events, title="events", title_align="left"))


@dataclass(frozen=True)
class FollowResult:
    snapshot: Snapshot
    timed_out: bool


def follow(
    watcher: JobWatcher,
    console: Console | None = None,
    poll_interval: float = 1.0,
    timeout: float | None = None,
    on_snapshot: Callable[[Snapshot], None] | None = None,
) -> FollowResult:
    """Poll until the job is Completed or Cancelled, or `timeout` seconds pass; draw it live on `console`."""
    from rich.live import Live

    deadline = None if timeout is None else time.monotonic() + timeout
    live = Live(console=console, refresh_per_second=4, transient=False) if console is not None else None
    snap = watcher.poll()
    try:
        if live is not None:
            live.start()
        while True:
            if live is not None:
                live.update(render(snap))
            if on_snapshot is not None:
                on_snapshot(snap)
            if snap.done:
                return FollowResult(snap, False)
            if deadline is not None and time.monotonic() >= deadline:
                return FollowResult(snap, True)
            pause = poll_interval if deadline is None else min(poll_interval, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)  # a polling interval, not synchronization: the chain is the source of truth
            snap = watcher.poll()
    finally:
        if live is not None:
            live.stop()
            if console is not None and not console.is_terminal:
                console.line()  # Live ends its last frame with a newline only on terminals
