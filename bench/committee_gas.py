"""Worst-case gas of a committee dispute, and of a sealed challenge, on anvil with the real contracts.

The committee's worst case: the largest first round (`MAX_COMMITTEE_SIZE` = 16 seats), nobody ever votes, so the
dispute escalates twice (16, 32, then 64 seats: 112 in all) and the last `resolve` walks every seat, slashing
each for its missing vote and paying the pot out. Each draw and that last resolve must fit far under a 30M block.
The baseline, measured in the same run, is a first-round dispute where all 16 members vote.

Prints a table, then ONE JSON line (last): gas of each step, and each worst-case step as a ratio to a 30M block
and to the baseline's resolve.

Usage: .venv/bin/python bench/committee_gas.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eth_account import Account  # noqa: E402
from eth_account.signers.local import LocalAccount  # noqa: E402
from eth_utils import keccak  # noqa: E402
from web3 import Web3  # noqa: E402

import tests.contracts.helpers as helpers  # noqa: E402
from gensyn_py.chain.pool import challenge_hash  # noqa: E402
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from gensyn_py.devnet.deploy import DEFAULT_PARAMS  # noqa: E402
from tests.contracts.flows import claim_and_commit, commit_verdicts, committee_votes, rejected_unit, reveal  # noqa: E402
from tests.contracts.helpers import VALIDATOR, Protocol, Work  # noqa: E402

BLOCK_GAS = 30_000_000
SEATS = 16
EXTRA_VALIDATORS = 7 * SEATS + 8  # every seat of three rounds, plus room for the parties


def _gas(p: Protocol, acct: LocalAccount, fn: object) -> int:
    return int(p.tx(acct, fn)["gasUsed"])


def main() -> None:
    t0 = time.time()
    helpers.GAS = BLOCK_GAS  # the test helpers' per-transaction limit is lower: measure against a whole block
    artifacts = compile_contracts()
    out: dict[str, object] = {}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 60}))
        accounts = [Account.from_key(k) for k in DEV_KEYS]
        p = Protocol(w3, accounts, artifacts, {**DEFAULT_PARAMS, "committeeSize": SEATS})
        p.standard_cast()
        keeper = accounts[9]
        cap = p.registry.functions.weightCap().call()
        print(f"registering {EXTRA_VALIDATORS} validators at the weight cap ...", flush=True)
        for i in range(EXTRA_VALIDATORS):
            a = Account.from_key(keccak(b"bench validator" + i.to_bytes(2, "big")))
            w3.provider.make_request("anvil_setBalance", [a.address, hex(10**21)])  # type: ignore[arg-type]
            p.accounts.append(a)
            p.node(a, VALIDATOR, stake=cap)

        # Baseline: one round, all 16 vote with the majority.
        did, _ = rejected_unit(p, 1)
        p.mine(2)
        base_draw = _gas(p, keeper, p.committee.functions.drawCommittee(did))
        members = p.committee.functions.membersOf(did).call()
        committee_votes(p, did, dict.fromkeys(members, True))
        base_resolve = _gas(p, keeper, p.committee.functions.resolve(did))

        # Worst case: three rounds, nobody votes; the last resolve slashes 112 missing seats.
        did, _ = rejected_unit(p, 2)
        draws: list[int] = []
        resolves: list[int] = []
        for r in range(3):
            print(f"round {r + 1}: drawing {SEATS << r} seats ...", flush=True)
            p.mine(2)
            draws.append(_gas(p, keeper, p.committee.functions.drawCommittee(did)))
            d = p.dispute(did)
            p.advance(d["deadline"] - p.now() + 1)
            resolves.append(_gas(p, keeper, p.committee.functions.resolve(did)))
        seats = len(p.committee.functions.membersOf(did).call())
        p.check_conservation()

        # A sealed challenge of a verified unit: seal, then reveal (opens the dispute).
        p.submit(p.accounts[1])
        w = Work.honest(4)
        claim_and_commit(p, 3, p.accounts[2], w)
        truth = {v: (True, w.segments[p.segment_of(3, i)][2]) for i, v in enumerate(p.unit(3)["validators"])}
        commit_verdicts(p, 3, truth)
        for v, (acc, th) in truth.items():
            reveal(p, 3, v, acc, th, w)
        ch, salt = p.accounts[8], keccak(b"bench challenge")
        seal_gas = _gas(p, ch, p.pool.functions.commitChallenge(3, challenge_hash(3, ch.address, 0, salt)))
        p.mine(1)  # revealed in a later block than the seal
        reveal_gas = _gas(p, ch, p.pool.functions.challenge(3, 0, salt))

    print(f"committee of {SEATS}, {EXTRA_VALIDATORS + 5} validators at the weight cap")
    print(f"{'step':<44}{'gas':>12}{'of 30M':>9}")
    rows = [("baseline drawCommittee (16 seats)", base_draw), ("baseline resolve (16 votes)", base_resolve)]
    rows += [(f"worst drawCommittee round {r + 1} ({SEATS << r} seats)", g) for r, g in enumerate(draws)]
    rows += [(f"worst resolve round {r + 1}" + (" (escalates)" if r < 2 else f" ({seats} seats slashed)"), g)
             for r, g in enumerate(resolves)]
    rows += [("commitChallenge (seal)", seal_gas), ("challenge (reveal, opens the dispute)", reveal_gas)]
    for label, gas in rows:
        print(f"{label:<44}{gas:>12,}{gas / BLOCK_GAS:>9.1%}")
    print(f"runtime {time.time() - t0:.1f}s")
    out = {
        "committee_size": SEATS,
        "seats_worst_case": seats,
        "baseline_draw_gas": base_draw,
        "baseline_resolve_gas": base_resolve,
        "worst_draw_gas": draws,
        "worst_resolve_gas": resolves,
        "worst_step_over_block": round(max(draws + resolves) / BLOCK_GAS, 4),
        "worst_resolve_over_baseline_resolve": round(resolves[-1] / base_resolve, 2),
        "challenge_seal_gas": seal_gas,
        "challenge_reveal_gas": reveal_gas,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
