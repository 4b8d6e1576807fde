"""Round aggregation: a deterministic weighted average of the units' final weights.

Weights are examples per shard; units are summed in shard order in float64
and rounded once to float32, so anyone recomputes the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gensyn_py.errors import VerificationError
from gensyn_py.proof.state import encode_state, model_weights
from gensyn_py.train.shard_permutation import shard_range

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.spec import JobSpec


def shard_weights(spec: JobSpec) -> list[int]:
    n = spec.dataset.num_examples
    return [shard_range(n, spec.shards, i)[1] for i in range(spec.shards)]  # sizes alone: no permutation


def aggregate(spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The next round's global weights from every shard's final state, in shard order."""
    return aggregate_traced(spec, unit_states)[0]


def aggregate_traced(
    spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]]
) -> tuple[dict[str, torch.Tensor], bytes]:
    """The aggregate and sha256 of its float64 accumulators before rounding.

    The accumulator digest is the aggregation unit's transcript secret: the
    published float32 result does not determine it, so only a recomputation knows it.
    """
    import torch

    from gensyn_py.crypto.hashing import sha256

    if len(unit_states) != spec.shards:
        raise VerificationError(f"aggregation needs {spec.shards} unit results, got {len(unit_states)}")
    weights = shard_weights(spec)
    total = float(sum(weights))
    per_unit = [model_weights(s) for s in unit_states]
    keys = sorted(per_unit[0])
    out: dict[str, torch.Tensor] = {}
    digest = bytearray()
    for key in keys:
        acc = torch.zeros(per_unit[0][key].shape, dtype=torch.float64)
        for w, unit in zip(weights, per_unit, strict=True):
            if key not in unit or unit[key].shape != acc.shape:
                raise VerificationError(f"unit results disagree on parameter {key!r}")
            acc += unit[key].to(torch.float64) * (w / total)
        out[key] = acc.to(torch.float32)
        digest += sha256(acc.contiguous().numpy().astype("<f8").tobytes())
    return out, sha256(bytes(digest))


def aggregate_bytes(weights: Mapping[str, torch.Tensor]) -> bytes:
    """Canonical bytes of aggregated weights (safetensors, sorted, float32)."""
    return encode_state({f"model/{k}": v for k, v in weights.items()})


def aggregate_hash(weights: Mapping[str, torch.Tensor]) -> bytes:
    from gensyn_py.crypto.hashing import sha256

    return sha256(aggregate_bytes(weights))


def verify_aggregate(
    spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]], claimed: bytes
) -> bool:
    """Recompute the aggregate and compare its hash with the claimed one."""
    return aggregate_hash(aggregate(spec, unit_states)) == claimed
