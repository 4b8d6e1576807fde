"""Torn reads at a node's head block: the local market's anvil, measured (`gensyn_py/devnet/head_reads.py`).

A writer sends transactions back to back to a counter contract while a reader checks, at the head and at the block
below it, that three reads of one block number agree. Reads at the head are the baseline; `chain/decision_block.py`
makes the dispute-game player read the block below the head on anvil because of what this measures.

Prints a table, then ONE JSON line (last): checks, transactions, torn fractions at the head and below it.

Usage: .venv/bin/python bench/head_reads.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gensyn_py.devnet.anvil import AnvilNode  # noqa: E402
from gensyn_py.devnet.head_reads import probe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to probe")
    args = parser.parse_args()
    # The local market's mining: a block per transaction and one every second (gensyn_py/sim/localnet.py).
    with AnvilNode(block_time=1.0, mixed_mining=True) as node:
        print(f"probing {node.url} for {args.seconds:.0f} s ...", flush=True)
        r = probe(node.url, args.seconds)
    head, below = r.torn_at_head / max(r.checks, 1), r.torn_below_head / max(r.checks, 1)
    print(f"{'block read':<18}{'checks':>8}{'torn':>6}{'fraction':>10}")
    print(f"{'head':<18}{r.checks:>8}{r.torn_at_head:>6}{head:>10.4f}")
    print(f"{'below the head':<18}{r.checks:>8}{r.torn_below_head:>6}{below:>10.4f}")
    print(f"transactions sent meanwhile: {r.transactions}")
    print(json.dumps({"checks": r.checks, "transactions": r.transactions, "torn_at_head": r.torn_at_head,
                      "torn_below_head": r.torn_below_head, "torn_at_head_fraction": round(head, 4),
                      "torn_below_head_fraction": round(below, 4)}))


if __name__ == "__main__":
    main()
