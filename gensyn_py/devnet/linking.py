"""Link deployed library addresses into compiled bytecode.

A contract that calls a library's `external` functions is compiled with a placeholder where the
library's address goes: `__$<34 hex>$__` (40 characters, the size of an address), the hex being the
first 17 bytes of keccak256("<source path>:<LibraryName>"). solc's standard-JSON output lists every
placeholder in `evm.bytecode.linkReferences` as {source: {library: [{"start": byte, "length": 20}]}};
the compiler driver keeps it in each artifact as "linkReferences". Linking writes the address at each
of those offsets. Pure functions on strings: nothing here talks to a chain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gensyn_py.errors import ConfigError

PLACEHOLDER = re.compile(r"__\$[0-9a-fA-F]{34}\$__")

LinkReferences = Mapping[str, Mapping[str, list[Mapping[str, int]]]]


def libraries_of(artifact: Mapping[str, Any]) -> list[str]:
    """Names of the libraries `artifact`'s bytecode must be linked with, sorted."""
    refs: LinkReferences = artifact.get("linkReferences") or {}
    return sorted({name for libs in refs.values() for name in libs})


def link(artifact: Mapping[str, Any], addresses: Mapping[str, str]) -> str:
    """`artifact`'s creation bytecode ("0x...") with every library placeholder replaced.

    `addresses` maps a library's name ("Units") or fully qualified name ("contracts/libraries/Units.sol:Units")
    to its deployed address. Raises ConfigError if an address is missing or malformed, or if a placeholder
    is left that linkReferences did not list (bytecode and references from different compiles).
    """
    code = str(artifact["bytecode"])
    prefix = "0x" if code.startswith("0x") else ""
    hexcode = list(code[len(prefix) :])
    refs: LinkReferences = artifact.get("linkReferences") or {}
    for source, libs in refs.items():
        for name, spots in libs.items():
            address = addresses.get(f"{source}:{name}", addresses.get(name))
            if address is None:
                raise ConfigError(f"library {name} ({source}) has no address to link")
            body = address.lower().removeprefix("0x")
            if not re.fullmatch(r"[0-9a-f]{40}", body):
                raise ConfigError(f"library {name}: not an address: {address!r}")
            for spot in spots:
                start, length = 2 * int(spot["start"]), 2 * int(spot["length"])
                current = "".join(hexcode[start : start + length])
                if length != 40 or not PLACEHOLDER.fullmatch(current):
                    raise ConfigError(f"library {name}: no placeholder at byte {spot['start']} (got {current!r})")
                hexcode[start : start + length] = body
    linked = "".join(hexcode)
    if PLACEHOLDER.search(linked):
        raise ConfigError("bytecode still holds a library placeholder that linkReferences did not list")
    return prefix + linked


def deploy_order(artifacts: Mapping[str, Mapping[str, Any]], name: str) -> list[str]:
    """The libraries `name` needs, transitively, each after the libraries it needs itself."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(lib: str) -> None:
        if lib in order:
            return
        if lib in visiting:
            raise ConfigError(f"library link cycle through {lib}")
        if lib not in artifacts:
            raise ConfigError(f"no compiled artifact for library {lib}")
        visiting.add(lib)
        for dep in libraries_of(artifacts[lib]):
            visit(dep)
        visiting.discard(lib)
        order.append(lib)

    for lib in libraries_of(artifacts[name]):
        visit(lib)
    return order
