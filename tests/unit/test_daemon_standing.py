"""A role daemon's standing at start: a validator under the registry's minimum stops with a clear error,
a jailed node unjails once its term is over (and not before), a validator that left the set re-joins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from web3 import Web3

from gensyn_py.errors import ConfigError
from gensyn_py.node.daemon import Daemon
from gensyn_py.node.role import NodeDaemon
from gensyn_py.node.solver import SolverDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.node.validator import ValidatorDaemon
from gensyn_py.types import Standing
from tests.unit.test_daemon_cycle import FakeReader
from tests.unit.test_daemon_solver_claim import Events

ME = Web3.to_checksum_address("0x" + "aa" * 20)
E18 = 10**18
MIN = 50 * E18
NOW = 10_000


class FakeRegistry:
    """The registry as one node sees it: its jail term, set membership and bonded stake."""

    def __init__(self, bonded: int, jailed_until: int = 0, member: bool = True) -> None:
        self.bonded, self.jailed_until, self.member = bonded, jailed_until, member
        self.sent: list[str] = []

    def standing(self, node: str) -> Standing:
        assert node == ME
        return Standing(self.jailed_until, self.member, self.bonded, MIN)

    def is_jailed(self, node: str) -> bool:
        return self.jailed_until != 0

    def unjail(self) -> str:
        assert NOW >= self.jailed_until != 0
        self.sent.append("unjail")
        self.jailed_until = 0
        self.member = self.bonded >= MIN
        return "0x" + "cd" * 32

    def join_validator_set(self) -> str:
        self.sent.append("joinValidatorSet")
        self.member = True
        return "0x" + "ef" * 32


@pytest.fixture
def state(tmp_path: Path) -> Iterator[DaemonState]:
    with DaemonState(tmp_path / "state.sqlite") as s:
        yield s


def bare(cls: type[NodeDaemon], state: DaemonState, registry: FakeRegistry) -> tuple[NodeDaemon, Events]:
    daemon = cls.__new__(cls)
    Daemon.__init__(daemon, f"{cls.role_name}-test", Web3(), {}, state, reader=FakeReader(state.cursor, []))
    daemon.address = ME
    daemon.registry = registry  # type: ignore[assignment]
    clock = staticmethod(lambda: NOW)  # the latest block's time and the pending block's alike
    daemon.view = type("View", (), {"now": clock, "next_time": clock})()  # type: ignore[assignment]
    events = Events()
    daemon.log = events  # type: ignore[assignment]
    return daemon, events


def test_a_validator_under_the_minimum_stops_naming_both_amounts(state: DaemonState) -> None:
    daemon, _ = bare(ValidatorDaemon, state, FakeRegistry(bonded=MIN - 1, member=False))
    with pytest.raises(ConfigError) as exc:
        daemon.check_standing()
    assert "below the registry's minimum of 50" in str(exc.value) and "--stake 50" in str(exc.value)


def test_a_solver_needs_no_validator_minimum(state: DaemonState) -> None:
    reg = FakeRegistry(bonded=E18, member=False)
    daemon, _ = bare(SolverDaemon, state, reg)
    daemon.check_standing()
    assert reg.sent == []


def test_a_jailed_node_waits_out_its_term_then_unjails_once(state: DaemonState) -> None:
    reg = FakeRegistry(bonded=100 * E18, jailed_until=NOW + 1, member=False)
    daemon, events = bare(ValidatorDaemon, state, reg)
    daemon.check_standing()
    assert reg.sent == [] and "node.jailed" in events.names
    reg.jailed_until = NOW
    daemon.check_standing()
    daemon.check_standing()
    assert reg.sent == ["unjail"] and reg.member and "node.unjailed" in events.names


def test_a_validator_that_left_the_set_rejoins(state: DaemonState) -> None:
    reg = FakeRegistry(bonded=MIN, member=False)
    daemon, events = bare(ValidatorDaemon, state, reg)
    daemon.check_standing()
    assert reg.sent == ["joinValidatorSet"] and "node.joined_validator_set" in events.names
    daemon.check_standing()
    assert reg.sent == ["joinValidatorSet"]
