"""The state hash is a Merkle root over the state's tensors (`proof/state.py`): what a dispute opens tensor by
tensor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gensyn_py.crypto.merkle import verify_proof
from gensyn_py.errors import VerificationError
from gensyn_py.proof.state import (
    encode_state,
    state_entry,
    state_hash,
    state_hash_of_bytes,
    state_proof,
    state_root,
    tensors_of_bytes,
)
from gensyn_py.proof.tensor_commit import prove_element, tensor_root, verify_element
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, tiny_spec


@pytest.fixture(scope="module", params=["exact", "repro"])
def state(request: pytest.FixtureRequest) -> dict[str, torch.Tensor]:
    t = Trainer(tiny_spec("mlp", mode=request.param), dataset_for("mlp"), 0, 0, "cpu")
    t.run(2)  # optimizer state included
    return t.state_dict()


def test_the_hash_of_a_state_is_the_hash_of_its_bytes(state: dict[str, torch.Tensor]) -> None:
    data = encode_state(state)
    assert state_hash(state) == state_hash_of_bytes(data) == state_root(tensors_of_bytes(data))
    assert {"rng", "cursor"} <= set(state) and any(k.startswith("optim/") for k in state)


def test_one_flipped_bit_renamed_key_or_reshape_changes_the_hash(state: dict[str, torch.Tensor]) -> None:
    base = state_hash(state)
    key = next(k for k in sorted(state) if k.startswith("model/"))
    flipped = dict(state)
    raw = state[key].clone().reshape(-1).view(torch.int32)
    raw[raw.numel() // 2] ^= 1
    flipped[key] = raw.view(torch.float32).reshape(state[key].shape)
    renamed = {("model/zz" if k == key else k): v for k, v in state.items()}
    reshaped = {**state, key: state[key].reshape(-1, 1)}
    cursor = {**state, "cursor": state["cursor"] + torch.tensor([0, 0, 1])}
    hashes = {base, state_hash(flipped), state_hash(renamed), state_hash(reshaped), state_hash(cursor)}
    assert len(hashes) == 5


def test_one_element_of_a_committed_state_is_proven_by_two_paths(state: dict[str, torch.Tensor]) -> None:
    tensors = tensors_of_bytes(encode_state(state))
    root = state_root(tensors)
    for key in sorted(tensors):
        assert verify_proof(state_entry(key, tensors[key]), state_proof(tensors, key), root)
    key = next(k for k in sorted(tensors) if k.startswith("optim/"))
    arr = tensors[key].reshape(-1)
    element = arr.size - 1
    proof = prove_element(tensors[key], element)
    assert verify_element(tensor_root(tensors[key]), tensors[key].shape, "float32", element, arr[element], proof)
    assert not verify_element(tensor_root(tensors[key]), tensors[key].shape, "float32", element,
                              np.float32(arr[element] + 1), proof)
    assert not verify_proof(state_entry(key, tensors[key] + 1), state_proof(tensors, key), root)


@pytest.mark.parametrize("data", [b"", b"not a safetensors file", b"\xff" * 64])
def test_bytes_that_are_no_state_get_a_clear_error(data: bytes) -> None:
    with pytest.raises(VerificationError, match=r"not valid safetensors|at least one tensor"):
        state_hash_of_bytes(data)
