"""Export the deployed contracts' ABIs from the compiled artifacts into the package (`gensyn_py/chain/abi/`).

    python -m gensyn_py.devnet.abi_export           # compile, write what changed
    python -m gensyn_py.devnet.abi_export --check   # exit 1 naming the stale files, write nothing

Run it after changing a contract's interface; `tests/unit/test_abi_export.py` fails while the shipped
files differ from a fresh compile. Besides one `<Name>.json` per contract of `PROTOCOL_CONTRACTS`,
`errors.json` collects every custom error of every compiled contract (libraries and OpenZeppelin's
included), so the error decoder names a revert from any callee.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gensyn_py.chain.abi import ABI_DIR, ERRORS, PROTOCOL_CONTRACTS, abi_path
from gensyn_py.devnet.compiler import compile_contracts
from gensyn_py.errors import ConfigError

Artifacts = Mapping[str, Mapping[str, Any]]


def _text(abi: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(abi), indent=2, sort_keys=True) + "\n"


def _signature(entry: Mapping[str, Any]) -> str:
    return json.dumps([entry["name"], entry.get("inputs", [])], sort_keys=True)


def exported(artifacts: Artifacts) -> dict[str, str]:
    """{file name: contents} of every shipped ABI file, from compiled `artifacts`."""
    missing = [n for n in PROTOCOL_CONTRACTS if n not in artifacts]
    if missing:
        raise ConfigError(f"no compiled artifact for {', '.join(missing)}")
    files = {f"{name}.json": _text(artifacts[name]["abi"]) for name in PROTOCOL_CONTRACTS}
    errors: dict[str, Mapping[str, Any]] = {}
    for artifact in artifacts.values():
        for entry in artifact["abi"]:
            if entry.get("type") == "error":
                errors.setdefault(_signature(entry), entry)
    files[f"{ERRORS}.json"] = _text([errors[k] for k in sorted(errors)])
    return files


def stale(artifacts: Artifacts, directory: Path = ABI_DIR) -> list[str]:
    """The shipped files that are missing or differ from what `artifacts` export."""
    out = []
    for name, text in exported(artifacts).items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            out.append(name)
    return out


def export(artifacts: Artifacts, directory: Path = ABI_DIR) -> list[Path]:
    """Write the files that changed; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in stale(artifacts, directory):
        path = directory / name
        path.write_text(exported(artifacts)[name])
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gensyn_py.devnet.abi_export", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    parser.add_argument("--out", type=Path, default=ABI_DIR, help=f"directory to write to (default {ABI_DIR})")
    args = parser.parse_args(argv)
    artifacts = compile_contracts()
    if args.check:
        names = stale(artifacts, args.out)
        for name in names:
            print(f"stale: {abi_path(name.removesuffix('.json'), args.out)}")
        return 1 if names else 0
    for path in export(artifacts, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
