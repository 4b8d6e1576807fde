"""`gensyn nodes classes` and an `exact` job against a real anvil: classes declared by nodes are listed with their
validators and solvers, and a submitted spec's mode reaches the chain (`JobParams.verification`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gensyn_py.chain.classes import list_classes
from gensyn_py.cli.main import cli
from gensyn_py.node.daemon import Handler
from gensyn_py.node.hardware import HardwareProfile
from gensyn_py.node.replay_class import ReplayClass, short
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.node.state import DaemonState
from gensyn_py.requester.pricing import Offer
from gensyn_py.requester.submit import submit_job
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import ROLE_VALIDATOR, VERIFY_EXACT, VERIFY_REPRO, JobParams
from tests.integration.test_requester_kit import E18, Deployed, deployed, store_digits, tiny_spec

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
pytestmark = pytest.mark.usefixtures("snapshot")

H100 = ReplayClass({"device": "cuda", "gpu": "NVIDIA H100", "capability": "9.0", "torch": "2.4.0"})
A100 = ReplayClass({"device": "cuda", "gpu": "NVIDIA A100", "capability": "8.0", "torch": "2.4.0"})


def _declare(d: Deployed) -> None:
    """Solver and validator 0 on an H100, validator 1 on an A100."""
    protocol = d.protocol()
    for node, rc in ((d.solver, H100), (d.validators[0], H100), (d.validators[1], A100)):
        protocol.registry(protocol.sender(node)).set_replay_class(rc.description)


def test_nodes_classes_lists_each_class_with_its_validators_and_solvers(deployed: Deployed) -> None:
    d = deployed
    empty = CliRunner().invoke(cli, ["nodes", "classes"], env=d.env)
    assert empty.exit_code == 0, empty.output
    assert "no node declares a replay class" in empty.output
    _declare(d)
    rows = {r.class_id: r for r in list_classes(d.protocol())}
    assert (rows[H100.class_id].validators, rows[H100.class_id].solvers) == (1, 1)
    assert (rows[A100.class_id].validators, rows[A100.class_id].solvers) == (1, 0)
    assert rows[H100.class_id].description == H100.description

    shown = CliRunner().invoke(cli, ["nodes", "classes", "--json"], env=d.env)
    assert shown.exit_code == 0, shown.output
    listed = {x["classId"]: x for x in map(json.loads, shown.output.splitlines())}
    assert listed["0x" + H100.class_id.hex()]["validators"] == 1
    assert listed["0x" + A100.class_id.hex()]["solvers"] == 0
    table = CliRunner().invoke(cli, ["nodes", "classes"], env=d.env)
    assert short(H100.class_id) in table.output and "NVIDIA H100" in table.output


def test_a_specs_mode_is_the_jobs_verification_on_chain(deployed: Deployed) -> None:
    d = deployed
    store_digits(d)
    req = d.session(d.requester)
    for mode, expected in (("repro", VERIFY_REPRO), ("exact", VERIFY_EXACT)):
        result = submit_job(req, parse_spec(tiny_spec(mode=mode)), Offer(max_price_per_unit=7 * E18))
        tx = req.protocol.w3.eth.get_transaction(result.tx_hash)
        _, args = req.protocol["TaskPool"].decode_function_input(tx["input"])
        assert JobParams.from_abi(tuple(args["p"].values())).verification == expected


def test_the_measured_class_is_what_the_registry_hashes(deployed: Deployed) -> None:
    d = deployed
    _declare(d)
    registry = d.protocol().registry()
    assert registry.replay_class_of(d.solver.address) == H100.class_id
    assert registry.class_peers(d.solver.address) == (H100.class_id, 1)
    assert registry.validator_count_in(A100.class_id) == 1


class _Node(NodeDaemon):
    """A role daemon with no handlers: only its start-up duties are exercised."""

    role_bits = ROLE_VALIDATOR
    role_name = "validator"

    def handlers(self) -> dict[str, Handler]:
        return {}


def test_a_daemon_declares_its_measured_class_and_updates_it_when_the_hardware_changes(
    deployed: Deployed, tmp_path: Path
) -> None:
    d = deployed
    protocol = d.protocol()
    node = d.validators[0]

    def daemon(rc: ReplayClass, state: str) -> _Node:
        config = NodeConfig(protocol=protocol, account=node, store=LocalStore(d.store_dir),
                            state=DaemonState(tmp_path / state), hardware=HardwareProfile("cpu", 16_000, 1_000),
                            replay_class=rc)
        return _Node(config)

    registry = protocol.registry()
    first = daemon(H100, "a.sqlite")
    first.sync_replay_class()
    assert registry.replay_class_of(node.address) == H100.class_id
    first.sync_replay_class()  # unchanged: no transaction (a second setReplayClass would revert)
    first.state.close()
    daemon(A100, "b.sqlite").sync_replay_class()  # new GPU, same key
    assert registry.replay_class_of(node.address) == A100.class_id
    assert registry.validator_count_in(H100.class_id) == 0 and registry.validator_count_in(A100.class_id) == 1
