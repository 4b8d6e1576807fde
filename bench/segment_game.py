"""A whole dispute game through the pool (`contracts/SegmentGame.sol` then `contracts/StepGame.sol`), the demo's model.

The demo's MLP (hidden 64, SGD, batch 32) in `repro` mode, 2 segments of 20 steps (the demo's checkpoint
interval); the job's step table goes on-chain with it. A solver flips one bit of one element of the largest
elementwise output in the middle of unit step 33 (step 13 of segment 1) and trains on from there; the validator
drawn for segment 1 rejects it, and the pool hands the dispute to the game. Both sides play from their own
replay (`gensyn_py/proof/segment_side.py`): stage (a) over the segment's 20 step state roots, the claimant's reveal
of the step (its program and batch proven in the step table, both states entry by entry, every named output opened
in its trace), the step game to one element, and the settlement in the pool.

Figures: `dispute_moves` (both sides, both games, the settling call excluded) against the issue's bound
log2(steps) + log2(ops) + log2(elements) + log2(K) + 4; `dispute_total_gas` (every move and the settling call);
`reveal_gas`; `one_step_gas` (the deciding move, base cost included); `dispute_offchain_ratio`: the larger side's
off-chain seconds (replaying the segment with a state root at every step, tracing the disputed step, building its
commitments and computing every move) over training the same 20-step segment, measured in the same run.

Prints a table, then ONE JSON line (last).

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

from bench.dispute import SGD, pick_elementwise, timed  # noqa: E402
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.proof.segment_side import Flip, SegmentSide  # noqa: E402
from gensyn_py.proof.step_table import step_table  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.contracts.helpers import Protocol  # noqa: E402
from tests.contracts.segment_game_play import play, rejected, work_of  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

INTERVAL, SEGMENTS = 20, 2
CHEAT_STEP = INTERVAL + 13


def seconds(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


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
    probe = SegmentSide(at_segment_1(), table)
    t = CHEAT_STEP - INTERVAL
    op = pick_elementwise(probe.trace(t))
    flip = Flip(CHEAT_STEP, op, int(probe.trace(t).values[op].size) // 2, bit=22)
    t0 = Trainer(spec, ds, 0, 0, "cpu")
    cheat = [SegmentSide(t0, table, flip) for _ in range(SEGMENTS)]
    start = at_segment_1()  # a node loads it from the segment's start checkpoint (not timed, as for the baseline)
    counter, counter_replay_s = seconds(lambda: SegmentSide(start, table))
    claimant_replay_s = counter_replay_s  # the same replay (one flipped bit aside)
    reveal, reveal_s = seconds(lambda: cheat[1].reveal(t))
    # Each side's trace of the step and every move it computes: the claimant's trace was made by its reveal.
    _, trace_s = seconds(lambda: counter.trace(t))
    (_, c_clock), (_, d_clock) = timed(cheat[1].step_side(t), 0.0), timed(counter.step_side(t), trace_s)
    artifacts = compile_contracts()
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        p = Protocol(w3, [Account.from_key(k) for k in DEV_KEYS], artifacts)
        p.standard_cast()
        work = work_of(cheat)
        did, validator = rejected(p, work, 1, spec=spec, table=table)
        g, settled = play(p, did, work, 1, (p.accounts[2], cheat[1]), (validator, counter))
    assert g.step == t and g.step_game is not None and g.step_game.op == op, "the game missed the cheat"
    moves, gas = g.totals()
    trace = counter.trace(t)
    elements = int(trace.values[op].size)
    bound = (math.ceil(math.log2(INTERVAL)) + math.ceil(math.log2(len(trace.ops)))
             + math.ceil(math.log2(elements)) + 4)
    claimant_s = claimant_replay_s + reveal_s + c_clock.seconds
    counter_s = counter_replay_s + d_clock.seconds
    ratio = max(claimant_s, counter_s) / train_s
    row = {
        "dispute_moves": moves, "move_bound": bound, "stage_a_moves": g.moves["claimant"] + g.moves["counter"],
        "step_game_moves": sum(g.step_game.moves.values()), "dispute_total_gas": gas + int(settled["gasUsed"]),
        "reveal_gas": g.calls["revealStep"], "one_step_gas": g.deciding_gas, "settle_gas": int(settled["gasUsed"]),
        "open_segment_gas": g.calls["openSegment"], "contest_gas": g.calls["contest"],
        "play_step_gas": g.calls["playStep"],
        "segment_game_gas": {k: v for k, v in g.gas.items()}, "step_game_gas": dict(g.step_game.gas),
        "dispute_offchain_ratio": round(ratio, 2), "claimant_offchain_s": round(claimant_s, 3),
        "counter_offchain_s": round(counter_s, 3), "train_segment_s": round(train_s, 3),
        "step_table_s": round(table_s, 3), "reveal_build_s": round(reveal_s, 3), "ops": len(trace.ops),
        "elements": elements, "reveal_calldata_bytes": len(json.dumps(reveal, default=lambda b: b.hex())) // 2,
    }
    print(f"{'model':<12s} {'moves':>5s} {'bound':>5s} {'stage a':>7s} {'gas':>9s} {'offchain x segment':>18s}")
    print(f"{'demo_mlp64':<12s} {moves:>5d} {bound:>5d} {row['stage_a_moves']:>7d} {row['dispute_total_gas']:>9d} "
          f"{row['dispute_offchain_ratio']:>18.2f}")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
