"""Per device class, what solvers ask on-chain and the price that would win the claim auction for a job now.

The figures of one class: how many registered, unjailed solvers declare it, the lowest and the median price
they ask (over all of them), and, among those that could take this job (memory and throughput at least the
job's, price at most its maximum: `TaskPool._checkClaimer`), the one with the highest claim score
(`gensyn_py/chain/scoring.py`): the required score falls from 10000 as the claim window runs, so that solver
is the first allowed to claim and its price is what a unit costs. Equal scores are a race; the cheapest of them
is shown and `tied` counts them. Pure: the offers come from `gensyn_py/requester/market.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gensyn_py.chain.scoring import of_node
from gensyn_py.requester.market import SolverOffer
from gensyn_py.types import DEVICE_CLASSES


@dataclass(frozen=True)
class JobNeeds:
    """What a unit of the job asks of a solver, as `claim` checks it."""

    max_price: int
    min_memory_mb: int = 0
    min_throughput: int = 0

    def fits(self, offer: SolverOffer, device_class: int) -> bool:
        hw = offer.hardware
        return (hw.device_class == device_class and hw.memory_mb >= self.min_memory_mb
                and hw.throughput >= self.min_throughput and hw.price_per_unit <= self.max_price)


@dataclass(frozen=True)
class ClassPrices:
    device: str
    device_class: int
    solvers: int  # registered, unjailed solvers declaring this class
    min_price: int | None  # None without solvers
    median_price: int | None  # the middle price; the floor of the mean of the two middle ones for an even count
    eligible: int  # of them, those that could claim this job's units
    winning_price: int | None  # what the highest-scoring eligible solver asks; None when none is eligible
    winner: str | None
    winning_score: int | None  # bps
    tied: int = 0  # eligible solvers with the winning score (a race among them)

    def to_json(self) -> dict[str, Any]:
        """Token amounts as decimal strings of base units, as the rest of the estimate."""
        def tokens(v: int | None) -> str | None:
            return None if v is None else str(v)
        return {"device": self.device, "deviceClass": self.device_class, "solvers": self.solvers,
                "minPrice": tokens(self.min_price), "medianPrice": tokens(self.median_price),
                "eligible": self.eligible, "winningPrice": tokens(self.winning_price), "winner": self.winner,
                "winningScore": self.winning_score, "tied": self.tied}


def median(values: list[int]) -> int | None:
    """The middle value; for an even count the floor of the mean of the two middle ones (prices stay integers)."""
    if not values:
        return None
    ordered, mid = sorted(values), len(values) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) // 2


def class_prices(offers: list[SolverOffer], device: str, needs: JobNeeds) -> ClassPrices:
    """The figures of `device` ("cpu", "cuda") for a job with `needs`."""
    device_class = DEVICE_CLASSES[device]
    prices = [o.hardware.price_per_unit for o in offers if o.hardware.device_class == device_class]
    eligible = [o for o in offers if needs.fits(o, device_class)]
    scored = [(of_node(o.reputation, o.hardware, needs.max_price, needs.min_throughput), o) for o in eligible]
    best = max((s for s, _ in scored), default=None)
    top = sorted((o for s, o in scored if s == best), key=lambda o: (o.hardware.price_per_unit, o.address))
    winner = top[0] if top else None
    return ClassPrices(
        device=device, device_class=device_class, solvers=len(prices), min_price=min(prices, default=None),
        median_price=median(prices), eligible=len(eligible),
        winning_price=None if winner is None else winner.hardware.price_per_unit,
        winner=None if winner is None else winner.address, winning_score=best, tied=len(top),
    )


def live_prices(offers: list[SolverOffer], needs: JobNeeds) -> list[ClassPrices]:
    """`class_prices` for every device class the protocol knows, in its order."""
    return [class_prices(offers, device, needs) for device in DEVICE_CLASSES]
