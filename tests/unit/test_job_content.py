"""JobContent checks a job's spec bytes against the on-chain spec hash before it parses them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gensyn_py.chain.view import JobInfo
from gensyn_py.crypto.hashing import keccak256
from gensyn_py.errors import SpecError
from gensyn_py.proof.content import JobContent
from tests.unit.trainkit import spec_dict, store_at


class _OneJob:
    """The part of a ChainView that JobContent.spec reads: the JobSubmitted record of job 1."""

    def __init__(self, spec_hash: bytes, spec_cid: str) -> None:
        self.info = JobInfo(1, "0x" + "11" * 20, spec_hash, spec_cid, 0, 0)

    def job(self, job_id: int) -> JobInfo:
        assert job_id == 1
        return self.info


def _content(tmp_path: Path, stored: bytes, on_chain: bytes) -> JobContent:
    store = store_at(tmp_path)
    cid = store.put(stored)
    view: Any = _OneJob(on_chain, cid)
    return JobContent(view, store)


def test_a_spec_written_by_an_outside_client_is_used_as_stored(tmp_path: Path) -> None:
    d = spec_dict()
    d["optimizer"]["weight_decay"] = 0  # an int where the model has a float: fine, the bytes are the spec
    raw = json.dumps(d, indent=1).encode()
    spec = _content(tmp_path, raw, keccak256(raw)).spec(1)
    assert spec.spec_hash() == keccak256(raw) and spec.optimizer.weight_decay == 0.0


def test_spec_bytes_under_the_wrong_hash_are_refused_with_both_hashes(tmp_path: Path) -> None:
    raw = json.dumps(spec_dict()).encode()
    with pytest.raises(SpecError, match=r"job 1, spec .*: the spec bytes hash to 0x[0-9a-f]{64}, not to the on-chain"):
        _content(tmp_path, raw, keccak256(b"another spec")).spec(1)
