from pathlib import Path

import pytest

from gensyn_py.devnet.compiler import compile_detailed
from gensyn_py.errors import CompileError

GOOD = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
contract Coin is ERC20 { constructor() ERC20("c", "c") {} }
"""


def test_compile_caches_until_a_source_changes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "Coin.sol").write_text(GOOD)
    first = compile_detailed(src, tmp_path / "build")
    assert not first.cached
    assert first.artifacts["Coin"]["bytecode"].startswith("0x60")
    assert compile_detailed(src, tmp_path / "build").cached
    (src / "Coin.sol").write_text(GOOD + "\n// changed\n")
    assert not compile_detailed(src, tmp_path / "build").cached


def test_compile_error_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    bad = "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.24;\ncontract B { uint x = ; }\n"
    (src / "Bad.sol").write_text(bad)
    with pytest.raises(CompileError, match=r"Bad\.sol:3:"):
        compile_detailed(src, tmp_path / "build")


def test_compile_warnings_are_reported(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "W.sol").write_text(
        "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.24;\n"
        "contract W { function f(uint a) external pure returns (uint) { uint unused; return a; } }\n"
    )
    result = compile_detailed(src, tmp_path / "build")
    assert any("Unused local variable" in w for w in result.warnings)


GUARDED = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
contract G is ReentrancyGuardTransient { uint256 public n; function f() external nonReentrant { ++n; } }
"""


def test_shanghai_build_swaps_the_transient_guard_for_the_storage_one(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "G.sol").write_text(GUARDED)
    cancun = compile_detailed(src, tmp_path / "cancun").artifacts["G"]
    shanghai = compile_detailed(src, tmp_path / "shanghai", evm_version="shanghai").artifacts["G"]
    assert cancun["sourceName"] == shanghai["sourceName"]
    assert cancun["deployedBytecode"] != shanghai["deployedBytecode"]
    errors = {e["name"] for a in (cancun, shanghai) for e in a["abi"] if e["type"] == "error"}
    assert errors == {"ReentrancyGuardReentrantCall"}
    with pytest.raises(CompileError, match="unsupported evmVersion"):
        compile_detailed(src, tmp_path / "x", evm_version="prague")
