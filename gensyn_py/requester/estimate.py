"""Price a job from its spec alone: FLOPs, time per hardware class, tokens, and the cloud equivalent.

    training      = flops_per_step x steps_per_unit x rounds x shards
    verification  = validatorsPerUnit x checkpoint_interval x flops_per_step per training unit
                    (each drawn validator replays one segment) + the aggregation units' re-computation
    aggregation   = 2 x params x shards per round when sharded (a weighted sum), replayed by each validator

Time on a hardware class is `flops / sustained FLOP/s + steps x per-step overhead`
(the overhead is what dominates a small model: kernel launches, the Python loop,
deterministic kernels), both times `repro_slowdown` for mode `repro`, whose
software-exact operators run 4-7x slower than plain fp32 on CPU (docs/repro.md,
section 4; untested on GPUs, where the same factor is assumed). `wall` assumes every shard of a round trains on its own
machine and the validators replay in parallel, and leaves out the protocol's
windows, which are reported apart (`protocol_wait_s`, a lower bound: one
challenge window per phase). The cloud figure is what the training alone would
cost on one on-demand machine of that class: no verification, no protocol.

The hardware table is an assumption (on-demand list prices as of
`gensyn_py/requester/cloud.py`'s `PRICES_AS_OF` and typical sustained
throughput for fp32 training with TF32 off, as mode `exact` runs it); override
any entry with a JSON file, see `load_hardware`, or only the prices with a dated
file, see `gensyn_py/requester/cloud.py`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import ConfigError
from gensyn_py.requester.amounts import E18, format_tokens
from gensyn_py.requester.pricing import escrow_for, unit_count
from gensyn_py.train.flops import spec_costs
from gensyn_py.types import PoolParams

if TYPE_CHECKING:
    from rich.console import RenderableType

    from gensyn_py.train.spec import JobSpec


@dataclass(frozen=True)
class HardwareClass:
    """Nominal throughput and price of one kind of machine."""

    name: str
    device_class: str  # the protocol's device class that can run it ("cpu" or "cuda")
    flops_per_s: float  # sustained fp32 training throughput (per thread when per_thread)
    usd_per_hour: float  # on-demand price (per thread when per_thread)
    step_overhead_s: float  # fixed cost of one optimizer step regardless of size
    per_thread: bool = False  # scale throughput and price by the spec's `threads`
    # mode `repro` over mode `exact`: docs/repro.md section 8 measures 1.3x (the demo MLP) to 2.9x (a 10M GPT) and
    # 4.9x (a ResNet-style CNN) on CPU, 3.2x to 5.2x on an H100 (section 7)
    repro_slowdown: float = 3.0
    basis: str = ""


# Assumptions as of 2026; see docs/requester.md. Override with `--hardware FILE`.
HARDWARE: tuple[HardwareClass, ...] = (
    HardwareClass("cpu", "cpu", 40e9, 0.045, 0.005, per_thread=True,
                  basis="one x86 core (AVX2/AVX-512 FMA) per thread at ~40% of fp32 peak; "
                        "$0.045 per vCPU-hour (general-purpose on-demand)"),
    HardwareClass("cuda-consumer", "cuda", 25e12, 0.70, 0.002, repro_slowdown=5.0,
                  basis="RTX 4090-class: 82.6 TFLOP/s fp32 peak at ~30%; $0.70/h on GPU marketplaces"),
    HardwareClass("a100", "cuda", 10e12, 2.50, 0.002, repro_slowdown=5.0,
                  basis="A100 80GB: 19.5 TFLOP/s fp32 (no TF32 in exact mode) at ~50%; $2.50/h on-demand"),
    HardwareClass("h100", "cuda", 30e12, 3.50, 0.002, repro_slowdown=5.0,
                  basis="H100 SXM: 67 TFLOP/s fp32 (no TF32 in exact mode) at ~45%; $3.50/h on-demand"),
)
_FIELDS = {"device_class", "flops_per_s", "usd_per_hour", "step_overhead_s", "per_thread", "repro_slowdown", "basis"}


def load_hardware(path: Path, base: tuple[HardwareClass, ...] = HARDWARE) -> tuple[HardwareClass, ...]:
    """Override or add hardware classes from JSON: {"h100": {"usd_per_hour": 2.2}, "l4": {...all fields}}."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"hardware table {path} is unreadable: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"hardware table {path} must map class names to objects")
    table = {h.name: h for h in base}
    for name, fields in raw.items():
        if not isinstance(fields, dict) or set(fields) - _FIELDS:
            raise ConfigError(f"hardware table {path}: {name!r} must be an object with fields from {sorted(_FIELDS)}")
        try:
            table[name] = replace(table[name], **fields) if name in table else HardwareClass(name, **fields)
        except TypeError as exc:
            raise ConfigError(f"hardware table {path}: {name!r}: {exc}") from None
    return tuple(table.values())


