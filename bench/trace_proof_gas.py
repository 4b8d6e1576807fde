"""Gas of the trace openings a repro dispute's last moves check (contracts/libraries/TraceProofs.sol), on anvil.

Openings built by `gensyn_py/proof/onchain_trace.py` from a REAL trace (the tiny MLP trainer's next step, as in
tests/contracts/test_trace_proofs.py), checked through `TraceProofsHarness`:
- one element proven against its tensor root: the demo step's largest tensor, and a synthetic tensor whose
  Merkle path is 16 deep (65,536 chunks, 524,288 float32: a 2 MiB tensor);
- one op leaf's membership in the trace root (a matmul: two inputs);
- one prefix sum of a dot element (the demo's K = 64 matmul, and a synthetic K = 4,096);
- one whole dot step (`openDotStep`: op leaf, two operand elements, two prefix sums).

Each figure is `eth_estimateGas` of a call carrying the opening: what a transaction doing only that check pays,
21,000 intrinsic and the calldata included ("above intrinsic" subtracts the 21,000).

Prints a table, then ONE JSON line (last).

Usage: .venv/bin/python bench/trace_proof_gas.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.proof.onchain_trace import (  # noqa: E402
    ElementOpening,
    TensorRef,
    dot_move,
    dot_partials,
    dot_step_args,
    element_check,
    open_dot_step,
    open_element,
    open_op,
    opening_of,
    ref_of,
    tensor_ref,
)
from gensyn_py.proof.packed_moves import pack_element_check  # noqa: E402
from gensyn_py.proof.prefix_sums import open_partial, prefix_root  # noqa: E402
from gensyn_py.proof.step_trace import trace_step  # noqa: E402
from gensyn_py.proof.trace import Trace  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.contracts.helpers import deploy_artifact  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

INTRINSIC = 21_000
DEEP_ELEMENTS = 1 << 19  # float32: 2**16 chunks of 8, a 16-deep path


def _mlp_trace() -> Trace:
    t = Trainer(tiny_spec("mlp", mode="repro"), dataset_for("mlp"), 0, 0, "cpu")
    t.run(1)
    return trace_step(t)


def _deploy(w3: Web3, art: dict[str, Any]) -> Any:
    return deploy_artifact(w3, Account.from_key(DEV_KEYS[0]), art)


def _deep_element() -> tuple[TensorRef, ElementOpening]:
    arr = np.arange(DEEP_ELEMENTS, dtype=np.float32)
    return ref_of(arr), opening_of(arr, DEEP_ELEMENTS - 5)


def main() -> None:
    t0 = time.time()
    artifacts = compile_contracts()
    tr = _mlp_trace()
    big = max(range(len(tr.values)), key=lambda i: tr.values[i].size)
    mm = next(i for i, op in enumerate(tr.ops) if op.code == "matmul" and tr.values[op.inputs[0]].shape[-1] > 32)
    partial = dot_partials(tr, mm, 5)
    long_partial = [k * (k + 1) // 2 - 10**12 for k in range(4096)]
    deep_ref, deep_open = _deep_element()
    rows: list[tuple[str, int, int]] = []  # (label, depth, gas)
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 60}))
        h = _deploy(w3, artifacts["TraceProofsHarness"]).functions
        small = open_element(tr, big, 0)  # chunk 0: the full depth (an odd last chunk is promoted)
        rows.append((f"element, demo's largest tensor ({tr.values[big].size} float32)", len(small.proof),
                     h.elementBits(tensor_ref(tr, big).as_arg(), small.as_arg()).estimate_gas()))
        rows.append((f"element, {DEEP_ELEMENTS:,} float32", len(deep_open.proof),
                     h.elementBits(deep_ref.as_arg(), deep_open.as_arg()).estimate_gas()))
        op = open_op(tr, mm)
        rows.append((f"op leaf in trace root ({len(tr.ops)} ops, matmul)", len(op.proof),
                     h.verifyOp(tr.root, op.as_arg()).estimate_gas()))
        for sums in (partial, long_partial):
            p = open_partial(sums, len(sums) // 2)
            rows.append((f"prefix sum, K = {len(sums)}", len(p.proof),
                         h.verifyPartial(prefix_root(sums), len(sums), p.as_arg()).estimate_gas()))
        es = _deploy(w3, artifacts["ElementStepHarness"]).functions
        for code in ("add", "mul"):
            i = next(i for i, o in enumerate(tr.ops) if o.code == code)
            arg = element_check(tr, i, 0)
            rows.append((f"ElementStep.check, {code} (opens 3 elements + op leaf, packed)", len(arg[4][3]),
                         es.check(tr.root, pack_element_check(arg)).estimate_gas()))
        ds = _deploy(w3, artifacts["DotElementStepHarness"]).functions
        move = dot_move(tr, mm, 5, len(partial) // 2)
        rows.append((f"DotElementStep.check, matmul K = {len(partial)} (+ 2 witnesses)", len(move[4][1][3]),
                     ds.check(tr.root, move).estimate_gas()))
        step = open_dot_step(tr, mm, 5, len(partial) // 2)
        rows.append((f"openDotStep, matmul K = {len(partial)}", len(step.a.proof),
                     h.openDotStep(*dot_step_args(tr, mm, 5, step)).estimate_gas()))

    print(f"{'opening (depth: Merkle path length)':<52}{'depth':>6}{'gas':>10}{'above intrinsic':>17}")
    for label, depth, gas in rows:
        print(f"{label:<52}{depth:>6}{gas:>10,}{gas - INTRINSIC:>17,}")
    print(f"runtime {time.time() - t0:.1f}s")
    keys = ["element_demo", "element_depth16", "op_leaf", "prefix_sum_demo", "prefix_sum_k4096", "element_step_add",
            "element_step_mul", "dot_element_step", "dot_step"]
    out: dict[str, object] = {f"{k}_gas": g for k, (_, _, g) in zip(keys, rows, strict=True)}
    out.update({f"{k}_depth": d for k, (_, d, _) in zip(keys, rows, strict=True)})
    out["trace_ops"] = len(tr.ops)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
