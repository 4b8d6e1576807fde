"""Round aggregation: the next global model from the round's unit results, computed bit for bit alike
by anyone.

Two rules, chosen by the spec's `aggregation.rule` (docs/formats.md):

- `average` (FedAvg): the weighted average of the units' final weights (weights: examples per shard).
- `diloco`: an outer Nesterov step over the averaged parameter delta (DiLoCo).  With theta the round's
  start weights, avg the average above, m the outer momentum the previous round left (zeros in round 0),
  mu the outer momentum and eta the outer learning rate:
      delta = theta - avg;  m' = mu * m + delta;  theta' = theta - eta * (delta + mu * m')
  theta' and m' are the round's result; m' is committed with the weights (`outer/<param>/momentum`),
  so the next round's aggregation reads it from this one's checkpoint.

Every sum is taken in shard order in float64 and every float64 operation is a separate elementwise op (no
fused multiply-add), so the float64 values are the same on any machine; each result is rounded once to
float32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gensyn_py.errors import VerificationError
from gensyn_py.proof.state import encode_state, model_weights
from gensyn_py.train.shard_permutation import shard_range

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.spec import JobSpec

OUTER = "outer/"
MOMENTUM = "/momentum"


@dataclass(frozen=True)
class OuterState:
    """What a `diloco` aggregation starts from: the round's start weights and the outer momentum the previous
    round's aggregation committed (empty in round 0: zeros)."""

    weights: Mapping[str, torch.Tensor]
    momentum: Mapping[str, torch.Tensor]


def shard_weights(spec: JobSpec) -> list[int]:
    n = spec.dataset.num_examples
    return [shard_range(n, spec.shards, i)[1] for i in range(spec.shards)]  # sizes alone: no permutation


def momentum_key(param: str) -> str:
    return f"{OUTER}{param}{MOMENTUM}"


def outer_momentum(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The outer momentum entries of an aggregate's state, by parameter name."""
    return {k[len(OUTER):-len(MOMENTUM)]: v for k, v in state.items() if k.startswith(OUTER) and k.endswith(MOMENTUM)}


def aggregate(spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]],
              outer: OuterState | None = None) -> dict[str, torch.Tensor]:
    """The next round's global state (weights, and the outer momentum under `diloco`), in shard order."""
    return aggregate_traced(spec, unit_states, outer)[0]


def aggregate_traced(
    spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]], outer: OuterState | None = None
) -> tuple[dict[str, torch.Tensor], bytes]:
    """The aggregate and sha256 of its float64 values before rounding (the average, and under `diloco` the
    new weights and momentum too).

    The digest is the aggregation unit's transcript secret: the published float32 result does not
    determine it, so only a recomputation knows it.  The result maps parameter names to weights and, under
    `diloco`, `outer/<param>/momentum` to the outer momentum.
    """
    import torch

    from gensyn_py.crypto.hashing import sha256

    if len(unit_states) != spec.shards:
        raise VerificationError(f"aggregation needs {spec.shards} unit results, got {len(unit_states)}")
    diloco = spec.aggregation.rule == "diloco"
    if diloco and outer is None:
        raise VerificationError("a diloco aggregation needs the round's start weights and outer momentum")
    weights = shard_weights(spec)
    total = float(sum(weights))
    per_unit = [model_weights(s) for s in unit_states]
    keys = sorted(per_unit[0])
    out: dict[str, torch.Tensor] = {}
    digest = bytearray()

    def record(t: torch.Tensor) -> None:
        digest.extend(sha256(t.contiguous().numpy().astype("<f8").tobytes()))

    for key in keys:
        acc = torch.zeros(per_unit[0][key].shape, dtype=torch.float64)
        for w, unit in zip(weights, per_unit, strict=True):
            if key not in unit or unit[key].shape != acc.shape:
                raise VerificationError(f"unit results disagree on parameter {key!r}")
            acc += unit[key].to(torch.float64) * (w / total)
        record(acc)
        if not diloco:
            out[key] = acc.to(torch.float32)
            continue
        assert outer is not None
        theta = _entry(outer.weights, key, acc.shape, "start weights")
        m = _entry(outer.momentum, key, acc.shape, "outer momentum") if outer.momentum else torch.zeros_like(acc)
        mu, eta = spec.aggregation.outer_momentum, spec.aggregation.outer_lr
        delta = torch.sub(theta, acc)
        m_new = torch.add(torch.mul(m, mu), delta)
        step = torch.add(delta, torch.mul(m_new, mu))
        theta_new = torch.sub(theta, torch.mul(step, eta))
        record(theta_new)
        record(m_new)
        out[key] = theta_new.to(torch.float32)
        out[momentum_key(key)] = m_new.to(torch.float32)
    return out, sha256(bytes(digest))


def _entry(entries: Mapping[str, torch.Tensor], key: str, shape: torch.Size, what: str) -> torch.Tensor:
    import torch

    t = entries.get(key)
    if t is None or t.shape != shape:
        raise VerificationError(f"the {what} lack parameter {key!r} or have another shape")
    return t.to(torch.float64)


def aggregate_bytes(state: Mapping[str, torch.Tensor]) -> bytes:
    """Canonical bytes of an aggregate (safetensors, sorted, float32): `model/<param>` for the weights, and
    `outer/<param>/momentum` kept as they are."""
    return encode_state({(k if k.startswith(OUTER) else f"model/{k}"): v for k, v in state.items()})


def aggregate_hash(state: Mapping[str, torch.Tensor]) -> bytes:
    from gensyn_py.crypto.hashing import sha256

    return sha256(aggregate_bytes(state))


def verify_aggregate(
    spec: JobSpec, unit_states: Sequence[Mapping[str, torch.Tensor]], claimed: bytes, outer: OuterState | None = None
) -> bool:
    """Recompute the aggregate and compare its hash with the claimed one."""
    return aggregate_hash(aggregate(spec, unit_states, outer)) == claimed
