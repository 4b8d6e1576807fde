"""Canonical bytes of a training state and its sha256 state hash.

Canonical form: safetensors with no metadata, keys sorted, every float as
float32 little-endian, RNG state as uint8, cursor as int64. Equal states give
equal bytes in any process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gensyn_py.crypto.hashing import sha256
from gensyn_py.errors import VerificationError

if TYPE_CHECKING:
    import torch

_ALLOWED = {"rng": "uint8", "cursor": "int64"}


def _canonical_tensor(key: str, t: torch.Tensor) -> torch.Tensor:
    import torch

    want = getattr(torch, _ALLOWED.get(key, "float32"))
    return t.detach().to("cpu", want).contiguous()


def encode_state(state: Mapping[str, torch.Tensor]) -> bytes:
    """The canonical bytes of a state dict (from Trainer.state_dict())."""
    from safetensors.torch import save

    return save({k: _canonical_tensor(k, state[k]) for k in sorted(state)})


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


def state_hash_of_bytes(data: bytes) -> bytes:
    """bytes32 state hash: sha256 of the canonical bytes."""
    return sha256(data)


def state_hash(state: Mapping[str, torch.Tensor]) -> bytes:
    return sha256(encode_state(state))


def model_weights(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model/* part of a state, with the prefix stripped."""
    return {k[len("model/"):]: v for k, v in state.items() if k.startswith("model/")}
