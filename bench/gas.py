"""Gas benchmark of the on-chain protocol: honest lifecycles played with real transactions on anvil.

Prints a per-action table, then ONE JSON line (last) with:
  unit_lifecycle_gas  1 round x 1 shard job, submitJob .. finalize with two validator verdicts
                      (submitJob + claim + commit + drawValidators + 2 commitVerdict + 2 revealVerdict + finalize;
                      claimCredit is NOT included)
  job_4x4_gas         4 rounds x 4 shards job (16 training + 4 aggregation units), submitJob until every unit is
                      final (claimCredit not included)
  gas_by_action       gas per action of that first 1x1 lifecycle
  dispute_gas_by_action  a committee dispute over an honest unit that a validator wrongly rejects: the
                      rejecting revealVerdict (it opens the dispute), drawCommittee (3 seats, each locking its bond),
                      each commitVote and revealVote, and resolve (settles the unit and the members)
  partial_commit_gas  commitPartial on an assigned 4-segment unit (issue 11, off the honest path): "first"
                      (writes the unit's partial slots from zero) and "next" (the same solver's larger partial,
                      slots already written); an honest solver that never commits partially pays none of it
  replay_class_gas    the 1x1 job, warm, in repro then exact mode with every node of one replay class: lifecycle,
                      claim and drawValidators gas of each (exact binds the unit to the solver's class at claim)
  availability_gas_by_action  the data-availability paths (bench/availability_gas.py): a validator's
                      "unavailable" report, the solver's answer, the answered validator's reveal, a requester's
                      claim and its answer, and closeVerdicts slashing a solver that left reports unanswered
  taskpool_runtime_bytes  deployed (runtime) code size of TaskPool, read from the chain (limit 24,576;
                      the linked libraries' code is not in it: their sizes are printed in the table)
The 1x1 job is the first job on a fresh deployment (cold: first credit slot of every account); the same job
played again is reported as unit_lifecycle_gas_warm.

Usage: .venv/bin/python -m bench.gas   (or .venv/bin/python bench/gas.py)
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

from eth_account import Account  # noqa: E402
from eth_account.signers.local import LocalAccount  # noqa: E402
from eth_utils import keccak  # noqa: E402
from web3 import Web3  # noqa: E402

from bench.availability_gas import play_availability  # noqa: E402
from gensyn_py.crypto.merkle import merkle_root  # noqa: E402
from gensyn_py.devnet.anvil import DEV_KEYS, AnvilNode  # noqa: E402
from gensyn_py.devnet.compiler import compile_contracts  # noqa: E402
from tests.contracts.flows import vote_salt  # noqa: E402
from tests.contracts.helpers import (  # noqa: E402
    Protocol,
    Work,
    transcript_commit,
)

COMPLETED = 2  # JobStatus.Completed


class GasProtocol(Protocol):
    """Protocol that records (action, gasUsed) of every transaction it sends."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.log: list[tuple[str, int]] = []

    def tx(self, acct: LocalAccount, fn: Any) -> Any:
        receipt = super().tx(acct, fn)
        self.log.append((str(fn.fn_name), int(receipt["gasUsed"])))
        return receipt


def honest_unit(p: GasProtocol, unit_id: int, solver: LocalAccount, work: Work, keeper: LocalAccount) -> None:
    """claim, commit, draw, every drawn validator commits then reveals an accept, finalize."""
    p.advance(p.params["claimWindow"])  # the required claim score has decayed to 0
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.tx(solver, p.pool.functions.commit(unit_id, work.root, work.final_hash, "bafymanifest"))
    p.mine(2)
    p.tx(keeper, p.pool.functions.drawValidators(unit_id))
    validators = p.unit(unit_id)["validators"]
    plan = []
    for i, v in enumerate(validators):
        seg = p.segment_of(unit_id, i)
        th = work.segments[seg][2]
        salt = keccak(b"salt" + bytes.fromhex(v[2:]))
        plan.append((v, seg, th, salt))
        p.tx(p.by_address(v), p.pool.functions.commitVerdict(unit_id, p.verdict_hash(unit_id, v, True, th, salt)))
    for v, seg, th, salt in plan:
        start, end, tc = work.segments[seg]
        fn = p.pool.functions.revealVerdict(unit_id, True, th, salt, start, end, transcript_commit(tc), work.proof(seg))
        p.tx(p.by_address(v), fn)
    p.advance(p.params["challengeWindow"] + 1)
    p.tx(keeper, p.pool.functions.finalize(unit_id))


