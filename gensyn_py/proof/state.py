"""Canonical bytes of a training state and its state hash, a Merkle root over its tensors.

Canonical form: safetensors with no metadata, keys sorted, every float as
float32 little-endian, RNG state as uint8, cursor as int64. Equal states give
equal bytes in any process.

The state hash is not a hash of those bytes but the OpenZeppelin-compatible Merkle root
(``crypto.merkle``) of one entry per tensor,

    entry(key) = keccak256(key_hash(key) ++ tensor_root(tensor)),   key_hash(key) = attrs_hash((key,)),

in the order of their key hashes (so a contract, which cannot compare strings, can check the order).

with ``tensor_root`` of ``proof/tensor_commit.py``. That entry is exactly the leaf a step trace's named
input ``key`` has (``proof/step_program.input_leaf``), so a dispute proves one tensor of a committed
state, and then one element of it, on-chain with Merkle paths alone (docs/dispute-game.md). The same rule
hashes any canonical safetensors file: a model-only weights file included.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.errors import VerificationError
from gensyn_py.proof.tensor_commit import DataRoots, tensor_root, tensor_roots
from gensyn_py.proof.trace import attrs_hash

if TYPE_CHECKING:
    import numpy as np
    import torch

_ALLOWED = {"rng": "uint8", "cursor": "int64"}


def _canonical_tensor(key: str, t: torch.Tensor) -> torch.Tensor:
    import torch

    want = getattr(torch, _ALLOWED.get(key, "float32"))
    return t.detach().to("cpu", want).contiguous()


def encode_state(state: Mapping[str, torch.Tensor]) -> bytes:
    """The canonical bytes of a state dict (from Trainer.state_dict()): safetensors, copied with the GIL released
    (`state_bytes.py`), so a checkpoint encoded on the writer's thread does not stall training."""
    from gensyn_py.proof.state_bytes import safetensors_bytes

    return safetensors_bytes({k: _canonical_tensor(k, state[k]) for k in sorted(state)})


def decode_state(data: bytes) -> dict[str, torch.Tensor]:
    """Decode canonical state bytes; VerificationError if they are not a well-formed state."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        state = load(data)
    except (SafetensorError, ValueError) as e:
        raise VerificationError(f"checkpoint is not valid safetensors: {e}") from None
    if "cursor" not in state or "rng" not in state:
        raise VerificationError("checkpoint lacks its cursor or RNG state")
    for key, t in state.items():
        want = _ALLOWED.get(key, "float32")
        if str(t.dtype).removeprefix("torch.") != want:
            raise VerificationError(f"checkpoint tensor {key!r} is {t.dtype}, canonical form is {want}")
    return dict(state)


@lru_cache(maxsize=4096)  # a state's few keys, hashed (canonical JSON) on every sort by them
def key_hash(key: str) -> bytes:
    """keccak256 of the canonical JSON of ``[key]``: a state entry's key, and a named input op's attributes."""
    return attrs_hash((key,))


def state_entry(key: str, tensor: np.ndarray[Any, Any], data: DataRoots | None = None) -> bytes:
    """The state tree's leaf of tensor `key`: a step trace's input leaf of the same name and value (its data root
    looked up in and kept in `data` when given)."""
    return _entry(key, tensor_root(tensor, data))


def _entry(key: str, root: bytes) -> bytes:
    return keccak256(key_hash(key) + root)


def state_keys(tensors: Mapping[str, Any]) -> list[str]:
    """The keys in the state tree's order: by key hash."""
    return sorted(tensors, key=key_hash)


def _entries(tensors: Mapping[str, np.ndarray[Any, Any]], data: DataRoots | None = None,
             workers: int | None = None) -> list[bytes]:
    if not tensors:
        raise VerificationError("a state holds at least one tensor")
    keys = state_keys(tensors)
    # The tensors' roots in one batch (``tensor_roots``: hashed across the cores when large).
    roots = tensor_roots([tensors[k] for k in keys], data, workers)
    return [_entry(k, root) for k, root in zip(keys, roots, strict=True)]


def state_root(tensors: Mapping[str, np.ndarray[Any, Any]], data: DataRoots | None = None,
               workers: int | None = None) -> bytes:
    """The Merkle root of the entries of canonical `tensors`, in key-hash order (the tensors' data roots looked up
    in and kept in `data` when given: a tensor a step left unchanged is hashed once), on at most `workers` threads
    (``tensor_roots``)."""
    return merkle_root(_entries(tensors, data, workers))


def state_proof(tensors: Mapping[str, np.ndarray[Any, Any]], key: str) -> list[bytes]:
    """The path of tensor `key`'s entry up to ``state_root(tensors)``."""
    if key not in tensors:
        raise VerificationError(f"the state holds no tensor {key!r}")
    return merkle_proof(_entries(tensors), state_keys(tensors).index(key))


def tensors_of_bytes(data: bytes) -> dict[str, np.ndarray[Any, Any]]:
    """The tensors of a safetensors file, as NumPy arrays; VerificationError if it is not one."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    try:
        return dict(load(data))
    except (SafetensorError, ValueError) as e:
        raise VerificationError(f"the bytes are not valid safetensors: {e}") from None


def state_hash_of_bytes(data: bytes) -> bytes:
    """bytes32 state hash of canonical safetensors bytes (a state or a weights file)."""
    return state_root(tensors_of_bytes(data))


def canonical_arrays(state: Mapping[str, torch.Tensor]) -> dict[str, np.ndarray[Any, Any]]:
    """A state dict's tensors in canonical form, as NumPy arrays (what the state tree hashes)."""
    return {k: _canonical_tensor(k, state[k]).numpy() for k in state}


def state_hash(state: Mapping[str, torch.Tensor], workers: int | None = None) -> bytes:
    """The state hash of a state dict: equal to ``state_hash_of_bytes(encode_state(state))``, hashed on at most
    `workers` threads."""
    return state_root(canonical_arrays(state), workers=workers)


def model_weights(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model/* part of a state, with the prefix stripped."""
    return {k[len("model/"):]: v for k, v in state.items() if k.startswith("model/")}
