"""Gas and moves of the bisection every dispute-game stage shares (`contracts/libraries/Bisection.sol`).

For interval lengths n = 2^k (k up to 20: a million positions), a lying claimant and an honest counter play a
game to the end on anvil with the real compiled library (through `BisectionHarness`). The baseline, measured in
the same run, is one transfer of the protocol token (a plain ERC-20 transaction).

Prints a table, then ONE JSON line (last): moves and gas per n, the move bound ceil(log2 n) + 1, and the gas of
a whole game as a ratio to the baseline.

Usage: .venv/bin/python bench/bisection_gas.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eth_account import Account  # noqa: E402
from web3 import Web3  # noqa: E402

from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from tests.contracts.bisection_play import deploy_harness, lying_from, play, roots  # noqa: E402
from tests.contracts.helpers import Protocol  # noqa: E402

SIZES = [2**k for k in (1, 4, 8, 12, 16, 20)]


def main() -> None:
    artifacts = compile_contracts()
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 60}))
        accounts = [Account.from_key(k) for k in DEV_KEYS]
        p = Protocol(w3, accounts, artifacts)
        p.fund(accounts[1], 10**18)
        baseline = int(p.tx(accounts[1], p.token.functions.transfer(accounts[2].address, 1))["gasUsed"])
        h = deploy_harness(p)
        rows: dict[str, dict[str, int]] = {}
        print(f"{'n':>9s} {'moves':>5s} {'bound':>5s} {'first':>7s} {'later':>7s} {'game gas':>9s} {'x transfer':>10s}")
        for gid, n in enumerate(SIZES):
            honest = roots("state", n)
            moves, gas = play(p, h, gid, (accounts[2], lying_from(honest, n // 3 + 1)),
                              (accounts[3], honest), n)
            bound = math.ceil(math.log2(n)) + 1
            later = max(gas[1:]) if len(gas) > 1 else 0
            rows[str(n)] = {"moves": moves, "bound": bound, "first_move_gas": gas[0], "max_later_move_gas": later,
                            "game_gas": sum(gas)}
            print(f"{n:>9d} {moves:>5d} {bound:>5d} {gas[0]:>7d} {later:>7d} {sum(gas):>9d} "
                  f"{sum(gas) / baseline:>10.1f}")
    million = rows[str(SIZES[-1])]
    print(json.dumps({"transfer_gas_baseline": baseline, "bisection": rows,
                      "bisection_moves_1m": million["moves"], "bisection_game_gas_1m": million["game_gas"],
                      "bisection_game_over_transfer_1m": round(million["game_gas"] / baseline, 2)}))


if __name__ == "__main__":
    main()
