"""Compile `contracts/` with a pinned Solidity compiler, cached under `build/`.

A native solc of the pinned version is used through py-solc-x when one is
installed; otherwise the npm `solc` package (solcjs, WebAssembly) is driven by
a small node shim fed standard JSON. Both get the same standard-JSON input, so
the output is identical. Artifacts are rebuilt only when a source changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gensyn_py.errors import CompileError, ToolchainError

log = logging.getLogger(__name__)

SOLC_VERSION = "0.8.28"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).with_name("solcjs_shim.cjs")
EVM_VERSION = "cancun"
# EVM versions before cancun have no TSTORE/TLOAD: there OpenZeppelin's storage-slot
# ReentrancyGuard stands in for ReentrancyGuardTransient (same modifier, same error).
PRE_CANCUN = ("shanghai", "paris", "london", "berlin", "istanbul")
_TRANSIENT_GUARD = "ReentrancyGuardTransient"
_STORAGE_GUARD = "ReentrancyGuard"
SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    "evmVersion": EVM_VERSION,
    "remappings": ["@openzeppelin/=node_modules/@openzeppelin/"],
    "outputSelection": {
        "*": {"*": ["abi", "evm.bytecode.object", "evm.bytecode.linkReferences", "evm.deployedBytecode.object"]}
    },
}
_IMPORT_RE = re.compile(r'^\s*import\s+(?:[^"\']*from\s+)?["\']([^"\']+)["\']', re.MULTILINE)


@dataclass(frozen=True)
class CompileResult:
    artifacts: dict[str, dict[str, Any]]
    warnings: list[str]
    compiler: str
    cached: bool


def _source_key(path: Path, root: Path) -> str:
    """Sources under the project root are named relative to it; others keep their absolute path."""
    resolved = path.resolve()
    return (
        resolved.relative_to(root.resolve()).as_posix()
        if resolved.is_relative_to(root.resolve())
        else resolved.as_posix()
    )


def _sources(sources_dir: Path, root: Path) -> dict[str, str]:
    files = sorted(sources_dir.rglob("*.sol"))
    if not files:
        raise CompileError(f"no Solidity sources under {sources_dir}")
    return {_source_key(f, root): f.read_text() for f in files}


def _for_evm(sources: dict[str, str], evm_version: str) -> dict[str, str]:
    """Sources as compiled for `evm_version`: before cancun the transient guard becomes the storage one."""
    if evm_version == EVM_VERSION:
        return sources
    if evm_version not in PRE_CANCUN:
        raise CompileError(f"unsupported evmVersion {evm_version!r}: {EVM_VERSION} or one of {', '.join(PRE_CANCUN)}")
    return {k: v.replace(_TRANSIENT_GUARD, _STORAGE_GUARD) for k, v in sources.items()}


def _disk_path(key: str, root: Path) -> Path:
    if key.startswith("@openzeppelin/"):
        return root / "node_modules" / key
    return Path(key) if key.startswith("/") else root / key


def _resolve_imports(sources: dict[str, str], root: Path) -> dict[str, str]:
    """Inline every imported file so both compilers see the exact same bytes."""
    todo = list(sources)
    out = dict(sources)
    while todo:
        name = todo.pop()
        for imp in _IMPORT_RE.findall(out[name]):
            key = os.path.normpath(os.path.join(os.path.dirname(name), imp)) if imp.startswith(".") else imp
            if key in out:
                continue
            disk = _disk_path(key, root)
            if not disk.exists():
                raise CompileError(f"{name}: import not found: {imp}")
            out[key] = disk.read_text()
            todo.append(key)
    return out


def _native_solc() -> Path | None:
    """A native solc of the pinned version that py-solc-x already holds. Never installs or copies one:
    py-solc-x's `import_installed_solc()` would copy any `solc` on PATH into `~/.solcx`."""
    folder = os.environ.get("SOLCX_BINARY_PATH") or str(Path.home() / ".solcx")
    if not Path(folder).is_dir():
        return None  # asking py-solc-x would create the folder
    try:
        import solcx

        for version in solcx.get_installed_solc_versions():
            path = Path(solcx.get_executable(version))  # type: ignore[attr-defined]
            # A script wrapper over solcjs (as made for brownie) is not a native compiler.
            if str(version) == SOLC_VERSION and path.read_bytes()[:4] == b"\x7fELF":
                return path
    except Exception as exc:  # py-solc-x raises many kinds when nothing is installed
        log.debug("no native solc: %s", exc)
    return None


