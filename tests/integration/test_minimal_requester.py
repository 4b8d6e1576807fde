"""`examples/minimal_requester.py`, a requester written from docs/formats.md and the ABIs alone, against a real
anvil: what it submits and stores is what the project's own node-side code accepts."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from gensyn_py.chain.view import ChainView
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.proof.content import JobContent
from gensyn_py.requester.pricing import escrow_for
from gensyn_py.storage.local import LocalStore
from gensyn_py.types import JobStatus
from tests.integration.test_requester_kit import Deployed, chain_state, deployed, play_unit_to_final, wait_for

__all__ = ["deployed"]  # the session fixture, imported so pytest finds it here
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minimal_requester.py"


def test_example_imports_only_web3_eth_account_and_the_standard_library() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    outside = imported - set(sys.stdlib_module_names) - {"web3", "eth_account", "__future__"}
    assert not outside, f"the example imports {sorted(outside)}"


@pytest.mark.usefixtures("snapshot")
def test_example_submits_a_job_the_nodes_accept(deployed: Deployed, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    protocol = deployed.protocol()
    pool = protocol.pool()
    job_id = pool.next_job_id()
    _, balance, _ = chain_state(deployed, deployed.requester)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), deployed.url, deployed.requester.key.hex(), str(store_dir),
         str(deployed.deployments_dir), "--no-wait"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"job {job_id} submitted" in done.stdout

    view = ChainView(protocol)
    job = view.job(job_id)
    assert job.requester == deployed.requester.address
    spec_bytes = LocalStore(store_dir).get(job.spec_cid)
    assert job.spec_hash == keccak256(spec_bytes)
    assert b"\n    " in spec_bytes  # its own formatting (indented), not the project's canonical JSON

    # The project's node-side code fetches, checks and parses what the example stored.
    content = JobContent(view, LocalStore(store_dir))
    spec = content.spec(job_id)
    assert spec.spec_hash() == job.spec_hash
    assert spec.canonical_bytes() != spec_bytes
    dataset = content.dataset(job_id)
    assert dataset.num_examples == spec.dataset.num_examples == 64
    assert str(dataset.x.dtype) == "float32" and str(dataset.y.dtype) == "int64"

    # The on-chain job has the spec's shape, and the escrow is the project's formula.
    (unit_id,) = view.unit_ids(job_id)
    unit = view.unit(unit_id)
    assert (unit.round, unit.shard) == (0, 0)
    state = view.job_state(job_id)
    assert state.status is JobStatus.ACTIVE
    params = deployed.session().pool_params()
    escrow = escrow_for(spec.rounds, spec.shards, 10 * 10**18, params)
    assert state.escrow == escrow == job.budget
    assert chain_state(deployed, deployed.requester)[1] == balance - escrow
    assert f"escrow {escrow} " in done.stdout
    assert deployed.requester.key.hex() not in done.stdout + done.stderr


@pytest.mark.usefixtures("snapshot")
def test_example_waits_for_completion_and_prints_the_final_state_hash(deployed: Deployed, tmp_path: Path) -> None:
    """The wait path, with the kit's scripted solver and validators (no daemons) playing the unit to Final."""
    pool = deployed.protocol().pool()
    job_id = pool.next_job_id()
    cmd = [sys.executable, str(EXAMPLE), deployed.url, deployed.requester.key.hex(), str(deployed.store_dir),
           str(deployed.deployments_dir), "--poll", "0.2", "--timeout", "120"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path) as proc:
        try:
            wait_for(lambda: proc.poll() is not None or pool.next_job_id() > job_id, 60,
                     "the example to submit its job")
            assert proc.poll() is None, proc.communicate()
            played = play_unit_to_final(deployed, job_id)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, stdout + stderr
    assert f"job {job_id} completed: final state hash 0x{played.final_state_hash.hex()}" in stdout
