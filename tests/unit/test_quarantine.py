"""Per-job isolation: bad content quarantines its job with its own backoff; the daemon goes on."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from web3 import Web3

from gensyn_py.errors import (
    ChainError,
    ContentNotFound,
    ContractRevert,
    SpecError,
    StorageError,
    TrainingError,
    VerificationError,
)
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.hardware import HardwareProfile
from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.quarantine import Quarantine, backoff
from gensyn_py.node.replay_class import ReplayClass
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.train.data import Dataset
from gensyn_py.types import ClaimScore, JobParams, Unit, UnitStatus
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import ME, Events, open_unit
from tests.unit.trainkit import digits_flat, tiny_spec

HW = HardwareProfile("cpu", 8_000, 5_000)


CLASS = ReplayClass({"device": "cpu", "torch": "test"})


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


def test_backoff_is_per_job_doubling_and_bounded(tmp_path: Path) -> None:
    clock = Clock()
    with DaemonState(tmp_path / "s.sqlite") as state:
        q = Quarantine(state, clock=clock)
        assert [backoff(n) for n in (1, 2, 3, 8, 50)] == [5, 10, 20, 600, 600]
        q.put(1, 10, "SpecError: bad")
        assert q.blocked(1) and not q.blocked(2)
        clock.t += 5
        assert not q.blocked(1)
        entry = q.put(1, 10, "SpecError: bad again")
        assert entry.attempts == 2 and entry.retry_at == clock.t + 10
        q.put(2, 20, "TrainingError: x")
        assert sorted(e.job for e in q.entries()) == [1, 2]
        assert q.clear(1) == 1 and [e.job for e in q.entries()] == [2]
        assert q.clear() == 1 and q.entries() == []


# -- a solver without a chain ------------------------------------------------------------------


class World:
    """Jobs by id: each maps to a spec error (raised on fetch) or a (spec, dataset, params)."""

    def __init__(self) -> None:
        self.units: dict[int, Unit] = {}
        self.fail: dict[int, Exception] = {}
        self.specs: dict[int, Any] = {}
        self.datasets: dict[int, Dataset] = {}
        self.params: dict[int, JobParams | None] = {}
        self.fetches: list[int] = []
        self.claims: list[int] = []
        self.segments = 4

    def add(self, unit_id: int, job: int) -> None:
        self.units[unit_id] = dataclasses.replace(open_unit(unit_id), job_id=job)

    # ChainView, JobContent and TaskPool, as far as claiming goes
    def unit(self, unit_id: int) -> Unit:
        return self.units[unit_id]

    def spec(self, job: int) -> Any:
        self.fetches.append(job)
        if job in self.fail:
            raise self.fail[job]
        return self.specs.get(job) or tiny_spec()

    def dataset(self, job: int) -> Dataset:
        return self.datasets.get(job) or digits_flat()

    def num_segments(self, unit_id: int) -> int:
        return self.segments

    def step_table(self, job_id: int) -> tuple[bytes, int]:
        return bytes(32), 0  # no step table: the committee judges this job's disputes

    def claim_score(self, node: str, unit_id: int, *, block: str = "latest") -> ClaimScore:
        assert block == "pending"  # the block a claim sent now lands in
        return ClaimScore(score=1, required=0)

    # NodeRegistry: this node's replay class has another validator (exact units are claimable)
    def class_peers(self, node: str) -> tuple[bytes, int]:
        return CLASS.class_id, 1

    def claim(self, unit_id: int) -> str:
        self.claims.append(unit_id)
        self.units[unit_id] = dataclasses.replace(self.units[unit_id], status=UnitStatus.ASSIGNED, solver=ME)
        return "0x" + "cd" * 32


def solver(state: DaemonState, world: World, clock: Clock) -> tuple[SolverDaemon, Events]:
    d = SolverDaemon.__new__(SolverDaemon)
    Daemon.__init__(d, "solver-test", Web3(), {}, state, reader=FakeReader(state.cursor, []),
                    metrics=DaemonMetrics("solver-test"))
    d.address = ME
    d.view = world  # type: ignore[assignment]
    d.content = world  # type: ignore[assignment]
    d.pool = world  # type: ignore[assignment]
    d.registry = world  # type: ignore[assignment]
    d.config = type("Config", (), {"hardware": HW, "replay_class": CLASS})()  # type: ignore[assignment]
    d.quarantine = Quarantine(state, clock=clock)
    d._fit = {}
    d._unit_fit = set()
    d._exact = {}
    d.job_params = lambda job: world.params.get(job)  # type: ignore[method-assign]
    events = Events()
    d.log = events  # type: ignore[assignment]
    return d, events


def params_for(spec: Any, **over: Any) -> JobParams:
    p = JobParams(spec_hash=b"\0" * 32, spec_cid="x", rounds=spec.rounds, shards=spec.shards,
                  steps_per_unit=spec.steps_per_unit, checkpoint_interval=spec.checkpoint_interval,
                  device_class=1, min_memory_mb=0, min_throughput=0, max_price_per_unit=0,
                  collateral_per_unit=0, commit_window=600)
    return dataclasses.replace(p, **over)


def bad_labels() -> Dataset:
    ds = digits_flat()
    return Dataset(ds.x, (np.asarray(ds.y) + 10).astype(np.asarray(ds.y).dtype))


def too_slow(w: World) -> None:
    """100,000 steps in a 30 s window (the issue's case 3)."""
    w.specs[1] = tiny_spec(steps_per_unit=100_000, checkpoint_interval=1000)
    w.params[1] = params_for(w.specs[1], commit_window=30)


BAD_CONTENT: dict[str, Any] = {
    "spec_not_in_store": lambda w: w.fail.__setitem__(1, ContentNotFound("bafy... is not in the store")),
    "spec_unparseable": lambda w: w.fail.__setitem__(1, SpecError("does not hash to the on-chain spec hash")),
    "verification": lambda w: w.fail.__setitem__(1, VerificationError("bad")),
    "unexpected_bug": lambda w: w.fail.__setitem__(1, ZeroDivisionError("boom")),
    "labels_exceed_classes": lambda w: w.datasets.__setitem__(1, bad_labels()),
    "model_too_big": lambda w: w.specs.__setitem__(1, tiny_spec(model={"family": "mlp",
                                                                        "sizes": {"hidden": 10**9}})),
    "too_slow_for_window": lambda w: too_slow(w),
    "segments_differ_on_chain": lambda w: w.params.__setitem__(1, params_for(tiny_spec(), checkpoint_interval=4)),
    "round_outside_spec": lambda w: w.units.__setitem__(10, dataclasses.replace(w.units[10], round=7)),
}


@pytest.mark.parametrize("kind", sorted(BAD_CONTENT))
def test_bad_job_is_quarantined_and_the_next_job_is_claimed_in_the_same_tick(tmp_path: Path, kind: str) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.add(20, job=2)
    BAD_CONTENT[kind](world)
    with DaemonState(tmp_path / "s.sqlite") as state:
        d, events = solver(state, world, clock)
        d.follow("open", 10)
        d.follow("open", 20)
        d._claim_next()
        assert world.claims == [20]  # the good job, in the same tick
        assert "unit.quarantined" in events.names and "unit.claimed" in events.names
        [entry] = d.quarantine.entries()
        assert (entry.job, entry.unit, entry.attempts) == (1, 10, 1)
        assert d.metrics.value("gensyn_quarantine_jobs") == 1
        assert state.keys("working:") == []  # no crash marker left behind


def test_a_segment_count_mismatch_with_the_pool_is_quarantined(tmp_path: Path) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.segments = 3
    with DaemonState(tmp_path / "s.sqlite") as state:
        d, _ = solver(state, world, clock)
        d.follow("open", 10)
        d._claim_next()
        assert world.claims == []
        assert "segments" in d.quarantine.entries()[0].reason


def test_quarantined_job_waits_for_its_own_backoff_then_is_released(tmp_path: Path) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.fail[1] = ContentNotFound("absent")
    with DaemonState(tmp_path / "s.sqlite") as state:
        d, events = solver(state, world, clock)
        d.follow("open", 10)
        d._claim_next()
        assert world.fetches == [1]
        d._claim_next()  # within the backoff: not even fetched
        clock.t += 4.9
        d._claim_next()
        assert world.fetches == [1]
        clock.t += 0.2
        d._claim_next()  # retried, fails again: the wait doubles
        assert world.fetches == [1, 1]
        entry = d.quarantine.get(1)
        assert entry is not None and entry.attempts == 2 and entry.retry_at == pytest.approx(clock.t + 10)
        del world.fail[1]  # the requester stored the spec after all
        clock.t += 10
        d._claim_next()
        assert world.claims == [10] and d.quarantine.get(1) is None and "unit.released" in events.names


@pytest.mark.parametrize("exc", [ChainError("rpc down"), StorageError("store unreachable"),
                                 ContractRevert("Panic")])
def test_network_errors_stay_cycle_level(tmp_path: Path, exc: Exception) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.fail[1] = exc
    with DaemonState(tmp_path / "s.sqlite") as state:
        d, _ = solver(state, world, clock)
        d.follow("open", 10)
        with pytest.raises(type(exc)):
            d._claim_next()
        assert d.quarantine.entries() == [] and state.keys("working:") == []


def test_an_exception_while_training_quarantines_and_never_stops_the_daemon(tmp_path: Path) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.add(20, job=2)
    with DaemonState(tmp_path / "s.sqlite") as state:
        d, _ = solver(state, world, clock)
        assigned = {u: dataclasses.replace(world.units[u], status=UnitStatus.ASSIGNED, solver=ME)
                    for u in (10, 20)}
        world.units.update(assigned)
        trained: list[int] = []

        def advance(unit: Unit) -> None:
            if unit.job_id == 1:
                raise TrainingError("size mismatch for layer 0")
            trained.append(unit.unit_id)

        d._advance_mine = advance  # type: ignore[method-assign]
        d.follow("mine", 10)
        d.follow("mine", 20)
        d.claim_credit = lambda: 0  # type: ignore[method-assign]
        d.tick()
        assert trained == [20]
        assert [e.job for e in d.quarantine.entries()] == [1]


def test_a_second_crash_inside_a_handler_quarantines_its_job_on_restart(tmp_path: Path) -> None:
    """One death inside a unit (an operator's kill -9) is resumed at once; a second one in the same unit
    (OOM-killed again, a segfault) quarantines the job: at most one retry, never a crash loop."""
    world, clock = World(), Clock()
    world.add(10, job=1)
    world.add(20, job=2)
    path = tmp_path / "s.sqlite"
    with DaemonState(path) as state:
        Quarantine(state, clock=clock).mark(1, 10)  # the process died here
    with DaemonState(path) as state:
        d, _ = solver(state, world, clock)
        d.quarantine_leftovers()
        assert d.quarantine.get(1) is None and state.keys("working:") == []  # resumed at once
        Quarantine(state, clock=clock).mark(1, 10)  # ... and it died in the same unit again
    with DaemonState(path) as state:
        d, _ = solver(state, world, clock)
        d.quarantine_leftovers()
        entry = d.quarantine.get(1)
        assert entry is not None and entry.reason.startswith("crashed") and entry.unit == 10
        assert state.keys("working:") == []
        d.follow("open", 10)
        d.follow("open", 20)
        d._claim_next()
        assert world.claims == [20] and world.fetches == [2]  # not retried at once


def test_a_handler_that_ends_cleanly_forgets_an_earlier_death(tmp_path: Path) -> None:
    world, clock = World(), Clock()
    world.add(10, job=1)
    with DaemonState(tmp_path / "s.sqlite") as state:
        Quarantine(state, clock=clock).mark(1, 10)
        d, _ = solver(state, world, clock)
        d.quarantine_leftovers()
        assert d.isolated(1, 10, lambda: "done") == "done"  # the resumed handler ends cleanly
        Quarantine(state, clock=clock).mark(1, 10)  # a later, unrelated death is a first one again
        d.quarantine_leftovers()
        assert d.quarantine.get(1) is None


def test_quarantine_list_and_clear_from_the_cli(tmp_path: Path) -> None:
    from gensyn_py.cli.main import cli

    state_dir = tmp_path / "solver-aabbccdd"
    with DaemonState(state_dir / "state.sqlite") as state:
        q = Quarantine(state)
        q.put(3, 30, "ContentNotFound: bafy-missing")
        q.put(4, 40, "UnfitJob: labels")
        runner = CliRunner()
        out = runner.invoke(cli, ["solver", "quarantine", "list", "--state-dir", str(state_dir)])
        assert out.exit_code == 0, out.output
        assert "job 3" in out.output and "bafy-missing" in out.output and "job 4" in out.output
        out = runner.invoke(cli, ["solver", "quarantine", "list", "--json", "--state-dir", str(state_dir)])
        assert [json.loads(line)["job"] for line in out.output.splitlines()] == [3, 4]
        # clear works beside the running daemon (the state is held by this process's lock)
        out = runner.invoke(cli, ["solver", "quarantine", "clear", "3", "--state-dir", str(state_dir)])
        assert out.exit_code == 0 and "released 1" in out.output
        assert [e.job for e in q.entries()] == [4]
        out = runner.invoke(cli, ["solver", "quarantine", "clear", "--state-dir", str(state_dir)])
        assert "released 1" in out.output and q.entries() == []
        out = runner.invoke(cli, ["validator", "quarantine", "list", "--state-dir", str(tmp_path / "nope")])
        assert out.exit_code != 0


@pytest.mark.parametrize("role", ["validator", "challenger"])
def test_validator_and_challenger_isolate_each_unit(tmp_path: Path, role: str) -> None:
    from gensyn_py.node.challenger import ChallengerDaemon
    from gensyn_py.node.validator import ValidatorDaemon

    world, clock = World(), Clock()
    world.add(10, job=1)
    world.add(20, job=2)
    for u in (10, 20):
        world.units[u] = dataclasses.replace(world.units[u], status=UnitStatus.VERIFIED, deadline=10**12)
    cls = ValidatorDaemon if role == "validator" else ChallengerDaemon
    with DaemonState(tmp_path / "s.sqlite") as state:
        d = cls.__new__(cls)
        Daemon.__init__(d, f"{role}-test", Web3(), {}, state, reader=FakeReader(state.cursor, []),
                        metrics=DaemonMetrics(f"{role}-test"))
        zero = staticmethod(lambda: 0)  # the latest block's time and the pending block's alike
        d.view = type("View", (), {"unit": staticmethod(world.unit), "now": zero, "next_time": zero})()  # type: ignore[assignment]
        d.quarantine = Quarantine(state, clock=clock)
        d.log = Events()  # type: ignore[assignment]
        d.claim_credit = lambda: 0  # type: ignore[method-assign]
        done: list[int] = []

        def handle(unit: Unit, *_: Any) -> None:
            if unit.job_id == 1:
                raise RuntimeError("size mismatch for weight: copying a param with shape [3] into [2]")
            done.append(unit.unit_id)

        if role == "validator":
            d._verdict = handle  # type: ignore[method-assign]
            group = "drawn"
        else:
            d._audit = handle  # type: ignore[method-assign]
            group = "audit"
        state.put(f"{group}:10", {"segment": 0})
        state.put(f"{group}:20", {"segment": 0})
        d.tick()
        assert done == [20]
        assert [(e.job, e.unit) for e in d.quarantine.entries()] == [(1, 10)]
        assert "RuntimeError: size mismatch" in d.quarantine.entries()[0].reason