def play_job(p: GasProtocol, requester: LocalAccount, solver: LocalAccount, keeper: LocalAccount, **kw: Any) -> int:
    """Submit a job and play every unit honestly until the job is Completed; returns the gas of all its txs."""
    start = len(p.log)
    first = p.pool.functions.nextUnitId().call()
    job = p.submit(requester, **kw)
    train = Work.honest(kw.get("stepsPerUnit", 8) // kw.get("checkpointInterval", 2))
    agg = Work.honest(1, tag=b"agg")
    done = first
    while p.pool.functions.jobState(job).call()[1] != COMPLETED:
        end = p.pool.functions.nextUnitId().call()
        if end == done:
            raise RuntimeError("job stuck: no new units")
        for uid in range(done, end):
            shard = p.unit(uid)["shard"]
            honest_unit(p, uid, solver, agg if shard == 2**32 - 1 else train, keeper)
        done = end
    p.check_conservation()
    return sum(g for _, g in p.log[start:])


def play_dispute(p: GasProtocol, requester: LocalAccount, solver: LocalAccount, keeper: LocalAccount) -> dict[str, int]:
    """An honest unit, its first validator rejects (dispute), the committee seals, reveals "honest", resolve."""
    unit_id = p.pool.functions.nextUnitId().call()
    p.submit(requester)
    work = Work.honest(4)
    p.advance(p.params["claimWindow"])
    p.tx(solver, p.pool.functions.claim(unit_id))
    p.tx(solver, p.pool.functions.commit(unit_id, work.root, work.final_hash, "bafymanifest"))
    p.mine(2)
    p.tx(keeper, p.pool.functions.drawValidators(unit_id))
    v = p.unit(unit_id)["validators"][0]
    seg, th, salt = p.segment_of(unit_id, 0), keccak(b"wrong"), keccak(b"salt")
    p.tx(p.by_address(v), p.pool.functions.commitVerdict(unit_id, p.verdict_hash(unit_id, v, False, th, salt)))
    p.advance(p.params["verdictCommitWindow"] + 1)
    start, end, tc = work.segments[seg]
    mark = len(p.log)
    p.tx(p.by_address(v), p.pool.functions.revealVerdict(
        unit_id, False, th, salt, start, end, transcript_commit(tc), work.proof(seg)))
    did = p.unit(unit_id)["disputeId"]
    p.mine(2)
    p.tx(keeper, p.committee.functions.drawCommittee(did))
    members = p.committee.functions.membersOf(did).call()
    for m in members:
        p.tx(p.by_address(m), p.committee.functions.commitVote(did, p.vote_hash(did, m, True, vote_salt(did, m))))
    for m in members:
        p.tx(p.by_address(m), p.committee.functions.revealVote(did, True, vote_salt(did, m)))
    p.tx(keeper, p.committee.functions.resolve(did))
    p.check_conservation()
    out: dict[str, int] = {}
    counts: dict[str, int] = {}
    for name, gas in p.log[mark:]:
        counts[name] = counts.get(name, 0) + 1
        label = "revealVerdict(reject: opens the dispute)" if name == "revealVerdict" else name
        out[label if name not in ("commitVote", "revealVote") else f"{name}#{counts[name]}"] = gas
    return out


def play_partials(p: GasProtocol, requester: LocalAccount, solver: LocalAccount) -> dict[str, int]:
    """A unit claimed, then two partial commits (1, then 2 of its 4 segments): their gas."""
    unit_id = p.pool.functions.nextUnitId().call()
    p.submit(requester)
    work = Work.honest(4)
    p.advance(p.params["claimWindow"])
    p.tx(solver, p.pool.functions.claim(unit_id))
    cid = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"  # a partial manifest's CID (59 chars)
    out: dict[str, int] = {}
    for label, k in (("first", 1), ("next", 2)):
        p.tx(solver, p.pool.functions.commitPartial(unit_id, merkle_root(work.leaves()[:k]), k, cid))
        out[label] = p.log[-1][1]
    return out


def play_exact(p: GasProtocol, requester: LocalAccount, solver: LocalAccount, keeper: LocalAccount) -> dict[str, int]:
    """The 1x1 job in `exact` mode (warm), the solver and every validator of one replay class, beside the same job
    in `repro` mode played right before it: the exact claim binds the unit to the solver's class (one registry
    call, one SSTORE, one event); the draw reads the class's set."""
    description = '{"device":"cpu","torch":"bench"}'
    for who in [solver, *p.accounts[3:8]]:
        p.tx(who, p.registry.functions.setReplayClass(description))
    out: dict[str, int] = {}
    for mode, verification in (("repro", 0), ("exact", 1)):
        start = len(p.log)
        out[f"{mode}_unit_lifecycle_gas_warm"] = play_job(p, requester, solver, keeper, verification=verification)
        for name, gas in p.log[start:]:
            if name in ("claim", "drawValidators"):
                out[f"{mode}_{name}"] = gas
    return out


def main() -> None:
    t0 = time.time()
    artifacts = compile_contracts()
    sizes = {n: (len(a.get("deployedBytecode", a.get("bin-runtime", ""))) - 2) // 2 for n, a in artifacts.items()}
    with AnvilNode() as node:
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 30}))
        accounts = [Account.from_key(k) for k in DEV_KEYS]
        p = GasProtocol(w3, accounts, artifacts)
        p.standard_cast()
        requester, solver, keeper = accounts[1], accounts[2], accounts[9]
        runtime_bytes = len(w3.eth.get_code(p.pool.address))

        # first job on a fresh deployment: pays first-use costs (first credit slot of each account, ...)
        start = len(p.log)
        unit_gas = play_job(p, requester, solver, keeper)
        unit_log = p.log[start:]
        warm_gas = play_job(p, requester, solver, keeper)  # same job again, every account already has credit
        job_4x4 = play_job(p, requester, solver, keeper, rounds=4, shards=4)
        units_4x4 = 4 * 4 + 4
        dispute = play_dispute(p, requester, solver, keeper)
        partials = play_partials(p, requester, solver)
        exact = play_exact(p, requester, solver, keeper)
        availability = play_availability(p, requester, solver, keeper)  # last: it jails the solver

    by_action: dict[str, int] = {}
    counts: dict[str, int] = {}
    rows: list[tuple[str, int]] = []
    for name, gas in unit_log:
        counts[name] = counts.get(name, 0) + 1
        label = name if name not in ("commitVerdict", "revealVerdict") else f"{name}#{counts[name]}"
        rows.append((label, gas))
        by_action[label] = gas
    print("1 round x 1 shard job, 2 validators (claimCredit not included)")
    print(f"{'action':<20}{'gas':>12}")
    for label, gas in rows:
        print(f"{label:<20}{gas:>12,}")
    print(f"{'total':<20}{unit_gas:>12,}")
    print(f"{'same job, warm':<20}{warm_gas:>12,}")
    print(f"4x4 job ({units_4x4} units incl. 4 aggregation units): {job_4x4:,} gas, {job_4x4 // units_4x4:,} per unit")
    print("a committee dispute (3 members, all reveal; an honest unit wrongly rejected)")
    for label, gas in dispute.items():
        print(f"{label:<42}{gas:>12,}")
    print(f"commitPartial: first {partials['first']:,} gas, next {partials['next']:,} gas (off the honest path)")
    print("the 1x1 job again, warm, every node of one replay class: repro vs exact")
    for label, gas in exact.items():
        print(f"{label:<42}{gas:>12,}")
    print("data availability (a report answered, a requester claim answered, reports left unanswered)")
    for label, gas in availability.items():
        print(f"{label:<42}{gas:>12,}")
    print(f"TaskPool runtime code on chain: {runtime_bytes:,} bytes (limit 24,576)")
    for name in ("TaskPool", "Units", "Disputes", "DataAvailability", "NodeRegistry", "DisputeCommittee"):
        if name in sizes:
            print(f"{name} deployed bytecode: {sizes[name]:,} bytes (limit 24,576)")
    print(f"runtime {time.time() - t0:.1f}s")
    out = {
        "unit_lifecycle_gas": unit_gas,
        "unit_lifecycle_gas_warm": warm_gas,
        "job_4x4_gas": job_4x4,
        "gas_by_action": by_action,
        "dispute_gas_by_action": dispute,
        "partial_commit_gas": partials,
        "replay_class_gas": exact,
        "availability_gas_by_action": availability,
        "taskpool_runtime_bytes": runtime_bytes,
        "note": "claimCredit not included",
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