def _run_native(solc: Path, std_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    proc = subprocess.run(
        [str(solc), "--standard-json"], input=json.dumps(std_input), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 and not proc.stdout:
        raise ToolchainError(f"solc failed: {proc.stderr.strip()}")
    return f"native solc {SOLC_VERSION}", json.loads(proc.stdout)


def _run_solcjs(std_input: dict[str, Any], root: Path) -> tuple[str, dict[str, Any]]:
    node = shutil.which("node")
    if node is None:
        raise ToolchainError("node is not on PATH; it is needed to run solcjs (npm package `solc`)")
    if not (root / "node_modules" / "solc").exists():
        raise ToolchainError("node_modules/solc is missing: run `npm ci` (make setup does)")
    proc = subprocess.run(
        [node, str(SHIM), str(root), str(root / "node_modules")],
        input=json.dumps(std_input),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ToolchainError(f"solcjs shim failed: {proc.stderr.strip()[-2000:]}")
    payload = json.loads(proc.stdout)
    version = str(payload["version"])
    if not version.startswith(SOLC_VERSION):
        raise ToolchainError(f"solcjs is {version}, expected {SOLC_VERSION}; run `npm ci`")
    return f"solcjs {version}", payload["output"]


def compile_contracts(
    sources_dir: Path | None = None,
    build_dir: Path | None = None,
    root: Path = PROJECT_ROOT,
    force: bool = False,
    evm_version: str = EVM_VERSION,
) -> dict[str, dict[str, Any]]:
    """Compile every .sol under `sources_dir` (default `contracts/`); return {name: artifact}."""
    return compile_detailed(sources_dir, build_dir, root, force, evm_version).artifacts


def compile_detailed(
    sources_dir: Path | None = None,
    build_dir: Path | None = None,
    root: Path = PROJECT_ROOT,
    force: bool = False,
    evm_version: str = EVM_VERSION,
) -> CompileResult:
    sources_dir = sources_dir or root / "contracts"
    if build_dir is None:
        tag = hashlib.sha256(str(sources_dir.resolve()).encode()).hexdigest()[:12]
        build_dir = root / "build" / (tag if evm_version == EVM_VERSION else f"{tag}-{evm_version}")
    sources = _resolve_imports(_for_evm(_sources(sources_dir, root), evm_version), root)
    std_input = {
        "language": "Solidity",
        "sources": {k: {"content": v} for k, v in sorted(sources.items())},
        "settings": {**SETTINGS, "evmVersion": evm_version},
    }
    digest = hashlib.sha256(json.dumps([SOLC_VERSION, std_input], sort_keys=True).encode()).hexdigest()
    cache = build_dir / "artifacts.json"
    if not force and cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("inputHash") == digest:
            return CompileResult(cached["artifacts"], cached["warnings"], cached["compiler"], cached=True)

    native = _native_solc()
    compiler, output = _run_native(native, std_input) if native else _run_solcjs(std_input, root)
    messages = output.get("errors", [])
    errors = [m["formattedMessage"].strip() for m in messages if m.get("severity") == "error"]
    warnings = [m["formattedMessage"].strip() for m in messages if m.get("severity") != "error"]
    if errors:
        raise CompileError("Solidity compilation failed:\n" + "\n\n".join(errors))
    for warning in warnings:
        log.warning("%s", warning)

    artifacts: dict[str, dict[str, Any]] = {}
    local = {k for k in sources if not k.startswith("@")}
    for source_name, contracts in output.get("contracts", {}).items():
        for name, data in contracts.items():
            if source_name not in local and name in artifacts:
                continue
            artifacts[name] = {
                "abi": data["abi"],
                "bytecode": "0x" + data["evm"]["bytecode"]["object"],
                "deployedBytecode": "0x" + data["evm"]["deployedBytecode"]["object"],
                # where linked libraries' addresses go (gensyn_py.devnet.linking); {} for most contracts
                "linkReferences": data["evm"]["bytecode"].get("linkReferences", {}),
                "sourceName": source_name,
                "sourceHash": hashlib.sha256(sources[source_name].encode()).hexdigest(),
            }
    build_dir.mkdir(parents=True, exist_ok=True)
    payload = {"inputHash": digest, "compiler": compiler, "warnings": warnings, "artifacts": artifacts}
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")  # parallel test workers may compile at once
    tmp.write_text(json.dumps(payload))
    tmp.replace(cache)
    return CompileResult(artifacts, warnings, compiler, cached=False)
