"""Download a completed job's model, verified against the chain, with a JSON sidecar.

The model is the result of the job's final unit (the last round's aggregation
unit, or its only unit): the unit must be Final and the job Completed. Its
bytes come from the content store by the CID its manifest names; the manifest
must match the unit's on-chain checkpoint root, and the bytes' state hash
(`proof/state.py`: a Merkle root over the file's tensors) must equal the
unit's on-chain final state hash. Anything else is refused and nothing is
written.

The file written is exactly those bytes (safetensors), so
`gensyn job hash model.safetensors` prints the on-chain final state hash. The
model's weights are its `model/*` tensors (a single-shard job's file also
holds the optimizer, RNG and data cursor of the last checkpoint);
`load_weights()` returns them with the prefix stripped, after checking the
file against its sidecar.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import ConfigError, GensynError, StorageError, VerificationError
from gensyn_py.proof.state import state_hash_of_bytes
from gensyn_py.requester.errors import DownloadRefused, JobNotReady
from gensyn_py.types import JobStatus, UnitStatus

if TYPE_CHECKING:
    import torch

    from gensyn_py.requester.session import Requester

SIDECAR_VERSION = 2  # 2: no "sha256" key (the state hash is finalStateHash)


@dataclass(frozen=True)
class DownloadResult:
    path: Path
    sidecar: Path
    job_id: int
    unit_id: int
    final_state_hash: bytes
    size: int
    tensors: int  # model tensors in the file


def sidecar_path(out: Path) -> Path:
    """`model.safetensors` -> `model.json`."""
    return out.with_suffix(".json")


def fetch_final_model(requester: Requester, job_id: int) -> tuple[dict[str, Any], bytes]:
    """The final unit's verified result bytes and the sidecar describing them; writes nothing."""
    from gensyn_py.proof.aggregation_unit import load_weights

    view, content = requester.view, requester.content
    state = view.job_state(job_id)
    if state.status is JobStatus.NONE:
        raise JobNotReady(f"job {job_id} does not exist on this deployment")
    if state.status is not JobStatus.COMPLETED:
        raise JobNotReady(f"job {job_id} is {state.status.name.lower()}: only a completed job has a final model")
    job = view.job(job_id)
    spec = content.spec(job_id)  # its hash is checked against the on-chain spec hash
    unit = view.final_unit(job_id, spec.rounds, spec.shards)
    if unit is None or unit.status is not UnitStatus.FINAL:
        raise JobNotReady(f"job {job_id} is completed but its final unit is not final")
    try:
        result = content.result(unit)  # the manifest must match the on-chain root and final state hash
        data = requester.store.get(result.cid, requester.timeout)
    except (StorageError, VerificationError) as exc:
        raise DownloadRefused(f"job {job_id} unit {unit.unit_id}: {exc}; nothing written") from None
    try:
        digest = state_hash_of_bytes(data)
    except VerificationError as exc:
        raise DownloadRefused(f"job {job_id} unit {unit.unit_id}: {exc}; nothing written") from None
    if digest != result.final_state_hash:
        raise DownloadRefused(
            f"job {job_id} unit {unit.unit_id}: the model bytes hash to 0x{digest.hex()}, the chain says "
            f"0x{result.final_state_hash.hex()}; nothing written"
        )
    try:
        weights = load_weights(data)
    except VerificationError as exc:
        raise DownloadRefused(f"job {job_id} unit {unit.unit_id}: {exc}; nothing written") from None
    sidecar = {
        "version": SIDECAR_VERSION,
        "chainId": requester.protocol.chain_id,
        "taskPool": requester.pool.address,
        "jobId": job_id,
        "unitId": unit.unit_id,
        "round": unit.round,
        "aggregation": unit.is_aggregation,
        "specHash": "0x" + job.spec_hash.hex(),
        "specCid": job.spec_cid,
        "finalStateHash": "0x" + result.final_state_hash.hex(),
        "resultCid": result.cid,
        "size": len(data),
        "model": spec.model.model_dump(mode="json"),  # an ONNX model: its file's CID, which the weights fit
        "weights": {name: list(t.shape) for name, t in sorted(weights.items())},
        "note": "the file is the final unit's committed result; the model weights are its tensors under 'model/'",
    }
    return sidecar, data


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def download_model(requester: Requester, job_id: int, out: Path, overwrite: bool = False) -> DownloadResult:
    """Verify, then write `out` (the model) and its sidecar `out.with_suffix('.json')`."""
    side = sidecar_path(out)
    if out == side:
        raise ConfigError(f"{out}: name the model file with a suffix other than .json (e.g. model.safetensors)")
    if not overwrite and (out.exists() or side.exists()):
        raise ConfigError(f"{out if out.exists() else side} already exists (overwrite it with --force)")
    sidecar, data = fetch_final_model(requester, job_id)
    _write_atomic(out, data)
    _write_atomic(side, (json.dumps(sidecar, indent=2, sort_keys=True) + "\n").encode())
    return DownloadResult(out, side, job_id, int(sidecar["unitId"]), bytes.fromhex(sidecar["finalStateHash"][2:]),
                          len(data), len(sidecar["weights"]))


def verify_file(path: Path) -> dict[str, Any]:
    """The sidecar of `path`, after checking the file's state hash against the final state hash it records."""
    side = sidecar_path(path)
    try:
        meta = json.loads(side.read_text())
        data = path.read_bytes()
    except (OSError, ValueError) as exc:
        raise VerificationError(f"cannot read {path} and its sidecar {side}: {exc}") from None
    if "0x" + state_hash_of_bytes(data).hex() != meta.get("finalStateHash"):
        raise VerificationError(f"{path} does not hash to the final state hash in {side}")
    return dict(meta)


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """The model weights of a downloaded file (checked against its sidecar), ready for `load_state_dict`."""
    from gensyn_py.proof.aggregation_unit import load_weights as weights_of

    verify_file(path)
    try:
        return weights_of(path.read_bytes())
    except GensynError as exc:
        raise VerificationError(f"{path}: {exc}") from None
