"""The solver daemon's choice of a partial to resume from: a good one is taken and kept for the epoch; one
that is missing or does not check out is refused with a log line, and the unit is trained from the start."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

from gensyn_py.node.daemon import Daemon
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.storage.local import LocalStore
from gensyn_py.types import PartialRef, UnitPartial, UnitStatus
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import ME, Events, open_unit
from tests.unit.test_resume_partial import JOB, _partial_of_a
from tests.unit.trainkit import store_at, tiny_spec

NO_PARTIAL = UnitPartial("0x" + "00" * 20, b"\0" * 32, 0)


def _solver(tmp_path: Path, store: LocalStore, partials: list[PartialRef]) -> tuple[SolverDaemon, Events]:
    """A SolverDaemon without a chain: the pool's `partialOf` is the last of `partials`."""
    state = DaemonState(tmp_path / "state.sqlite")
    daemon = SolverDaemon.__new__(SolverDaemon)
    Daemon.__init__(daemon, "solver-test", None, {}, state, reader=FakeReader(state.cursor, []))  # type: ignore[arg-type]
    daemon.address = ME
    daemon.store = store
    daemon.content = SimpleNamespace(timeout=0.1)  # type: ignore[assignment]

    def partial_of(_unit_id: int) -> UnitPartial:
        last = partials[-1] if partials else None
        return NO_PARTIAL if last is None else UnitPartial(last.solver, last.root, last.segments)

    daemon.pool = SimpleNamespace(partial_of=partial_of)  # type: ignore[assignment]
    daemon.view = SimpleNamespace(partials=lambda _unit_id: tuple(partials))  # type: ignore[assignment]
    events = Events()
    daemon.log = events  # type: ignore[assignment]
    return daemon, events


UNIT = dataclasses.replace(open_unit(), job_id=JOB, status=UnitStatus.ASSIGNED, solver=ME, deadline=5_000)


def test_a_good_partial_is_resumed_from_and_kept_for_the_epoch(tmp_path: Path) -> None:
    spec, store = tiny_spec(), store_at(tmp_path / "store")
    partial = _partial_of_a(spec, store, 2)
    partials = [partial]
    daemon, events = _solver(tmp_path, store, partials)
    kept = tmp_path / "unit.resume.json"
    resume = daemon._resume_source(UNIT, spec, kept)
    assert resume is not None and resume.segments == 2 and resume.solver == partial.solver
    assert json.loads(kept.read_text())["manifestCid"] == partial.manifest_cid
    # Its own partial replaces that one on-chain; a restart still resumes from the one it began with.
    partials.append(PartialRef(ME, b"\1" * 32, 3, "bafkown"))
    again = daemon._resume_source(UNIT, spec, kept)
    assert again == resume
    assert "unit.resume_refused" not in events.names


def test_a_missing_or_wrong_partial_is_refused_and_the_unit_trained_from_the_start(tmp_path: Path) -> None:
    spec, store = tiny_spec(), store_at(tmp_path / "store")
    partial = _partial_of_a(spec, store, 2)
    for i, bad in enumerate([dataclasses.replace(partial, manifest_cid="bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                                 "aaaaaaaaaaaaaaaaa"),  # not in the store
                             dataclasses.replace(partial, root=b"\2" * 32)]):  # not the manifest's root
        daemon, events = _solver(tmp_path / str(i), store, [bad])
        kept = tmp_path / f"unit-{i}.resume.json"
        assert daemon._resume_source(UNIT, spec, kept) is None
        assert events.names.count("unit.resume_refused") == 1
        assert json.loads(kept.read_text()) is None  # decided: this epoch trains from the start
        assert daemon._resume_source(UNIT, spec, kept) is None


def test_no_partial_means_training_from_the_start(tmp_path: Path) -> None:
    spec, store = tiny_spec(), store_at(tmp_path / "store")
    daemon, events = _solver(tmp_path, store, [])
    assert daemon._resume_source(UNIT, spec, tmp_path / "unit.resume.json") is None
    assert events.names == []