@dataclass(frozen=True)
class HardwareEstimate:
    name: str
    eligible: bool  # matches the spec's device class
    unit_s: float  # one training unit
    compute_s: float  # all training and verification, summed over machines
    wall_s: float  # critical path with every shard and validator in parallel, windows excluded
    cloud_usd: float  # the training alone on one on-demand machine of this class


@dataclass(frozen=True)
class Estimate:
    params: int
    flops_per_step: int
    steps_per_unit: int
    units: int
    training_units: int
    training_flops: int
    verification_flops: int
    aggregation_flops: int
    escrow: int
    max_solver_pay: int
    max_validator_fees: int
    max_price_per_unit: int
    protocol_wait_s: int
    hardware: tuple[HardwareEstimate, ...]
    assumptions: tuple[HardwareClass, ...]
    token_usd: float | None = None

    @property
    def total_flops(self) -> int:
        return self.training_flops + self.verification_flops + self.aggregation_flops

    @property
    def verification_overhead(self) -> float:
        """Verification (and aggregation) FLOPs as a share of training FLOPs."""
        return (self.verification_flops + self.aggregation_flops) / self.training_flops

    def to_json(self) -> dict[str, Any]:
        """Token amounts as decimal strings of base units (they overflow JSON doubles); keys in camelCase."""
        tokens = {_camel(k): str(getattr(self, k)) for k in ("escrow", "max_solver_pay", "max_validator_fees",
                                                             "max_price_per_unit")}
        return {
            "params": self.params, "flopsPerStep": self.flops_per_step, "stepsPerUnit": self.steps_per_unit,
            "units": self.units, "trainingUnits": self.training_units,
            "flops": {"training": self.training_flops, "verification": self.verification_flops,
                      "aggregation": self.aggregation_flops, "total": self.total_flops},
            "tokens": tokens,
            "tokenUsd": self.token_usd,
            "escrowUsd": None if self.token_usd is None else self.escrow / E18 * self.token_usd,
            "protocolWaitS": self.protocol_wait_s,
            "hardware": [_camel_keys(asdict(h)) for h in self.hardware],
            "assumptions": [_camel_keys(asdict(h)) for h in self.assumptions],
        }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _camel_keys(d: dict[str, Any]) -> dict[str, Any]:
    return {_camel(k): v for k, v in d.items()}


