"""The live-price part of `gensyn job estimate`: read the solvers' prices from the chain, or say why not.

Reading needs an RPC node and a deployment; without either (or with `--offline`) the estimate still prints,
with the reason the on-chain prices were not read. Next to each device class's winning price it shows the
cheapest on-demand cloud machine of that class for the training alone, from the dated cloud table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import GensynError
from gensyn_py.requester.amounts import E18, format_tokens
from gensyn_py.requester.cloud import CloudPrices
from gensyn_py.requester.live_prices import ClassPrices, JobNeeds, live_prices

if TYPE_CHECKING:
    from rich.console import RenderableType

    from gensyn_py.config import Settings
    from gensyn_py.requester.estimate import Estimate


@dataclass(frozen=True)
class MarketReport:
    classes: tuple[ClassPrices, ...]
    block: int | None  # the block the prices were read at; None when they were not read
    reason: str = ""  # why they were not read

    @property
    def read(self) -> bool:
        return self.block is not None

    def to_json(self) -> dict[str, Any]:
        if not self.read:
            return {"read": False, "reason": self.reason}
        return {"read": True, "block": self.block, "classes": [c.to_json() for c in self.classes]}


def read_market(settings: Settings, deployment: Path | None, needs: JobNeeds, offline: bool = False,
                timeout: float = 3.0) -> MarketReport:
    """The solvers' prices from the chain `settings` names (its deployment, or the file `deployment`)."""
    if offline:
        return MarketReport((), None, "on-chain prices were not read (--offline)")
    from gensyn_py.chain.client import connect
    from gensyn_py.chain.contracts import ProtocolContracts, read_deployment
    from gensyn_py.requester.market import solver_offers

    try:
        w3 = connect(settings.rpc_url, settings.chain_id, timeout=timeout, attempts=1)
        protocol = (ProtocolContracts(w3, read_deployment(deployment)) if deployment is not None
                    else ProtocolContracts.load(w3, settings.deployments_dir))
        block, offers = solver_offers(protocol)
    except GensynError as exc:
        return MarketReport((), None, f"on-chain prices were not read: {exc}")
    return MarketReport(tuple(live_prices(offers, needs)), block)


def _cloud_for(est: Estimate, device: str) -> str:
    """The cheapest on-demand machine of `device` for the training alone."""
    rows = [(h.cloud_usd, h.name) for h, a in zip(est.hardware, est.assumptions, strict=True)
            if a.device_class == device]
    if not rows:
        return "-"
    usd, name = min(rows)
    return f"{'< $0.01' if usd < 0.01 else f'${usd:,.2f}'} ({name})"


def _tokens(value: int | None) -> str:
    return "-" if value is None else format_tokens(value)


def render_market(report: MarketReport, est: Estimate, cloud: CloudPrices, device: str) -> RenderableType:
    """One row per device class: solvers, min, median, the winning price and the job at it, the cloud cost."""
    from rich.console import Group
    from rich.table import Table

    note = f"cloud prices as of {cloud.date} ({cloud.source}); override with --cloud-prices FILE"
    if not report.read:
        return Group(report.reason, note)
    title = f"what solvers ask on-chain (block {report.block}), per unit in tokens"
    table = Table("device", "solvers", "min", "median", "eligible", "wins at", "job at it", "cloud $", title=title,
                  title_justify="left")
    for c in report.classes:
        pay = "-"
        if c.winning_price is not None:
            total = c.winning_price * est.units
            usd = "" if est.token_usd is None else f" (~${total / E18 * est.token_usd:,.2f})"
            pay = f"{format_tokens(total)}{usd}"
        win = _tokens(c.winning_price) + (f" ({c.tied} tied)" if c.tied > 1 else "")
        name = c.device + (" *" if c.device == device else "")
        table.add_row(name, str(c.solvers), _tokens(c.min_price), _tokens(c.median_price), str(c.eligible), win,
                      pay, _cloud_for(est, c.device))
    return Group(table, "* this spec's device class; wins at: the price of the solver with the highest claim score "
                        "(contracts/libraries/Scoring.sol) among those that fit the job and ask at most --max-price; "
                        "job at it: every unit at that price; cloud $: the training alone on the cheapest on-demand "
                        "machine of the class", note)
