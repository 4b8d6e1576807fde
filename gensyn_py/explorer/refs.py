"""What an event is about: the jobs, units, disputes, step games and nodes its arguments name.

Two resolvers number their disputes from 1 (`IDisputeResolver`): the committee (`DisputeCommittee`) and the
segment game (`SegmentGame`), which hands one step to the step game (`StepGame`, its own ids). A dispute id is
therefore indexed under its resolver's kind: `dispute` for the committee, `game` for the segment game, and a
step game's id under `step`. The pool's `UnitDisputed` names a dispute without its resolver; the indexer takes
it from the resolver's `DisputeOpened` of the same unit in the same transaction (the pool opens the dispute and
emits `UnitDisputed` in one call).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from eth_utils import is_address

ZERO = "0x" + "00" * 20
ID_KINDS = {"jobId": "job", "unitId": "unit", "disputeId": "dispute", "gameId": "step"}
# The kind a dispute id has, by the contract that resolves it.
RESOLVER_KINDS = {"DisputeCommittee": "dispute", "SegmentGame": "game"}
# Each kind's page: (path, label). The committee's dispute pages keep their /dispute/N address.
PAGES = {"job": ("job", "job"), "unit": ("unit", "unit"), "dispute": ("dispute", "dispute"),
         "game": ("game", "game dispute"), "step": ("step", "step game")}


def id_kinds(contract: str, resolver: str | None = None) -> dict[str, str]:
    """{id argument: kind} for the events of `contract`; `resolver`: the contract holding the dispute an event
    of another contract (the pool) names, the committee when it is not known."""
    own = RESOLVER_KINDS.get(contract)
    return {**ID_KINDS, "disputeId": own or RESOLVER_KINDS.get(resolver or "", "dispute")}


def page_of(kind: str, ident: int | str) -> tuple[str, str]:
    """(href, label) of the page of `kind` `ident`."""
    path, label = PAGES[kind]
    return f"/{path}/{ident}", f"{label} {ident}"


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


def refs_of(args: Mapping[str, Any], exclude: frozenset[str] = frozenset(),
            kinds: Mapping[str, str] = ID_KINDS) -> list[tuple[str, str]]:
    """(kind, ref) pairs: ids by argument name (`kinds`: `id_kinds` of the emitting contract), accounts by every
    address-valued argument.

    `exclude` holds lowercase addresses that are no account of anyone (the protocol's own contracts).
    """
    out: list[tuple[str, str]] = []
    for name, value in args.items():
        if name in kinds:
            out.append((kinds[name], str(int(value))))
        else:
            out.extend(("node", a) for a in _addresses(value) if a not in exclude)
    return sorted(set(out))