def estimate(
    spec: JobSpec,
    max_price_per_unit: int,
    params: PoolParams,
    hardware: tuple[HardwareClass, ...] = HARDWARE,
    token_usd: float | None = None,
) -> Estimate:
    """The whole estimate; pure arithmetic on the spec, the offer and the pool's parameters."""
    n_params, per_step = spec_costs(spec)
    v = params.validators_per_unit
    training_units = spec.rounds * spec.shards
    steps = spec.steps_per_unit
    training = per_step * steps * training_units
    replay_steps = v * spec.checkpoint_interval
    verification = per_step * replay_steps * training_units
    aggregating = spec.shards > 1
    aggregation = 2 * n_params * spec.shards * spec.rounds * (1 + v) if aggregating else 0
    phases = spec.rounds * (2 if aggregating else 1)
    rows = []
    for h in hardware:
        scale = spec.threads if h.per_thread else 1
        slow = h.repro_slowdown if spec.mode == "repro" else 1.0
        step_s = slow * (per_step / (h.flops_per_s * scale) + h.step_overhead_s)
        unit_s = steps * step_s
        agg_s = 2 * n_params * spec.shards / (h.flops_per_s * scale) if aggregating else 0.0
        compute_s = training_units * (unit_s + replay_steps * step_s) + spec.rounds * (1 + v) * agg_s
        wall_s = spec.rounds * (unit_s + spec.checkpoint_interval * step_s + agg_s)
        cloud = training_units * unit_s / 3600 * h.usd_per_hour * scale
        rows.append(HardwareEstimate(h.name, h.device_class == spec.hardware.device_class, unit_s, compute_s,
                                     wall_s, cloud))
    units = unit_count(spec.rounds, spec.shards)
    return Estimate(
        params=n_params, flops_per_step=per_step, steps_per_unit=steps, units=units, training_units=training_units,
        training_flops=training, verification_flops=verification, aggregation_flops=aggregation,
        escrow=escrow_for(spec.rounds, spec.shards, max_price_per_unit, params),
        max_solver_pay=units * max_price_per_unit, max_validator_fees=units * v * params.validator_fee,
        max_price_per_unit=max_price_per_unit, protocol_wait_s=phases * params.challenge_window,
        hardware=tuple(rows), assumptions=tuple(hardware), token_usd=token_usd,
    )


def si(value: float, unit: str = "") -> str:
    """1.2e12 -> '1.20 T'."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.2f} {prefix}{unit}"
    return f"{value:.0f} {unit}".rstrip()


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def render(est: Estimate, spec: JobSpec) -> RenderableType:
    """Two rich tables: the job's figures, and time and cost per hardware class."""
    from rich.console import Group
    from rich.table import Table

    job = Table("", "", title="job", show_header=False, title_justify="left")
    job.add_row("model", f"{spec.model.family} {dict(spec.model.sizes)}: {est.params:,} parameters")
    job.add_row("work", f"{_n(spec.rounds, 'round')} x {_n(spec.shards, 'shard')} x {est.steps_per_unit} steps of "
                        f"{spec.batch_size} examples = {_n(est.units, 'unit')} ({est.training_units} training)")
    job.add_row("FLOPs", f"{si(est.training_flops)} training + {si(est.verification_flops)} verification"
                         f" + {si(est.aggregation_flops)} aggregation = {si(est.total_flops)}"
                         f" ({est.verification_overhead:.1%} overhead)")
    usd = "" if est.token_usd is None else f" (~${est.escrow / E18 * est.token_usd:,.2f})"
    job.add_row("escrow", f"{format_tokens(est.escrow)} tokens{usd}: at most {format_tokens(est.max_solver_pay)} "
                          f"to solvers ({format_tokens(est.max_price_per_unit)} per unit) + "
                          f"{format_tokens(est.max_validator_fees)} validator fees; the unspent rest comes back")
    job.add_row("protocol", f"at least {duration(est.protocol_wait_s)} of challenge windows on top of compute")
    hw = Table("hardware", "eligible", "one unit", "wall (parallel)", "compute (all)", "cloud $ (training)",
               title="time and on-demand cost per hardware class", title_justify="left")
    for h in est.hardware:
        hw.add_row(h.name, "yes" if h.eligible else "no", duration(h.unit_s), duration(h.wall_s),
                   duration(h.compute_s), "< $0.01" if h.cloud_usd < 0.01 else f"${h.cloud_usd:,.2f}")
    note = ("throughputs and prices are assumptions (on-demand list prices, dated below); "
            "override them with --hardware FILE")
    return Group(job, hw, note)
