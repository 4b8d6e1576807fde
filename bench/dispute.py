"""Whole dispute games through the pool (`contracts/SegmentGame.sol`, then `contracts/StepGame.sol`), growing units.

For each unit (the demo's model with its 20-step segments first; then the demo's model with segments of 10 and 40
steps, and larger models and a transformer with 20-step segments) a repro job of two segments goes on-chain with its
step table. Two cheats at step 2k/3 of segment 1, each solver training on from there: one bit of one element of the
largest elementwise output in the middle of the step flipped (`elementwise`), and one element of the longest matmul
computed from a partial sum off from multiply-add K/3 on (`matmul`). The validator drawn for segment 1 rejects the
unit and the pool hands the dispute to the game. Both sides play from their own replay
(`gensyn_py/proof/segment_side.py`): the claimant's transcript, stage (a) over the segment's positions (state roots
bound to the losses), the claimant's reveal of the step, the step game to one element (and to one multiply-add), and
the settlement in the pool.

Figures per game: `dispute_moves` (both sides, both games, the settling call excluded) against the issue's bound
log2(steps) + log2(ops) + log2(elements) + log2(K) + 4 (K = 1 for the elementwise game); `dispute_total_gas`
(every move and the settling call); `reveal_gas`; `one_step_gas` (the deciding move, base cost included);
`dispute_offchain_ratio`: the larger side's off-chain seconds (replaying the segment, hashing the states each
position of stage (a) asks for, tracing the disputed step, building its commitments and computing every move) over
training the same segment, measured in the same run.

Prints a table, then ONE JSON line (last); its top-level keys are the demo unit's matmul game (the longer one).

Usage: .venv/bin/python bench/dispute.py [--quick]   (--quick: the demo unit only)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.proof.segment_side import Flip, SegmentSide, middle_elementwise  # noqa: E402
from gensyn_py.proof.step_side import StepSide  # noqa: E402
from gensyn_py.proof.step_table import step_table  # noqa: E402
from gensyn_py.train.data import Dataset  # noqa: E402
from gensyn_py.train.spec import JobSpec  # noqa: E402
from gensyn_py.train.trainer import Trainer  # noqa: E402
from tests.contracts.helpers import Protocol  # noqa: E402
from tests.contracts.segment_game_play import matmul_flip, play, rejected, work_of  # noqa: E402
from tests.unit.trainkit import dataset_for, tiny_spec  # noqa: E402

ADAMW = {"name": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}
SGD = {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0001}
DEMO = ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 64}}, "optimizer": SGD, "batch_size": 32})
# name: (family, spec overrides, steps per segment)
UNITS: dict[str, tuple[str, dict[str, Any], int]] = {
    "demo_mlp64": (*DEMO, 20),
    "demo_mlp64_k10": (*DEMO, 10),
    "demo_mlp64_k40": (*DEMO, 40),
    "mlp256_adamw": ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 256}}, "optimizer": ADAMW,
                             "batch_size": 64}, 20),
    "transformer16_adamw": ("transformer", {"optimizer": ADAMW}, 20),
    "mlp1024_adamw": ("mlp", {"model": {"family": "mlp", "sizes": {"hidden": 1024}}, "optimizer": ADAMW,
                              "batch_size": 128}, 20),
}
QUICK = ("demo_mlp64",)
SEGMENTS = 2
BASELINE_RUNS = 5
T = TypeVar("T")


@dataclass
class Clock:
    seconds: float = 0.0


TIMED = ("move", "contest", "open_op", "refutation", "refute_chunk", "reveal_output", "descend", "chunk",
         "dot_answer", "dot_challenge", "dot_positions", "dot_step", "dot_sums")


# What a segment side computes for its moves of stage (a): the positions it is asked for (each a state hashed).
SEGMENT_TIMED = ("move", "contest", "open_transcript")


def timed(side: StepSide, trace_seconds: float) -> tuple[StepSide, Clock]:
    """`side`, with the seconds of tracing the step, building its commitments and every computation the game
    asks of it added up in the returned clock."""
    clock = Clock(trace_seconds)
    t0 = time.perf_counter()
    _ = side.roots  # every tensor root, op leaf and prefix
    clock.seconds += time.perf_counter() - t0
    return side, clocked(side, TIMED, clock)


def clocked(obj: Any, names: tuple[str, ...], clock: Clock) -> Clock:
    """Add the seconds of every call of `obj`'s methods `names` to `clock`."""
    for name in names:
        fn = getattr(obj, name)

        def wrapped(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
            t1 = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                clock.seconds += time.perf_counter() - t1

        setattr(obj, name, wrapped)
    return clock


def seconds(fn: Callable[[], T]) -> tuple[T, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


@dataclass
class Unit:
    """One unit's job, the honest counter's replay of the disputed segment and the baseline."""

    spec: JobSpec
    dataset: Dataset
    table: Any
    interval: int
    train_s: float  # training the disputed segment (the baseline)
    replay_s: float  # the counter's replay of it
    counter: SegmentSide

    @property
    def cheat_step(self) -> int:
        """The unit step the cheats are at: step 2k/3 of segment 1."""
        return self.interval + 2 * self.interval // 3

    def at_segment_1(self) -> Trainer:
        return at_segment_1(self.spec, self.dataset, self.interval)


def at_segment_1(spec: JobSpec, ds: Dataset, interval: int) -> Trainer:
    """A trainer at the start of segment 1 (a node loads it from that checkpoint: untimed, as the baseline)."""
    t = Trainer(spec, ds, 0, 0, "cpu")
    t.run(interval)
    return t


def unit(family: str, over: dict[str, Any], interval: int) -> Unit:
    spec = tiny_spec(family, mode="repro", steps_per_unit=interval * SEGMENTS, checkpoint_interval=interval,
                     rounds=1, shards=1, **over)
    ds = dataset_for(family)
    table = step_table(spec, ds)
    # The baseline: training the segment from its start, the median of a few runs (a tiny model's 20 steps take
    # 20 to 40 ms, a single run too noisy to divide by).
    runs = []
    for _ in range(BASELINE_RUNS):
        warm = at_segment_1(spec, ds, interval)
        t0 = time.perf_counter()
        warm.run(interval)
        runs.append(time.perf_counter() - t0)
    train_s = statistics.median(runs)
    start = at_segment_1(spec, ds, interval)
    counter, replay_s = seconds(lambda: SegmentSide(start, table))
    return Unit(spec, ds, table, interval, train_s, replay_s, counter)


def game(p: Protocol, u: Unit, flip: Flip, k_len: int) -> dict[str, Any]:
    """Play one whole game through the pool (unit 1 of a fresh job) and its figures."""
    t = u.cheat_step - u.interval
    cheat = [SegmentSide(s, u.table, flip) for s in [Trainer(u.spec, u.dataset, 0, 0, "cpu")] * SEGMENTS]
    counter = SegmentSide(u.at_segment_1(), u.table)  # a fresh replay: no hashes shared with the one timed
    _, reveal_s = seconds(lambda: cheat[1].reveal(t))
    _, trace_s = seconds(lambda: counter.trace(t))
    (_, c_clock), (_, d_clock) = timed(cheat[1].step_side(t), 0.0), timed(counter.step_side(t), trace_s)
    # Stage (a): the positions each side's moves ask for, each a state hashed on first use.
    c_stage_a, d_stage_a = clocked(cheat[1], SEGMENT_TIMED, Clock()), clocked(counter, SEGMENT_TIMED, Clock())
    work = work_of(cheat)
    did, validator = rejected(p, work, 1, spec=u.spec, table=u.table)
    g, settled = play(p, did, work, 1, (p.accounts[2], cheat[1]), (validator, counter))
    assert g.step == t and g.step_game is not None and g.step_game.op == flip.op, "the game missed the cheat"
    moves, gas = g.totals()
    trace = counter.trace(t)
    elements = int(trace.values[flip.op].size)
    bound = (math.ceil(math.log2(u.interval)) + math.ceil(math.log2(len(trace.ops)))
             + math.ceil(math.log2(elements)) + math.ceil(math.log2(k_len)) + 4)
    claimant_s = u.replay_s + reveal_s + c_clock.seconds + c_stage_a.seconds
    counter_s = u.replay_s + d_clock.seconds + d_stage_a.seconds
    return {
        "dispute_moves": moves, "move_bound": bound, "stage_a_moves": g.moves["claimant"] + g.moves["counter"],
        "step_game_moves": sum(g.step_game.moves.values()), "multiply_add": g.step_game.multiply_add,
        "dispute_total_gas": gas + int(settled["gasUsed"]), "reveal_gas": g.calls["revealStep"],
        "one_step_gas": g.deciding_gas, "settle_gas": int(settled["gasUsed"]), "contest_gas": g.calls["contest"],
        "transcript_gas": g.calls["openTranscript"],
        "segment_game_gas": dict(g.gas), "step_game_gas": dict(g.step_game.gas),
        "dispute_offchain_ratio": round(max(claimant_s, counter_s) / u.train_s, 2),
        "claimant_offchain_s": round(claimant_s, 3), "counter_offchain_s": round(counter_s, 3),
        "reveal_build_s": round(reveal_s, 3), "ops": len(trace.ops), "elements": elements, "contraction": k_len,
    }


def games(p: Protocol, name: str) -> dict[str, Any]:
    """Both cheats' games on the unit `name`, each on the chain as it was before it."""
    family, over, interval = UNITS[name]
    u = unit(family, over, interval)
    t = u.cheat_step - interval
    step = u.counter.trace(t)
    op = middle_elementwise(step)
    mm, _, _, k_len = matmul_flip(u.counter, t)
    cheats: dict[str, tuple[Flip, int]] = {
        "elementwise": (Flip(u.cheat_step, op, int(step.values[op].size) // 2, bit=22), 1),
        "matmul": (mm, k_len),  # with the sums the cheat answers with
    }
    row: dict[str, Any] = {"steps_per_segment": interval, "train_segment_s": round(u.train_s, 3)}
    for kind, (flip, kind_k) in cheats.items():
        # Each game on the chain as it was: a convicted solver is jailed, and the next game needs it.
        snapshot = p.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
        row[kind] = game(p, u, flip, kind_k)
        p.w3.provider.make_request("evm_revert", [snapshot])  # type: ignore[arg-type]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the demo's unit only")
    args = ap.parse_args()
    artifacts = compile_contracts()
    rows: dict[str, Any] = {}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 120}))
        p = Protocol(w3, [Account.from_key(k) for k in DEV_KEYS], artifacts)
        p.standard_cast()
        print(f"{'unit':<20s} {'game':<11s} {'k':>3s} {'ops':>4s} {'moves':>5s} {'bound':>5s} {'gas':>9s} "
              f"{'last':>7s} {'offchain x segment':>18s}", flush=True)
        for name in (QUICK if args.quick else UNITS):
            rows[name] = r = games(p, name)
            for kind in ("elementwise", "matmul"):
                g = r[kind]
                print(f"{name:<20s} {kind:<11s} {r['steps_per_segment']:>3d} {g['ops']:>4d} {g['dispute_moves']:>5d} "
                      f"{g['move_bound']:>5d} {g['dispute_total_gas']:>9d} {g['one_step_gas']:>7d} "
                      f"{g['dispute_offchain_ratio']:>18.2f}", flush=True)
    demo = rows["demo_mlp64"]["matmul"]
    top = {k: demo[k] for k in ("dispute_moves", "dispute_total_gas", "one_step_gas", "dispute_offchain_ratio")}
    print(json.dumps({**top, "units": rows}))


if __name__ == "__main__":
    main()
