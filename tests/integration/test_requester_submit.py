"""The requester against a real anvil and the real contracts: submit, status, cancel, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gensyn_py.cli.main import cli
from gensyn_py.errors import ContractRevert
from gensyn_py.requester.cancel import cancel_job
from gensyn_py.requester.download import download_model
from gensyn_py.requester.errors import InsufficientFunds, JobNotReady, SubmitError
from gensyn_py.requester.follow import JobWatcher, follow
from gensyn_py.requester.pricing import Offer, escrow_for, unit_count
from gensyn_py.requester.submit import submit_job
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.storage.local import LocalStore
from gensyn_py.train.spec import parse_spec
from gensyn_py.types import JobStatus, UnitStatus
from tests.integration.test_requester_kit import (
    E18,
    Deployed,
    chain_state,
    deployed,
    digits_train,
    store_digits,
    tiny_spec,
)

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
pytestmark = pytest.mark.usefixtures("snapshot")


def gensyn(d: Deployed, *args: str, key: str | None = None) -> Result:
    env = dict(d.env)
    if key is not None:
        env["GENSYN_KEY"] = key
    return CliRunner().invoke(cli, list(args), env=env)


def key_of(account: Any) -> str:
    return str(account.key.to_0x_hex())


def write_spec(tmp_path: Path, spec: dict[str, Any] | str) -> Path:
    path = tmp_path / "job.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return path


def _wrong_size() -> dict[str, Any]:
    spec = tiny_spec()
    spec["dataset"]["size_bytes"] += 8
    return spec


BAD_SPECS = {
    "malformed JSON": ('{"version": 1, "model": ', "is not valid JSON"),
    "unknown model family": (tiny_spec(model={"family": "resnet", "sizes": {}}), "unknown model family 'resnet'"),
    "dataset CID not in the store": (
        tiny_spec(dataset={**tiny_spec()["dataset"], "cid": cid_for_bytes(b"never stored")}),
        "is not in the content store",
    ),
    "wrong dataset size": (_wrong_size(), "does not match the spec"),
    "model does not fit the data": (tiny_spec(model={"family": "mlp", "sizes": {"in_features": 32}}),
                                    "cannot run on the dataset"),
}


@pytest.mark.parametrize("case", list(BAD_SPECS))
def test_submit_refuses_a_bad_spec_before_any_transaction(deployed: Deployed, tmp_path: Path, case: str) -> None:
    spec, message = BAD_SPECS[case]
    store_digits(deployed)
    before = chain_state(deployed, deployed.requester)
    result = gensyn(deployed, "job", "submit", str(write_spec(tmp_path, spec)), "--no-follow",
                    key=key_of(deployed.requester))
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert chain_state(deployed, deployed.requester) == before  # same nonce, balance and allowance


def test_submit_without_the_tokens_names_the_shortfall_and_sends_nothing(deployed: Deployed) -> None:
    store_digits(deployed)
    req = deployed.session(deployed.stranger)
    before = chain_state(deployed, deployed.stranger)
    with pytest.raises(InsufficientFunds) as err:
        submit_job(req, parse_spec(tiny_spec()), Offer(max_price_per_unit=10 * E18))
    escrow = escrow_for(1, 1, 10 * E18, req.pool_params())  # 10 + 2 validators x 10 fee
    assert err.value.need == escrow == 30 * E18 and err.value.shortfall == escrow
    assert "30.00 short of the 30.00 escrow" in str(err.value)
    assert chain_state(deployed, deployed.stranger) == before


def test_submit_refuses_a_commit_window_below_the_pool_minimum(deployed: Deployed) -> None:
    store_digits(deployed)
    req = deployed.session(deployed.requester)
    before = chain_state(deployed, deployed.requester)
    with pytest.raises(SubmitError, match="below the pool's minimum of 30s"):
        submit_job(req, parse_spec(tiny_spec()), Offer(commit_window=5))
    assert chain_state(deployed, deployed.requester) == before


def test_submit_escrows_the_budget_and_approves_only_that(deployed: Deployed) -> None:
    store_digits(deployed)
    req = deployed.session(deployed.requester)
    spec = parse_spec(tiny_spec(rounds=2, shards=2))
    nonce, balance, allowance = chain_state(deployed, deployed.requester)
    escrow_before = req.pool.total_escrow()
    assert allowance == 0

    result = submit_job(req, spec, Offer(max_price_per_unit=7 * E18))

    expected = unit_count(2, 2) * (7 * E18 + 2 * 10 * E18)  # 6 units (4 training + 2 aggregation)
    assert (result.units, result.escrow, result.approved) == (6, expected, expected)
    assert chain_state(deployed, deployed.requester) == (nonce + 2, balance - expected, 0)  # approve + submit
    assert req.pool.total_escrow() - escrow_before == expected
    assert req.view.job(result.job_id).budget == expected
    assert req.content.spec(result.job_id) == spec  # the stored spec hashes to the on-chain spec hash


def test_submit_with_enough_allowance_sends_only_the_submission(deployed: Deployed) -> None:
    store_digits(deployed)
    req = deployed.session(deployed.requester)
    req.token.approve(req.pool.address, 10**30)
    nonce, _, _ = chain_state(deployed, deployed.requester)
    result = submit_job(req, parse_spec(tiny_spec()))
    assert result.approved == 0
    assert chain_state(deployed, deployed.requester)[0] == nonce + 1


def test_submit_uploads_a_local_dataset_the_spec_file_names(deployed: Deployed, tmp_path: Path) -> None:
    _, data = digits_train()
    (tmp_path / "digits.safetensors").write_bytes(data)
    spec = tiny_spec(dataset={"file": "digits.safetensors"})
    store = LocalStore(tmp_path / "fresh-store")
    env = {**deployed.env, "GENSYN_STORE": f"local:{store.root}", "GENSYN_KEY": key_of(deployed.requester)}
    result = CliRunner().invoke(cli, ["job", "submit", str(write_spec(tmp_path, spec)), "--no-follow"], env=env)
    assert result.exit_code == 0, result.output
    assert "uploaded as" in result.output and "submitted" in result.output
    req = deployed.session()
    job = req.view.job(req.pool.next_job_id() - 1)
    assert store.get(parse_spec(json.loads(store.get(job.spec_cid))).dataset.cid) == data


def test_status_shows_the_job_and_its_units(deployed: Deployed) -> None:
    store_digits(deployed)
    job_id = submit_job(deployed.session(deployed.requester), parse_spec(tiny_spec(shards=2))).job_id

    shown = gensyn(deployed, "job", "status", str(job_id))
    assert shown.exit_code == 0, shown.output
    assert f"job {job_id} active" in shown.output
    assert "0/3 units settled" in shown.output
    assert "shard 0" in shown.output and "shard 1" in shown.output and "open" in shown.output

    as_json = json.loads(gensyn(deployed, "job", "status", str(job_id), "--json").output)
    assert as_json["status"] == "ACTIVE" and as_json["totalUnits"] == 3
    assert [u["status"] for u in as_json["units"]] == ["OPEN", "OPEN"]
    assert any("opened" in line for line in as_json["events"])


def test_follow_returns_at_its_timeout_while_the_job_runs(deployed: Deployed, tmp_path: Path) -> None:
    store_digits(deployed)
    req = deployed.session(deployed.requester)
    job_id = submit_job(req, parse_spec(tiny_spec())).job_id
    outcome = follow(JobWatcher(req.view, job_id, 1, 1), poll_interval=0.05, timeout=0.2)
    assert outcome.timed_out
    assert outcome.snapshot.state.status is JobStatus.ACTIVE
    assert [u.status for u in outcome.snapshot.units] == [UnitStatus.OPEN]
    with pytest.raises(JobNotReady, match="only a completed job has a final model"):
        download_model(req, job_id, tmp_path / "model.safetensors")
    assert list(tmp_path.iterdir()) == []


def test_submit_follows_the_job_live_until_its_timeout(deployed: Deployed, tmp_path: Path) -> None:
    store_digits(deployed)
    result = gensyn(deployed, "job", "submit", str(write_spec(tmp_path, tiny_spec())), "--timeout", "0.3",
                    "--poll", "0.1", key=key_of(deployed.requester))
    assert result.exit_code == 2, result.output
    assert "0/1 units settled" in result.output and "opened (round 0, shard 0)" in result.output
    assert "still active after 0s; the job goes on" in result.output
    assert deployed.requester.key.hex() not in result.output + result.stderr


def test_cancel_refunds_the_whole_escrow_to_the_wallet(deployed: Deployed) -> None:
    store_digits(deployed)
    _, balance, _ = chain_state(deployed, deployed.requester)
    job_id = submit_job(deployed.session(deployed.requester), parse_spec(tiny_spec(rounds=3))).job_id
    assert chain_state(deployed, deployed.requester)[1] == balance - 3 * 30 * E18

    result = gensyn(deployed, "job", "cancel", str(job_id), key=key_of(deployed.requester))

    assert result.exit_code == 0, result.output
    assert "90.00 tokens refunded, 90.00 withdrawn" in result.output
    req = deployed.session()
    assert chain_state(deployed, deployed.requester)[1] == balance
    assert req.pool.credit(deployed.requester.address) == 0
    assert req.view.job_state(job_id).status is JobStatus.CANCELLED
    assert gensyn(deployed, "job", "cancel", str(job_id), key=key_of(deployed.requester)).exit_code == 1


def test_cancel_refuses_a_job_of_another_requester(deployed: Deployed) -> None:
    store_digits(deployed)
    job_id = submit_job(deployed.session(deployed.requester), parse_spec(tiny_spec())).job_id
    with pytest.raises(JobNotReady, match="belongs to"):
        cancel_job(deployed.session(deployed.stranger), job_id)
    with pytest.raises(ContractRevert, match="NotRequester"):  # and the pool itself agrees
        deployed.session(deployed.stranger).pool.cancel_job(job_id)
