"""Token amounts: 18-decimal fixed point on-chain, decimal strings for people."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from gensyn_py.errors import ConfigError

DECIMALS = 18
E18 = 10**DECIMALS


def parse_tokens(text: str | int | float | Decimal, what: str = "amount") -> int:
    """`"12.5"` tokens -> 12.5 * 10**18 base units; ConfigError for negatives or over 18 decimals."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise ConfigError(f"{what} {text!r} is not a number of tokens") from None
    if not value.is_finite() or value < 0:
        raise ConfigError(f"{what} must be a non-negative number of tokens, got {text!r}")
    units = value * E18
    if units != units.to_integral_value():
        raise ConfigError(f"{what} {text!r} has more than {DECIMALS} decimals")
    return int(units)


def format_tokens(amount: int, places: int = 2) -> str:
    """Base units as a decimal token string: 12_500_000_000_000_000_000 -> '12.50'."""
    value = Decimal(amount) / E18
    return f"{value:,.{places}f}"
