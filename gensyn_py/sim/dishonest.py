"""Dishonest nodes: the real role daemons with one method overridden, for the tests and the demo.

A `CheatingSolver` claims, commits and keeps its checkpoints like any solver, but produces its
commitment with a cheat from the library (`sim/cheats.py`); a `LazyValidator` accepts and votes without
replaying. Production code never imports this module (the import-layering check says so); the processes
are started by `python -m gensyn_py.cli.dishonest`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gensyn_py.errors import ConfigError
from gensyn_py.node.role import NodeConfig
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.proof.replay import Verdict
from gensyn_py.sim.cheats import CHEATS, FLIPS, WITHHOLDING, solve_flipped

ALL_CHEATS = {**CHEATS, **WITHHOLDING}

if TYPE_CHECKING:
    import torch

    from gensyn_py.proof.commitment import UnitCommitment
    from gensyn_py.proof.segment_side import Flip
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec
    from gensyn_py.types import Unit


class CheatingSolver(SolverDaemon):
    """A solver whose training units are produced by the named cheat (aggregations stay honest)."""

    def __init__(self, config: NodeConfig, records_dir: Path, cheat: str, device: str | None = None) -> None:
        if cheat not in ALL_CHEATS:
            raise ConfigError(f"unknown cheat {cheat!r} (have: {', '.join(sorted(ALL_CHEATS))})")
        super().__init__(config, records_dir, device)
        self.cheat = cheat
        if cheat in FLIPS:
            # In a dispute game it defends the work it committed: its own replay, with the value it changed.
            self.games.flip_for = self._flip_of

    def _flip_of(self, unit: Unit) -> Flip:
        return FLIPS[self.cheat](self.content.spec(unit.job_id), self.content.dataset(unit.job_id), unit.round,
                                 unit.shard)

    def train_unit(self, unit: Unit, epoch: int, spec: JobSpec, dataset: Dataset,
                   weights: Mapping[str, torch.Tensor] | None) -> UnitCommitment:
        self.log.warning("unit.cheating", unit=unit.unit_id, cheat=self.cheat)
        if self.cheat in FLIPS:  # the cheats that differ from a replay only where they cheated, bound to its address
            return solve_flipped(self.cheat, spec, dataset, self.store, unit.job_id, unit.round, unit.shard,
                                 self.address)
        return ALL_CHEATS[self.cheat](spec, dataset, self.store, unit.job_id, unit.round, unit.shard)


class LazyValidator(ValidatorDaemon):
    """Accepts every segment and votes "honest" on every dispute without replaying anything."""

    def replay(self, unit: Unit, segment: int) -> Verdict:
        return Verdict(True, segment, secrets.token_bytes(32), "accepted without replaying")


class FalseReporter(ValidatorDaemon):
    """Reports each unit's data unavailable although it is there (a false report), then, once the solver has
    answered, replays and reveals honestly: it can only cost the solver an answer, never gain beyond its fee."""

    def missing(self, unit: Unit, segment: int) -> str | None:
        key = f"false-report:{unit.unit_id}:{unit.commit_deadline}"
        if self.state.get(key) is None:
            self.state.put(key, True)
            return "pretended missing (a false report)"
        return super().missing(unit, segment)
