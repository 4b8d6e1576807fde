"""What pages add to the index: readable event lines, live reads from the chain, the final model."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from eth_utils import is_address
from markupsafe import Markup

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.explorer.charts import Series
from gensyn_py.explorer.games import REASONS, reason_name
from gensyn_py.explorer.queries import Event, JobView, NetworkSummary, UnitView, short, tokens, when
from gensyn_py.explorer.refs import ID_KINDS, page_of
from gensyn_py.node.operator import NodeStatus, device_name, node_status, role_names
from gensyn_py.requester.live_prices import JobNeeds, live_prices
from gensyn_py.requester.market import solver_offers
from gensyn_py.storage.base import ContentStore
from gensyn_py.types import Outcome

log = logging.getLogger(__name__)

AMOUNTS = frozenset({"amount", "price", "penalty", "solverPay", "validatorPay", "budget", "refund", "pot", "slashed",
                     "bonded", "locked", "weight", "yesWeight", "noWeight"})
TIMES = frozenset({"deadline", "commitDeadline", "revealDeadline", "release", "until", "answerBy", "challengeEnd"})
ANY_PRICE = 2**128 - 1
# The column a game page's timeline names each contract by.
CONTRACT_LABELS = {"SegmentGame": "segment game", "StepGame": "step game", "TaskPool": "pool",
                   "NodeRegistry": "registry", "DisputeCommittee": "committee"}

__all__ = ["describe", "device_name", "final_model", "game_of", "live_status", "loss_series", "node_rows",
           "price_rows", "role_names"]


def link(kind: str, ident: Any) -> Markup:
    """A link to the page of `kind` (`node`, or a kind of refs.py) `ident`."""
    href, label = (f"/node/{ident}", short(str(ident))) if kind == "node" else page_of(kind, ident)
    return Markup('<a href="{0}">{1}</a>').format(href, label)


def _value(name: str, value: Any, kinds: Mapping[str, str] = ID_KINDS) -> Markup:
    if isinstance(value, str) and is_address(value) and len(value) == 42:
        return link("node", value)
    if isinstance(value, list):
        return Markup(", ").join(_value(name, v, kinds) for v in value)
    if isinstance(value, dict):
        return Markup(" ").join(Markup("{0}={1}").format(k, _value(k, v, kinds)) for k, v in value.items())
    if name in kinds:
        return link(kinds[name], int(value))
    if name in AMOUNTS:
        return Markup("{0}").format(tokens(int(value)))
    if name in TIMES and isinstance(value, int):
        return Markup('<time title="{0}">{1}</time>').format(value, when(value))
    if name == "outcome" and isinstance(value, int) and value in {o.value for o in Outcome}:
        return Markup("{0}").format(Outcome(value).name.replace("_", " ").lower())
    if isinstance(value, bool):
        return Markup("yes" if value else "no")
    if isinstance(value, str) and value.startswith("0x") and len(value) == 66:
        return Markup('<code title="{0}">{1}</code>').format(value, value[:10] + "…")
    return Markup("{0}").format(value)


def game_of(contract: str) -> str:
    return CONTRACT_LABELS.get(contract, contract)


def describe(ev: Event) -> Markup:
    """`name: key=value ...` with every address, job, unit, dispute and step game a link (to the page of the
    dispute's resolver), a game's decision reason by name."""
    kinds = ev.kinds or ID_KINDS
    parts = [Markup('<span class="k">{0}</span> {1}').format(
                 k, reason_name(ev.contract, v) if k == "reason" and ev.contract in REASONS and isinstance(v, int)
                 else _value(k, v, kinds))
             for k, v in ev.args.items()]
    return Markup(" · ").join(parts)


def loss_series(job: JobView, units: list[UnitView] | None = None) -> list[Series]:
    """One line per unit, x the job-wide step (round × steps per unit + step)."""
    steps = int((job.spec or {}).get("steps_per_unit", 0))
    return [Series(f"unit {u.unit_id} ({u.label})", [(u.round * steps + s, v) for s, v in u.losses])
            for u in (units if units is not None else job.units) if u.losses]


def live_status(protocol: ProtocolContracts, address: str) -> tuple[NodeStatus | None, str | None]:
    try:
        return node_status(protocol, address), None
    except Exception as exc:  # a dead RPC must not take the page down: it says so instead
        log.info("explorer: node status of %s: %s", address, exc)
        return None, f"the chain did not answer: {exc}"


def _replay_label(replay_class: bytes) -> str:
    return "repro only" if not any(replay_class) else "0x" + replay_class.hex()[:8] + "…"


def node_rows(protocol: ProtocolContracts, summary: NetworkSummary) -> list[dict[str, Any]]:
    """Every registered node with its roles, class, stake, price and reputation, read live."""
    registry = protocol.registry()
    rows = []
    for address, _ in summary.nodes:
        try:
            hw = registry.hardware_of(address)
            standing = registry.standing(address)
            rep = registry.reputation_of(address)
            replay = _replay_label(registry.replay_class_of(address))
            rows.append({"address": address, "roles": ", ".join(role_names(registry.roles_of(address))),
                         "device": device_name(hw.device_class), "replay": replay,
                         "bonded": standing.bonded, "price": hw.price_per_unit, "jailed": standing.jailed_until > 0,
                         "reputation": f"{rep.completed} done · {rep.missed} missed · {rep.frauds} frauds"})
        except Exception as exc:  # as above: the page shows what it has
            rows.append({"address": address, "error": str(exc)})
    return rows


def price_rows(protocol: ProtocolContracts) -> list[dict[str, Any]] | str:
    """Declared solver prices per device class (min, median, the price that would win a claim now)."""
    try:
        _, offers = solver_offers(protocol)
    except Exception as exc:
        return f"the chain did not answer: {exc}"
    return [{"device": c.device, "solvers": c.solvers, "min": c.min_price, "median": c.median_price,
             "winning": c.winning_price, "winner": c.winner}
            for c in live_prices(offers, JobNeeds(max_price=ANY_PRICE)) if c.solvers]


def final_model(protocol: ProtocolContracts, store: ContentStore | None, job_id: int) -> tuple[bytes | None, str]:
    """The completed job's model bytes, checked against the on-chain hash; or why there are none."""
    from gensyn_py.requester.download import fetch_final_model
    from gensyn_py.requester.session import Requester

    if store is None:
        return None, "this explorer has no content store configured"
    try:
        _, data = fetch_final_model(Requester(protocol, store), job_id)
    except Exception as exc:
        return None, str(exc)
    return data, ""
