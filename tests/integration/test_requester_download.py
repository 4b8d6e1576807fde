"""A job played to completion for real; the requester follows it, downloads its model, and refuses bad bytes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from rich.console import Console
from web3 import Web3

from gensyn_py.cli.main import cli
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.requester.download import download_model, load_weights, verify_file
from gensyn_py.requester.errors import DownloadRefused
from gensyn_py.requester.follow import JobWatcher, follow, render
from gensyn_py.requester.session import Requester
from gensyn_py.requester.submit import submit_job
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import JobStatus, UnitStatus
from tests.integration.test_requester_kit import (
    Deployed,
    PlayedUnit,
    deployed,
    play_job_to_completion,
    play_unit_to_final,
    store_digits,
    tiny_spec,
)

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here


@dataclass(frozen=True)
class Completed:
    job_id: int
    played: PlayedUnit


@pytest.fixture(scope="module")
def completed(deployed: Deployed, w3: Web3) -> Iterator[Completed]:
    """One job, submitted by the requester and played to Final; the chain is rolled back after the module."""
    snap = w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
    store_digits(deployed)
    job_id = submit_job(deployed.session(deployed.requester), parse_spec(tiny_spec())).job_id
    yield Completed(job_id, play_unit_to_final(deployed, job_id))
    w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]


def test_follow_sees_the_job_complete_with_its_unit_final(deployed: Deployed, completed: Completed) -> None:
    req = deployed.session()
    outcome = follow(JobWatcher(req.view, completed.job_id, 1, 1), poll_interval=0.05, timeout=10)
    snap = outcome.snapshot
    assert not outcome.timed_out
    assert snap.state.status is JobStatus.COMPLETED
    assert [(u.unit_id, u.status) for u in snap.units] == [(completed.played.unit_id, UnitStatus.FINAL)]
    assert snap.settled == snap.total_units == 1
    assert any("accepted" in e for e in snap.events)
    assert snap.events[-1] == "job completed; 5.00 unspent tokens credited back"  # 30 escrowed, 5 + 2 x 10 paid
    console = Console(record=True, width=120)
    console.print(render(snap))
    assert "1/1 units settled" in console.export_text()


def test_download_writes_the_model_whose_state_hash_is_on_chain(
    deployed: Deployed, completed: Completed, tmp_path: Path
) -> None:
    out = tmp_path / "model.safetensors"
    result = CliRunner().invoke(cli, ["job", "download", str(completed.job_id), "--out", str(out)], env=deployed.env)
    assert result.exit_code == 0, result.output

    on_chain = deployed.session().view.commitment(completed.played.unit_id)
    assert on_chain is not None
    assert state_hash_of_bytes(out.read_bytes()) == on_chain.final_state_hash == completed.played.final_state_hash
    printed = CliRunner().invoke(cli, ["job", "hash", str(out)])
    assert printed.exit_code == 0 and printed.output.strip() == "0x" + on_chain.final_state_hash.hex()
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["jobId"] == completed.job_id and sidecar["unitId"] == completed.played.unit_id
    assert sidecar["finalStateHash"] == "0x" + on_chain.final_state_hash.hex()
    assert sidecar["specHash"] == "0x" + parse_spec(tiny_spec()).spec_hash().hex()
    assert verify_file(out) == sidecar
    weights = load_weights(out)
    assert weights.keys() == completed.played.weights.keys()
    assert all(torch.equal(weights[k], completed.played.weights[k]) for k in weights)  # the solver's model, exactly

    again = CliRunner().invoke(cli, ["job", "download", str(completed.job_id), "--out", str(out)], env=deployed.env)
    assert again.exit_code == 1 and "already exists" in again.stderr


def _store_copy(deployed: Deployed, tmp_path: Path) -> LocalStore:
    shutil.copytree(deployed.store_dir, tmp_path / "store")
    return LocalStore(tmp_path / "store")


def test_download_refuses_a_tampered_blob_and_writes_nothing(
    deployed: Deployed, completed: Completed, tmp_path: Path
) -> None:
    store = _store_copy(deployed, tmp_path)
    req = Requester(deployed.protocol(), store)
    cid = req.content.result(req.view.unit(completed.played.unit_id)).cid
    blob = bytearray(store.path_for(cid).read_bytes())
    blob[-1] ^= 1  # one flipped bit in the last weight
    store.path_for(cid).write_bytes(bytes(blob))
    out_dir = tmp_path / "out"
    with pytest.raises(DownloadRefused, match="nothing written"):
        download_model(req, completed.job_id, out_dir / "model.safetensors")
    assert not out_dir.exists()


class ServesOtherBytes(LocalStore):
    """A store that answers one CID with other bytes and skips the CID check (a broken or hostile backend)."""

    def __init__(self, root: Path, cid: str, data: bytes) -> None:
        super().__init__(root)
        self.cid, self.data = cid, data

    def get(self, cid: str, timeout: float | None = None) -> bytes:
        return self.data if cid == self.cid else super().get(cid, timeout)


def test_download_refuses_bytes_that_do_not_hash_to_the_on_chain_state(
    deployed: Deployed, completed: Completed, tmp_path: Path
) -> None:
    honest = Requester(deployed.protocol(), LocalStore(deployed.store_dir))
    result = honest.content.result(honest.view.unit(completed.played.unit_id))
    commitment = honest.view.commitment(completed.played.unit_id)
    assert commitment is not None
    manifest = honest.content.manifest(commitment.manifest_cid)
    stale = honest.store.get(manifest.checkpoint_cids[0])  # a real checkpoint, but not the final one
    req = Requester(deployed.protocol(), ServesOtherBytes(deployed.store_dir, result.cid, stale))
    with pytest.raises(DownloadRefused, match="the chain says 0x" + result.final_state_hash.hex()):
        download_model(req, completed.job_id, tmp_path / "model.safetensors")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("snapshot")
def test_a_sharded_job_downloads_its_final_aggregate(deployed: Deployed, tmp_path: Path) -> None:
    store_digits(deployed)
    job_id = submit_job(deployed.session(deployed.requester), parse_spec(tiny_spec(shards=2))).job_id
    last = play_job_to_completion(deployed, job_id)  # two training units, then the round's aggregation
    req = deployed.session()
    assert req.view.unit(last.unit_id).is_aggregation
    d = download_model(req, job_id, tmp_path / "model.safetensors")
    assert d.unit_id == last.unit_id
    assert state_hash_of_bytes(d.path.read_bytes()) == last.final_state_hash
    weights = load_weights(d.path)
    assert all(torch.equal(weights[k], last.weights[k]) for k in last.weights) and weights.keys() == last.weights.keys()
    assert json.loads(d.sidecar.read_text())["aggregation"] is True


def test_claim_withdraws_the_unspent_budget(deployed: Deployed, completed: Completed) -> None:
    env = {**deployed.env, "GENSYN_KEY": deployed.requester.key.to_0x_hex()}
    result = CliRunner().invoke(cli, ["job", "claim"], env=env)
    assert result.exit_code == 0, result.output
    assert "withdrew 5.00 tokens" in result.output
    assert CliRunner().invoke(cli, ["job", "claim"], env=env).output.strip() == "no credit to withdraw"
