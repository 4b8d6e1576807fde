"""The two verification modes of a job side by side: what `repro` costs over `exact`, and who can replay each.

`repro` (the default) runs the project's deterministic kernels: bit-exact on any machine, so any validator
of the device class can check a unit, whatever its GPU, driver or CPU. `exact` runs stock torch kernels,
`repro_slowdown` times faster (see `estimate`), but bit-exact only within one replay class
(`gensyn_py.node.replay_class`): its units are solved, validated and judged inside the solver's class only,
so a network of mixed hardware has fewer eligible validators for it, and a class with none cannot take it.
The token price is the same for both (the offer's), so the difference is time and the cloud equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gensyn_py.requester.estimate import HARDWARE, Estimate, HardwareClass, estimate
from gensyn_py.types import PoolParams

if TYPE_CHECKING:
    from rich.console import RenderableType

    from gensyn_py.train.spec import JobSpec

MODES = ("repro", "exact")
REPLAYED_BY = {"repro": "any validator of the device class", "exact": "validators of the solver's replay class"}


@dataclass(frozen=True)
class ModeCost:
    """One mode's figures on the fastest eligible hardware class."""

    mode: str
    hardware: str  # the fastest eligible hardware class ("" when none is eligible)
    unit_s: float
    wall_s: float
    compute_s: float
    cloud_usd: float
    replayed_by: str

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "hardware": self.hardware, "unitS": self.unit_s, "wallS": self.wall_s,
                "computeS": self.compute_s, "cloudUsd": self.cloud_usd, "replayedBy": self.replayed_by}


def compare(spec: JobSpec, max_price_per_unit: int, params: PoolParams,
            hardware: tuple[HardwareClass, ...] = HARDWARE) -> tuple[ModeCost, ...]:
    """Both modes' cost for `spec`, `repro` first (the spec's own mode is one of them)."""
    return tuple(_cost(m, estimate(spec.model_copy(update={"mode": m}), max_price_per_unit, params, hardware))
                 for m in MODES)


def _cost(mode: str, est: Estimate) -> ModeCost:
    eligible = [h for h in est.hardware if h.eligible]
    if not eligible:
        return ModeCost(mode, "", 0.0, 0.0, 0.0, 0.0, REPLAYED_BY[mode])
    best = min(eligible, key=lambda h: h.wall_s)
    return ModeCost(mode, best.name, best.unit_s, best.wall_s, best.compute_s, best.cloud_usd, REPLAYED_BY[mode])


def render(costs: tuple[ModeCost, ...], chosen: str) -> RenderableType:
    """A rich table of the modes (the spec's own marked with *), then who replays each."""
    from rich.console import Group
    from rich.table import Table

    from gensyn_py.requester.estimate import duration

    t = Table("mode", "hardware", "one unit", "wall", "compute", "cloud $",
              title="verification modes (same tokens: the offer's price)", title_justify="left")
    for c in costs:
        cloud = "< $0.01" if c.cloud_usd < 0.01 else f"${c.cloud_usd:,.2f}"
        t.add_row(f"{c.mode} *" if c.mode == chosen else c.mode, c.hardware or "none", duration(c.unit_s),
                  duration(c.wall_s), duration(c.compute_s), cloud)
    notes = [f"{c.mode}: replayed by {c.replayed_by}" for c in costs]
    return Group(t, f"* this spec's mode; {'; '.join(notes)}")
