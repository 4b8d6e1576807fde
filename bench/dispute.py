"""The step game (`contracts/StepGame.sol`): moves, gas and each side's off-chain work, for steps of growing size.

For each model (the demo's MLP first), one repro training step is traced; two cheats are played to the end on
anvil against an honest counter that holds only its own trace: one flipped bit in one element of the largest
elementwise output in the middle of the step (decided by recomputing that element), and one wrong integer
multiply-add inside the element of the matmul with the longest contraction (decided at that multiply-add).

Figures per game: `dispute_moves` (transactions of both sides, the opener's excluded) against the bound
log2(ops) + log2(elements) + log2(K) + 4; `dispute_total_gas`; `one_step_gas` (the deciding transaction, its
base cost included); each side's off-chain seconds (tracing the step, its commitments, every move) as a ratio to
training the disputed segment of 20 steps (the demo's checkpoint interval; `dispute_offchain_ratio`, the larger
side) and to one step (`offchain_over_step`). The baseline, measured in the same run, is one repro training step
of the same model.

Not yet measured: stage (a), bisecting the k steps of a segment (docs/dispute-game.md): the game here starts from
the disputed step's agreed inputs. Its moves add about log2(k) + 1 and its gas about 60k per move; its off-chain
work adds a replay of the segment with a state root at each step.

Prints a table, then ONE JSON line (last); its top-level `dispute_*` / `one_step_gas` keys are the demo model's
matmul game (the longer of the two).

Usage: .venv/bin/python bench/dispute.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.proof.segment_side import middle_elementwise  # noqa: E402
from gensyn_py.proof.step_side import StepSide  # noqa: E402
from gensyn_py.proof.step_trace import trace_step  # noqa: E402
from gensyn_py.proof.trace import Trace  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.contracts.helpers import Protocol  # noqa: E402
from tests.contracts.step_game_play import WrongPartialSum, deploy_step_game, flipped, play_game  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

ADAMW = {"name": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
SGD = {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0001}
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "demo_mlp64": ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 64}}, "optimizer": SGD, "batch_size": 32}),
    "mlp256_adamw": ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 256}}, "optimizer": ADAMW,
                             "batch_size": 64}),
    "transformer16_adamw": ("transformer", {"optimizer": ADAMW}),
    "mlp1024_adamw": ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 1024}}, "optimizer": ADAMW,
                              "batch_size": 128}),
}
QUICK = ("demo_mlp64",)
SEGMENT_STEPS = 20  # the demo's checkpoint interval: the steps of the segment a game is about


@dataclass
class Clock:
    seconds: float = 0.0


TIMED = ("move", "open_op", "refutation", "refute_chunk", "reveal_output", "descend", "chunk", "dot_answer",
         "dot_positions", "dot_step", "dot_sums")


def timed(side: StepSide, trace_seconds: float) -> tuple[StepSide, Clock]:
    """`side`, with the seconds of tracing the step, building its commitments and every computation the game
    asks of it added up in the returned clock."""
    clock = Clock(trace_seconds)
    t0 = time.perf_counter()
    _ = side.roots  # every tensor root, op leaf and prefix
    clock.seconds += time.perf_counter() - t0
    for name in TIMED:
        fn = getattr(side, name)

        def wrapped(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
            t1 = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                clock.seconds += time.perf_counter() - t1

        setattr(side, name, wrapped)
    return side, clock


def step_seconds(t: Trainer, steps: int = 5) -> float:
    t.run(1)  # warm
    t0 = time.perf_counter()
    t.run(steps)
    return (time.perf_counter() - t0) / steps


def pick_matmul(tr: Trace) -> tuple[int, int]:
    """The matmul with the longest contraction K, and K."""
    ids = [i for i, op in enumerate(tr.ops) if op.code == "matmul"]
    i = max(ids, key=lambda j: tr.values[tr.ops[j].inputs[0]].shape[-1])
    return i, int(tr.values[tr.ops[i].inputs[0]].shape[-1])


def play(p: Protocol, game: Any, honest: Trace, cheat: StepSide, trace_s: float, train_s: float,
         elements: int, k_len: int) -> dict[str, Any]:
    a = p.accounts
    claimant, c_clock = timed(cheat, trace_s)
    # A trace of its own: the honest trace's roots, cached once computed, are not the counter's to reuse.
    counter, d_clock = timed(StepSide(Trace(list(honest.ops), list(honest.values), dict(honest.outputs))), trace_s)
    played, last = play_game(p, game, honest, (a[2], claimant), (a[3], counter))
    moves = sum(played.moves.values())
    bound = (math.ceil(math.log2(len(honest.ops))) + math.ceil(math.log2(max(elements, 2)))
             + math.ceil(math.log2(max(k_len, 2))) + 4)
    return {
        "dispute_moves": moves, "move_bound": bound, "op": played.op, "multiply_add": played.multiply_add,
        "dispute_total_gas": sum(played.gas.values()), "claimant_gas": played.gas["claimant"],
        "counter_gas": played.gas["counter"], "one_step_gas": int(last["gasUsed"]),
        "claimant_offchain_s": round(c_clock.seconds, 3), "counter_offchain_s": round(d_clock.seconds, 3),
        "offchain_over_step": round(max(c_clock.seconds, d_clock.seconds) / train_s, 1),
        "dispute_offchain_ratio": round(max(c_clock.seconds, d_clock.seconds) / (SEGMENT_STEPS * train_s), 2),
    }


def measure(p: Protocol, game: Any, name: str) -> dict[str, Any]:
    family, over = MODELS[name]
    t = Trainer(tiny_spec(family, mode="repro", **over), dataset_for(family), 0, 0, "cpu")
    train_s = step_seconds(t)
    t0 = time.perf_counter()
    honest = trace_step(t)
    trace_s = time.perf_counter() - t0
    row: dict[str, Any] = {"ops": len(honest.ops), "train_step_s": round(train_s, 4), "trace_s": round(trace_s, 3),
                           "trace_mb": round(honest.size_bytes / 2**20, 2)}
    i = middle_elementwise(honest)
    n = int(honest.values[i].size)
    row["elementwise"] = play(p, game, honest, StepSide(flipped(honest, i, n // 2)), trace_s, train_s, n, 1)
    row["elementwise"]["elements"] = n
    m, k_len = pick_matmul(honest)
    n = int(honest.values[m].size)
    cheat = WrongPartialSum(honest, m, n // 2, k_len // 3)
    row["matmul"] = play(p, game, honest, cheat, trace_s, train_s, n, k_len)
    row["matmul"].update(elements=n, contraction=k_len)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the demo's model only")
    args = ap.parse_args()
    artifacts = compile_contracts()
    rows: dict[str, Any] = {}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        p = Protocol(w3, [Account.from_key(k) for k in DEV_KEYS], artifacts)
        game = deploy_step_game(p)
        head = f"{'model':<20s} {'game':<11s} {'ops':>5s} {'moves':>5s} {'bound':>5s} {'gas':>9s} {'last':>7s} " \
               f"{'offchain x segment':>18s}"
        print(head)
        for name in (QUICK if args.quick else MODELS):
            rows[name] = r = measure(p, game, name)
            for kind in ("elementwise", "matmul"):
                g = r[kind]
                print(f"{name:<20s} {kind:<11s} {r['ops']:>5d} {g['dispute_moves']:>5d} {g['move_bound']:>5d} "
                      f"{g['dispute_total_gas']:>9d} {g['one_step_gas']:>7d} {g['dispute_offchain_ratio']:>18.2f}")
    demo = rows["demo_mlp64"]["matmul"]
    top = {k: demo[k] for k in ("dispute_moves", "dispute_total_gas", "one_step_gas", "dispute_offchain_ratio")}
    print(json.dumps({**top, "models": rows}))


if __name__ == "__main__":
    main()
