"""The on-demand cloud prices the estimate compares with, dated, and a user's override from a JSON file.

The built-in prices are the `usd_per_hour` of `gensyn_py/requester/estimate.py`'s hardware table, as assumed on
`PRICES_AS_OF` (list prices, not fetched from any provider). A user with fresher or own prices gives a file:

    {"date": "2026-12-01", "source": "my provider's price page", "usd_per_hour": {"h100": 2.2, "cpu": 0.04}}

`date` (YYYY-MM-DD) and `usd_per_hour` are required, `source` is optional; each price is a positive number per
hour (per vCPU-hour for a per-thread class such as "cpu") for a class of the hardware table. A bad file is a
`ConfigError` naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from gensyn_py.errors import ConfigError
from gensyn_py.requester.estimate import HARDWARE, HardwareClass

PRICES_AS_OF = "2026-11-01"


@dataclass(frozen=True)
class CloudPrices:
    date: str  # YYYY-MM-DD the prices were true on
    source: str
    usd_per_hour: dict[str, float]

    def apply(self, table: tuple[HardwareClass, ...]) -> tuple[HardwareClass, ...]:
        """`table` with these prices; a class the table lacks is refused, naming it."""
        names = {h.name for h in table}
        unknown = sorted(set(self.usd_per_hour) - names)
        if unknown:
            raise ConfigError(f"cloud prices ({self.source}): usd_per_hour.{unknown[0]}: no such hardware class "
                              f"(known: {sorted(names)})")
        return tuple(replace(h, usd_per_hour=self.usd_per_hour.get(h.name, h.usd_per_hour)) for h in table)

    def to_json(self) -> dict[str, Any]:
        return {"date": self.date, "source": self.source, "usdPerHour": dict(self.usd_per_hour)}


BUILT_IN = CloudPrices(PRICES_AS_OF, "built-in table (assumed on-demand list prices)",
                       {h.name: h.usd_per_hour for h in HARDWARE})


def load_cloud_prices(path: Path) -> CloudPrices:
    """A user's dated prices; `ConfigError` naming the bad field."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cloud prices {path} are unreadable: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"cloud prices {path}: must be an object with date and usd_per_hour")
    extra = sorted(set(raw) - {"date", "source", "usd_per_hour"})
    if extra:
        raise ConfigError(f"cloud prices {path}: {extra[0]}: unknown field (use date, source, usd_per_hour)")
    day = raw.get("date")
    if not isinstance(day, str) or not _is_day(day):
        raise ConfigError(f"cloud prices {path}: date: must be YYYY-MM-DD, got {day!r}")
    prices = raw.get("usd_per_hour")
    if not isinstance(prices, dict) or not prices:
        raise ConfigError(f"cloud prices {path}: usd_per_hour: must map hardware classes to prices per hour")
    for name, value in prices.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(f"cloud prices {path}: usd_per_hour.{name}: must be a positive number, got {value!r}")
    source = raw.get("source", str(path))
    if not isinstance(source, str):
        raise ConfigError(f"cloud prices {path}: source: must be a string")
    return CloudPrices(day, source, {str(k): float(v) for k, v in prices.items()})


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10
