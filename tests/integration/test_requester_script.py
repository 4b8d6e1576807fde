"""`scripts/submit_job.py` as a requester runs it: a separate process with a keystore, against a real chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensyn_py.chain.accounts import create_keystore
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.requester.amounts import E18
from tests.integration.test_requester_kit import (
    Deployed,
    chain_state,
    deployed,
    digits_train,
    play_unit_to_final,
    tiny_spec,
    wait_for,
)

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "submit_job.py"


def test_script_help_lists_the_wallet_options() -> None:
    shown = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    for option in ("--keystore", "--key", "--password", "--max-price", "--out", "--dataset"):
        assert option in shown.stdout


@pytest.mark.usefixtures("snapshot")
def test_script_submits_follows_and_downloads_the_verified_model(deployed: Deployed, tmp_path: Path) -> None:
    keystore = tmp_path / "requester.json"
    create_keystore(keystore, "correct horse", deployed.requester.key, kdf="pbkdf2", iterations=2)
    (tmp_path / "digits.safetensors").write_bytes(digits_train()[1])
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(tiny_spec(dataset={"file": "digits.safetensors"})))
    out = tmp_path / "model.safetensors"
    _, balance, _ = chain_state(deployed, deployed.requester)
    pool = deployed.session().pool
    first_job = pool.next_job_id()
    env = {**os.environ, **deployed.env, "GENSYN_PASSWORD": "correct horse"}
    env.pop("GENSYN_KEY", None)
    cmd = [sys.executable, str(SCRIPT), str(spec), "--keystore", str(keystore), "--out", str(out),
           "--poll", "0.2", "--timeout", "120"]
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            wait_for(lambda: proc.poll() is not None or pool.next_job_id() > first_job, 60,
                     "the script to submit its job")
            assert proc.poll() is None, proc.communicate()
            played = play_unit_to_final(deployed, first_job)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr
    assert "correct horse" not in stdout + stderr and deployed.requester.key.hex() not in stdout + stderr
    assert f"job {first_job} submitted" in stdout and f"job {first_job} completed" in stdout
    assert state_hash_of_bytes(out.read_bytes()) == played.final_state_hash
    assert json.loads(out.with_suffix(".json").read_text())["unitId"] == played.unit_id
    # The requester paid exactly the solver's price (5) and a fee (10) per drawn validator: the draw may
    # find fewer than two distinct validators, whose unused fees come back with the rest of the 30 escrowed.
    drawn = len(deployed.session().view.unit(played.unit_id).validators)
    refund = 30 - 5 - 10 * drawn
    assert f"withdrew {refund:.2f} tokens of refunds" in stdout
    assert chain_state(deployed, deployed.requester)[1] == balance - (30 - refund) * E18
