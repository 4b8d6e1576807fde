"""What an event is about: the jobs, units, disputes and nodes its arguments name."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from eth_utils import is_address

ZERO = "0x" + "00" * 20
ID_KINDS = {"jobId": "job", "unitId": "unit", "disputeId": "dispute"}


def jsonable(value: Any) -> Any:
    """Decoded ABI values as JSON: bytes as 0x-hex, structs as objects, addresses as they are."""
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(args: Mapping[str, Any]) -> str:
    return json.dumps(jsonable(args), separators=(",", ":"))


def _addresses(value: Any) -> Iterator[str]:
    if isinstance(value, str) and is_address(value) and len(value) == 42:
        if value.lower() != ZERO:
            yield value.lower()
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _addresses(v)


def refs_of(args: Mapping[str, Any], exclude: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(kind, ref) pairs: ids by argument name, accounts by every address-valued argument.

    `exclude` holds lowercase addresses that are no account of anyone (the protocol's own contracts).
    """
    out: list[tuple[str, str]] = []
    for name, value in args.items():
        if name in ID_KINDS:
            out.append((ID_KINDS[name], str(int(value))))
        else:
            out.extend(("node", a) for a in _addresses(value) if a not in exclude)
    return sorted(set(out))
