"""The ABIs shipped in `gensyn_py/chain/abi/` match a fresh compile; loading a deployment needs no compiler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gensyn_py.chain.abi import ABI_DIR, ERRORS, PROTOCOL_CONTRACTS
from gensyn_py.devnet.abi_export import export, exported, stale

EXPORT = "python -m gensyn_py.devnet.abi_export"


def test_shipped_abis_match_a_fresh_compile(artifacts: dict[str, dict[str, Any]]) -> None:
    assert stale(artifacts) == [], f"the shipped ABIs in {ABI_DIR} are stale: run `{EXPORT}` and commit them"


def test_export_writes_one_file_per_contract_and_the_errors_and_rewrites_only_what_changed(
    artifacts: dict[str, dict[str, Any]], tmp_path: Path,
) -> None:
    names = {f"{n}.json" for n in PROTOCOL_CONTRACTS} | {f"{ERRORS}.json"}
    assert {p.name for p in export(artifacts, tmp_path)} == names
    assert stale(artifacts, tmp_path) == []
    assert json.loads((tmp_path / "TaskPool.json").read_text()) == artifacts["TaskPool"]["abi"]
    (tmp_path / "TaskPool.json").write_text("[]\n")
    assert stale(artifacts, tmp_path) == ["TaskPool.json"]
    assert [p.name for p in export(artifacts, tmp_path)] == ["TaskPool.json"]


def test_errors_file_names_every_custom_error_of_every_compiled_contract(artifacts: dict[str, dict[str, Any]]) -> None:
    shipped = {e["name"] for e in json.loads(exported(artifacts)[f"{ERRORS}.json"])}
    declared = {e["name"] for a in artifacts.values() for e in a["abi"] if e.get("type") == "error"}
    assert shipped == declared
    assert {"ERC20InsufficientBalance", "SafeERC20FailedOperation"} <= shipped  # callees' errors too


LOAD_WITHOUT_TOOLCHAIN = """
import json, sys
from web3 import Web3
from gensyn_py.chain.abi import load_abi
from gensyn_py.chain.contracts import ProtocolContracts
names = ["GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee"]
deployment = {"chainId": 31337, "contracts": {n: "0x" + f"{i + 1:040x}" for i, n in enumerate(names)}}
protocol = ProtocolContracts(Web3(), deployment)
assert protocol.pool().address == deployment["contracts"]["TaskPool"]
known = {spec.name for spec in protocol.decoder.errors.values()}
assert {e["name"] for e in load_abi("errors")} <= known
print(json.dumps(sorted(m for m in sys.modules if m.startswith("gensyn_py.devnet") or m == "solcx")))
"""


def test_a_deployment_loads_from_the_shipped_abis_without_solc_or_node(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "HOME": str(tmp_path)}  # no node, no solc, no ~/.solcx
    proc = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_TOOLCHAIN], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []  # the compiler driver was never imported
