"""Library linking: TaskPool's cold paths live in linked libraries (`Units`, `Disputes`, `DataAvailability`,
`Phases`, which the other three link too), whose addresses
`gensyn_py.devnet.linking` writes into TaskPool's bytecode where solc's linkReferences say."""

from __future__ import annotations

from typing import Any

import pytest

from gensyn_py.devnet.linking import PLACEHOLDER, deploy_order, libraries_of, link
from gensyn_py.errors import ConfigError
from tests.contracts.helpers import Protocol

UNITS, DISPUTES, AVAIL, PHASES = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "33" * 20, "0x" + "44" * 20
# TaskPool's runtime code must leave room under EIP-170's 24,576 bytes for the features still to come. Raised from
# 18,000 for issue 11's entry points (sealed challenges, data-availability reports and answers, partial commits),
# each a thin call into a linked library; 3.5 kB stay free for the dispute game.
TASKPOOL_RUNTIME_BUDGET = 21_000


def _spots(artifact: dict[str, Any]) -> int:
    return sum(len(spots) for libs in artifact["linkReferences"].values() for spots in libs.values())


def test_taskpool_is_compiled_with_placeholders_for_its_libraries(artifacts: dict[str, dict[str, Any]]) -> None:
    pool = artifacts["TaskPool"]
    assert libraries_of(pool) == ["DataAvailability", "Disputes", "Phases", "Units"]
    for lib in ("Units", "Disputes", "DataAvailability"):
        assert libraries_of(artifacts[lib]) == ["Phases"]
    assert deploy_order(artifacts, "TaskPool")[0] == "Phases"
    assert len(PLACEHOLDER.findall(pool["bytecode"])) == _spots(pool) > 0
    assert libraries_of(artifacts["NodeRegistry"]) == []


def test_link_writes_each_address_at_each_placeholder(artifacts: dict[str, dict[str, Any]]) -> None:
    pool = artifacts["TaskPool"]
    linked = link(pool, {"Units": UNITS, "Disputes": DISPUTES, "DataAvailability": AVAIL, "Phases": PHASES})
    assert len(linked) == len(pool["bytecode"])
    assert not PLACEHOLDER.search(linked)
    found = sum(linked.count(a[2:]) for a in (UNITS, DISPUTES, AVAIL, PHASES))
    assert found == _spots(pool)
    # fully qualified names work too
    by_path = {f"{src}:{lib}": UNITS for src, libs in pool["linkReferences"].items() for lib in libs}
    assert not PLACEHOLDER.search(link(pool, by_path))


def test_link_refuses_a_missing_or_malformed_address(artifacts: dict[str, dict[str, Any]]) -> None:
    pool = artifacts["TaskPool"]
    with pytest.raises(ConfigError, match="Disputes"):
        link(pool, {"Units": UNITS, "DataAvailability": AVAIL, "Phases": PHASES})
    with pytest.raises(ConfigError, match="not an address"):
        link(pool, {"Units": UNITS, "Disputes": "0x1234", "DataAvailability": AVAIL, "Phases": PHASES})


def test_link_refuses_references_that_miss_the_placeholders() -> None:
    placeholder = "__$" + "ab" * 17 + "$__"
    refs = {"L.sol": {"L": [{"start": 1, "length": 20}]}}
    artifact = {"bytecode": "0x6000" + placeholder + "00", "linkReferences": refs}
    with pytest.raises(ConfigError, match="no placeholder at byte 1"):
        link(artifact, {"L": UNITS})
    unlisted = {"bytecode": "0x6000" + placeholder, "linkReferences": {}}
    with pytest.raises(ConfigError, match="did not list"):
        link(unlisted, {})
    assert link({**artifact, "linkReferences": {"L.sol": {"L": [{"start": 2, "length": 20}]}}}, {"L": UNITS}) == (
        "0x6000" + UNITS[2:] + "00"
    )


def test_deploy_order_puts_a_library_after_the_libraries_it_links() -> None:
    def needs(*libs: str) -> dict[str, Any]:
        return {"bytecode": "0x", "linkReferences": {f"{lib}.sol": {lib: []} for lib in libs}}

    artifacts = {"App": needs("A", "C"), "A": needs("B"), "B": needs("C"), "C": needs()}
    assert deploy_order(artifacts, "App") == ["C", "B", "A"]
    with pytest.raises(ConfigError, match="cycle"):
        deploy_order({"App": needs("A"), "A": needs("B"), "B": needs("A")}, "App")
    with pytest.raises(ConfigError, match="no compiled artifact"):
        deploy_order({"App": needs("Z")}, "App")


def test_deployed_pool_runs_the_deployed_libraries_within_its_size_budget(proto: Protocol) -> None:
    libraries = proto.info["libraries"]
    assert set(libraries) == {"Units", "Disputes", "DataAvailability", "Phases"}
    code = bytes(proto.w3.eth.get_code(proto.pool.address)).hex()
    for address in libraries.values():
        assert len(proto.w3.eth.get_code(address)) > 0
        assert address[2:].lower() in code
    assert not PLACEHOLDER.search(code)
    assert len(code) // 2 <= TASKPOOL_RUNTIME_BUDGET, f"TaskPool runtime code is {len(code) // 2:,} bytes"
