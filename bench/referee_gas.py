"""Gas of the referee's arithmetic: each float32 primitive (contracts/libraries/Float32.sol) and each integer step
of the matmul/sum rule (contracts/libraries/ExactDot.sol), on anvil with the real compiled contracts.

Execution gas of the pure function itself, measured in-contract: `Float32Harness.gasOf` reads gasleft() around one
call per input; the same measurement of a no-op (the dispatch and the measurement's own cost) is subtracted.
Inputs: a random sample per op, half uniform bit patterns, half structured ones (subnormal boundary, overflow,
small integers, short fractions, edges: `tests/contracts/float32_kit.py`). Also the gas of a whole dot-product
element (`dotElement`, K = 64) as the eth_estimateGas of a call (transaction base and calldata included).

Prints a table, then ONE JSON line (last): {"float32_gas": {op: {"avg", "max"}}, "exact_dot_gas": {...},
"dot_element_k64_call_gas": ..., "samples": ..., "noop_overhead_gas": ...}.

Usage: .venv/bin/python bench/referee_gas.py [--samples N]   (default 1024 inputs per op)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from tests.contracts.float32_kit import call, deploy_harness, structured, uniform  # noqa: E402

# Float32Harness.gasOf op codes (its NatSpec in contracts/test/Float32Harness.sol).
FLOAT32_OPS = {
    "add": 1, "sub": 2, "mul": 3, "div": 4, "maximum": 5, "minimum": 6, "sqrt": 7, "neg": 8, "abs": 9,
    "floor": 10, "lt": 11, "eq": 12, "isnan": 13, "where": 14, "clamp": 15, "ldexp": 16, "frexp": 17,
    "toInt32": 18, "fromInt": 19,
}
EXACT_DOT_OPS = {"exponentField": 20, "align": 21, "mulAdd": 22, "roundDot": 23}
NOOP = 0
SQRT_INPUT_MASK = 0x7FFFFFFF  # sqrt is timed on nonnegative inputs (negative ones return NaN at once)


def _inputs(rng: np.random.Generator, op: str, n: int) -> tuple[list[int], list[int], list[int]]:
    """(a, b, ints) for one op, as Float32Harness.gasOf reads them."""
    half = n // 2
    a = np.concatenate([uniform(rng, half), structured(rng, n - half)])
    b = np.concatenate([uniform(rng, half), structured(rng, n - half)])
    ints = rng.integers(-450, 451, n)  # ldexp's exponent
    if op == "sqrt":
        a = a & SQRT_INPUT_MASK
    elif op == "fromInt":
        ints = (rng.integers(0, 1 << 53, n) >> rng.integers(0, 54, n)) * np.where(rng.integers(0, 2, n) == 1, -1, 1)
    elif op == "where":
        ints = rng.integers(0, 2, n)
    elif op == "align":
        bits = a.astype(np.int64)
        field = np.where((bits >> 23) & 0xFF == 255, 1, np.maximum((bits >> 23) & 0xFF, 1))
        ints = np.minimum(field + rng.integers(0, 30, n), 254)  # a block exponent at or above the entry's
    elif op == "mulAdd":
        a = rng.integers(0, 1 << 24, n).astype(np.uint32)
        b = rng.integers(0, 1 << 24, n).astype(np.uint32)
        ints = rng.integers(-(1 << 61), 1 << 61, n)
    elif op == "roundDot":
        a = rng.integers(1, 255, n).astype(np.uint32)
        b = rng.integers(1, 255, n).astype(np.uint32)
        ints = (rng.integers(0, 1 << 62, n) >> rng.integers(0, 62, n)) * np.where(rng.integers(0, 2, n) == 1, -1, 1)
    return [int(x) for x in a], [int(x) for x in b], [int(x) for x in ints]


def _gas(harness: object, op: int, a: list[int], b: list[int], ints: list[int]) -> np.ndarray:
    used, _sink = call(harness, "gasOf", [op, a, b, ints], ["uint256[]", "uint256"])
    return np.array(used, dtype=np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description="Gas of the referee's float32 primitives and integer steps")
    ap.add_argument("--samples", type=int, default=1024, help="random inputs per op")
    args = ap.parse_args()
    t0 = time.time()
    artifacts = compile_contracts()
    rng = np.random.default_rng(13)
    out: dict[str, object] = {"samples": args.samples}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        harness = deploy_harness(w3, Account.from_key(DEV_KEYS[0]), artifacts)
        a, b, ints = _inputs(rng, "noop", args.samples)
        overhead = float(_gas(harness, NOOP, a, b, ints).mean())
        out["noop_overhead_gas"] = round(overhead)
        print(f"{'op':<16}{'avg gas':>10}{'max gas':>10}   (execution gas of one call, {args.samples} inputs each; "
              f"measurement overhead {overhead:.0f} subtracted)")
        for group, ops in (("float32_gas", FLOAT32_OPS), ("exact_dot_gas", EXACT_DOT_OPS)):
            table: dict[str, dict[str, int]] = {}
            for name, code in ops.items():
                used = _gas(harness, code, *_inputs(rng, name, args.samples)) - overhead
                table[name] = {"avg": round(float(used.mean())), "max": round(float(used.max()))}
                print(f"{name:<16}{table[name]['avg']:>10}{table[name]['max']:>10}")
            out[group] = table
        row, col = structured(rng, 64), structured(rng, 64)
        row = np.where((row & 0x7F800000) != 0x7F800000, row, 0).astype(np.uint32)  # finite entries only
        col = np.where((col & 0x7F800000) != 0x7F800000, col, 0).astype(np.uint32)
        dot_gas = harness.functions.dotElement(row.tolist(), col.tolist()).estimate_gas()
        out["dot_element_k64_call_gas"] = int(dot_gas)
        print(f"dotElement(K=64) eth_estimateGas of the call: {dot_gas}")
    print(f"({time.time() - t0:.1f} s)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
