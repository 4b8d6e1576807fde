"""A whole dispute game through the pool (`contracts/SegmentGame.sol` then `contracts/StepGame.sol`), the demo's model.

The demo's MLP (hidden 64, SGD, batch 32) in `repro` mode, 2 segments of 20 steps (the demo's checkpoint
interval); the job's step table goes on-chain with it. Two cheats at unit step 33 (step 13 of segment 1), each
solver training on from there: one bit of one element of the largest elementwise output in the middle of the
step flipped (`elementwise`), and one element of the longest matmul computed from a partial sum off from
multiply-add K/3 on (`matmul`). The validator drawn for segment 1 rejects it, and the pool hands the dispute to
the game. Both sides play from their own replay (`gensyn_py/proof/segment_side.py`): stage (a) over the segment's
20 step state roots, the claimant's reveal of the step (its program and batch proven in the step table, both
states entry by entry, every named output opened in its trace), the step game to one element (and to one
multiply-add), and the settlement in the pool.

Figures per game: `dispute_moves` (both sides, both games, the settling call excluded) against the issue's bound
log2(steps) + log2(ops) + log2(elements) + log2(K) + 4 (K = 1 for the elementwise game); `dispute_total_gas`
(every move and the settling call); `reveal_gas`; `one_step_gas` (the deciding move, base cost included);
`dispute_offchain_ratio`: the larger side's off-chain seconds (replaying the segment and hashing the states the
bisection asks for, tracing the disputed step, building its commitments and computing every move) over training
the same 20-step segment, measured in the same run.

Prints a table, then ONE JSON line (last); its top-level keys are the matmul game's (the longer one).

Usage: .venv/bin/python bench/segment_game.py
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from bench.dispute import SGD, timed  # noqa: E402
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.proof.segment_side import Flip, SegmentSide, middle_elementwise  # noqa: E402
from gensyn_py.proof.step_table import step_table  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.contracts.helpers import Protocol  # noqa: E402
from tests.contracts.segment_game_play import matmul_flip, play, rejected, work_of  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

INTERVAL, SEGMENTS = 20, 2
CHEAT_STEP = INTERVAL + 13


def seconds(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def game(p: Protocol, spec: Any, table: Any, start: Any, cheat: list[SegmentSide], counter: SegmentSide,
         t: int, train_s: float, replay_s: float, sums: tuple[int, ...] | None, k_len: int) -> dict[str, Any]:
    """Play one whole game through the pool (unit `unit_id`) and its figures."""
    flip = cheat[1].flip
    assert flip is not None
    reveal, reveal_s = seconds(lambda: cheat[1].reveal(t))
    if sums is not None:
        cheat[1].step_side(t)._sums[(flip.op, flip.element)] = sums
    _, trace_s = seconds(lambda: counter.trace(t))
    (_, c_clock), (_, d_clock) = timed(cheat[1].step_side(t), 0.0), timed(counter.step_side(t), trace_s)
    work = work_of(cheat)
    did, validator = rejected(p, work, 1, spec=spec, table=table)
    g, settled = play(p, did, work, 1, (p.accounts[2], cheat[1]), (validator, counter))
    assert g.step == t and g.step_game is not None and g.step_game.op == flip.op, "the game missed the cheat"
    moves, gas = g.totals()
    trace = counter.trace(t)
    elements = int(trace.values[flip.op].size)
    bound = (math.ceil(math.log2(INTERVAL)) + math.ceil(math.log2(len(trace.ops)))
             + math.ceil(math.log2(elements)) + math.ceil(math.log2(k_len)) + 4)
    claimant_s = replay_s + reveal_s + c_clock.seconds
    counter_s = replay_s + d_clock.seconds
    return {
        "dispute_moves": moves, "move_bound": bound, "stage_a_moves": g.moves["claimant"] + g.moves["counter"],
        "step_game_moves": sum(g.step_game.moves.values()), "multiply_add": g.step_game.multiply_add,
        "dispute_total_gas": gas + int(settled["gasUsed"]), "reveal_gas": g.calls["revealStep"],
        "one_step_gas": g.deciding_gas, "settle_gas": int(settled["gasUsed"]),
        "contest_gas": g.calls["contest"], "segment_game_gas": dict(g.gas), "step_game_gas": dict(g.step_game.gas),
        "dispute_offchain_ratio": round(max(claimant_s, counter_s) / train_s, 2),
        "claimant_offchain_s": round(claimant_s, 3), "counter_offchain_s": round(counter_s, 3),
        "reveal_build_s": round(reveal_s, 3), "ops": len(trace.ops), "elements": elements,
        "reveal_calldata_bytes": len(json.dumps(reveal, default=lambda b: b.hex())) // 2,
    }


def main() -> None:
    spec = tiny_spec("mlp", mode="repro", model={"family": "mlp", "sizes": {"hidden": 64}}, optimizer=SGD,
                     batch_size=32, steps_per_unit=INTERVAL * SEGMENTS, checkpoint_interval=INTERVAL, rounds=1,
                     shards=1)
    ds = dataset_for("mlp")
    table, table_s = seconds(lambda: step_table(spec, ds))

    def at_segment_1() -> Trainer:
        t = Trainer(spec, ds, 0, 0, "cpu")
        t.run(INTERVAL)
        return t

    warm = at_segment_1()
    _, train_s = seconds(lambda: warm.run(INTERVAL))  # the baseline: training the disputed segment
    t = CHEAT_STEP - INTERVAL
    start = at_segment_1()  # a node loads it from the segment's start checkpoint (not timed, as for the baseline)
    counter, replay_s = seconds(lambda: SegmentSide(start, table))
    op = middle_elementwise(counter.trace(t))
    flips: dict[str, tuple[Flip, tuple[int, ...] | None, int]] = {
        "elementwise": (Flip(CHEAT_STEP, op, int(counter.trace(t).values[op].size) // 2, bit=22), None, 1)}
    mm, sums, _, k_len = matmul_flip(counter, t)
    flips["matmul"] = (Flip(CHEAT_STEP, mm.op, mm.element, value=mm.value), sums, k_len)
    artifacts = compile_contracts()
    rows: dict[str, Any] = {}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        p = Protocol(w3, [Account.from_key(k) for k in DEV_KEYS], artifacts)
        p.standard_cast()
        clean = w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
        for kind, (flip, kind_sums, kind_k) in flips.items():
            # Each game on the same fresh chain: a convicted solver is jailed, and the next game needs it.
            w3.provider.make_request("evm_revert", [clean])  # type: ignore[arg-type]
            clean = w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
            cheat = [SegmentSide(s, table, flip) for s in [Trainer(spec, ds, 0, 0, "cpu")] * SEGMENTS]
            rows[kind] = game(p, spec, table, start, cheat, SegmentSide(at_segment_1(), table), t, train_s, replay_s,
                              kind_sums, kind_k)
    print(f"{'game':<12s} {'moves':>5s} {'bound':>5s} {'stage a':>7s} {'gas':>9s} {'last':>7s} "
          f"{'offchain x segment':>18s}")
    for kind, r in rows.items():
        print(f"{kind:<12s} {r['dispute_moves']:>5d} {r['move_bound']:>5d} {r['stage_a_moves']:>7d} "
              f"{r['dispute_total_gas']:>9d} {r['one_step_gas']:>7d} {r['dispute_offchain_ratio']:>18.2f}")
    top = {k: rows["matmul"][k] for k in ("dispute_moves", "dispute_total_gas", "one_step_gas",
                                           "dispute_offchain_ratio")}
    print(json.dumps({**top, "train_segment_s": round(train_s, 3), "step_table_s": round(table_s, 3),
                      "games": rows}))


if __name__ == "__main__":
    main()
