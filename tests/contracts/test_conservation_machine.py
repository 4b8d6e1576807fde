"""A hypothesis state machine plays random protocol actions against anvil and checks
money conservation after every step (and that nothing honest is ever slashed)."""

from __future__ import annotations

from typing import Any

from eth_utils import keccak
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from gensyn_py.errors import ContractRevert, TransactionError
from tests.contracts.flows import commit_verdicts, reveal
from tests.contracts.helpers import ASSIGNED, COMMITTED, DISPUTED, FINAL, OPEN, SOLVER, VERIFIED, Protocol, Work

TRUTH = Work.honest(4)
FAKE = Work([(s, e, keccak(b"fake" + t)) for s, e, t in TRUTH.segments])
AGG_TRUTH = Work.honest(1, b"agg")
AGG_FAKE = Work([(s, e, keccak(b"fake" + t)) for s, e, t in AGG_TRUTH.segments])


def make_machine(p: Protocol) -> type[RuleBasedStateMachine]:
    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.p = p
            self.snap = p.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
            self.solvers = [p.accounts[2], p.accounts[9]]
            if p.registry.functions.rolesOf(p.accounts[9].address).call() == 0:
                p.node(p.accounts[9], SOLVER, price=150 * 10**18)
            self.honest: dict[int, bool] = {}
            self.cheaters: set[str] = set()

        def teardown(self) -> None:
            self.p.w3.provider.make_request("evm_revert", [self.snap])  # type: ignore[arg-type]

        def _units(self, status: int) -> list[int]:
            n = self.p.pool.functions.nextUnitId().call()
            return [u for u in range(1, n) if self.p.unit(u)["status"] == status]

        def _try(self, acct: Any, fn: Any) -> bool:
            try:
                self.p.tx(acct, fn)
                return True
            except (ContractRevert, TransactionError):  # a mined failure: a deadline passed between call and mine
                return False

        def _work(self, unit_id: int) -> Work:
            agg = self.p.unit(unit_id)["shard"] == 2**32 - 1
            if self.honest.get(unit_id, True):
                return AGG_TRUTH if agg else TRUTH
            return AGG_FAKE if agg else FAKE

        @rule(shards=st.integers(1, 2), rounds=st.integers(1, 2))
        def submit(self, shards: int, rounds: int) -> None:
            self.p.submit(self.p.accounts[1], shards=shards, rounds=rounds)

        @rule(seconds=st.sampled_from([15, 70, 700]))
        def advance(self, seconds: int) -> None:
            self.p.advance(seconds)

        @rule(who=st.integers(0, 1), wait=st.booleans())
        def claim(self, who: int, wait: bool) -> None:
            if wait:
                self.p.advance(self.p.params["claimWindow"])
            for u in self._units(OPEN)[:1]:
                self._try(self.solvers[who], self.p.pool.functions.claim(u))

        @rule(honest=st.booleans(), lazy=st.booleans(), vote_truth=st.booleans(), who=st.integers(0, 1))
        def drive_one_unit(self, honest: bool, lazy: bool, vote_truth: bool, who: int) -> None:
            """Push the oldest unfinished unit through every stage it can reach now."""
            self.claim(who, True)
            self.commit(honest)
            self.verify(lazy)
            self.resolve(vote_truth)
            self.p.advance(self.p.params["revealWindow"] + self.p.params["verdictCommitWindow"] + 1)
            self.close()
            self.resolve(vote_truth)
            self.p.advance(self.p.params["challengeWindow"] + 1)
            self.finalize()

        @rule()
        def timeout(self) -> None:
            for u in self._units(ASSIGNED):
                self._try(self.p.accounts[0], self.p.pool.functions.timeoutClaim(u))

        @rule(honest=st.booleans())
        def commit(self, honest: bool) -> None:
            for u in self._units(ASSIGNED)[:1]:
                self.honest[u] = honest
                w = self._work(u)
                solver = self.p.by_address(self.p.unit(u)["solver"])
                if self._try(solver, self.p.pool.functions.commit(u, w.root, w.final_hash, "m")) and not honest:
                    self.cheaters.add(solver.address)

        @rule(lazy=st.booleans())
        def verify(self, lazy: bool) -> None:
            p = self.p
            for u in self._units(COMMITTED)[:1]:
                p.mine(2)
                unit = p.unit(u)
                if not unit["drawn"]:
                    self._try(p.accounts[0], p.pool.functions.drawValidators(u))
                    unit = p.unit(u)
                if unit["status"] != COMMITTED or not unit["drawn"] or unit["committed"]:
                    continue
                work, truth = self._work(u), (AGG_TRUTH if unit["shard"] == 2**32 - 1 else TRUTH)
                vs = unit["validators"] if not lazy else unit["validators"][:1]  # lazy: one validator no-shows
                verdicts = {}
                for v in vs:
                    seg = p.segment_of(u, unit["validators"].index(v))
                    verdicts[v] = (self.honest.get(u, True), truth.segments[seg][2])
                if p.w3.eth.get_block("latest")["timestamp"] > unit["commitDeadline"]:
                    continue
                commit_verdicts(p, u, verdicts)
                if lazy:
                    p.advance(p.params["verdictCommitWindow"] + 1)
                for v, (acc, th) in verdicts.items():
                    if p.unit(u)["status"] == COMMITTED:
                        reveal(p, u, v, acc, th, work)

        @rule()
        def close(self) -> None:
            for u in self._units(COMMITTED):
                self._try(self.p.accounts[0], self.p.pool.functions.closeVerdicts(u))

        @rule(vote_truth=st.booleans())
        def resolve(self, vote_truth: bool) -> None:
            p = self.p
            for u in self._units(DISPUTED)[:1]:
                did = p.unit(u)["disputeId"]
                p.mine(2)
                self._try(p.accounts[0], p.committee.functions.drawCommittee(did))
                if vote_truth:
                    for m in p.committee.functions.membersOf(did).call():
                        self._try(p.by_address(m), p.committee.functions.vote(did, self.honest.get(u, True)))
                else:
                    p.advance(p.params["votingPeriod"] + 1)
                self._try(p.accounts[0], p.committee.functions.resolve(did))

        @rule()
        def finalize(self) -> None:
            for u in self._units(VERIFIED):
                self._try(self.p.accounts[0], self.p.pool.functions.finalize(u))

        @rule()
        def cancel(self) -> None:
            for j in range(1, self.p.pool.functions.nextJobId().call()):
                if self._try(self.p.accounts[1], self.p.pool.functions.cancelJob(j)):
                    return

        @rule(idx=st.integers(1, 9))
        def claim_credit(self, idx: int) -> None:
            self._try(self.p.accounts[idx], self.p.pool.functions.claimCredit())

        @invariant()
        def conserved(self) -> None:
            self.p.check_conservation()

        @invariant()
        def honest_solvers_are_never_jailed(self) -> None:
            for s in self.solvers:
                (_, _, frauds) = self.p.registry.functions.reputationOf(s.address).call()
                if frauds:
                    assert s.address in self.cheaters

    return Machine


def test_random_protocol_plays_conserve_money(proto: Protocol) -> None:
    """Seeded random walks over the machine's rules (hypothesis's own search kept sequences too short)."""
    import random

    machine_cls = make_machine(proto)
    reached: set[int] = set()
    for seed in range(3):
        rng = random.Random(seed)
        m = machine_cls()
        try:
            for _ in range(25):
                step = rng.choice(
                    [
                        "submit",
                        "drive",
                        "drive",
                        "drive",
                        "advance",
                        "claim",
                        "commit",
                        "verify",
                        "close",
                        "resolve",
                        "finalize",
                        "cancel",
                        "timeout",
                        "credit",
                    ]
                )
                if step == "submit" or (
                    not m._units(OPEN) and not any(m._units(s) for s in (ASSIGNED, COMMITTED, DISPUTED, VERIFIED))
                ):
                    m.submit(rng.randint(1, 2), rng.randint(1, 2))
                elif step == "drive":
                    m.drive_one_unit(rng.random() < 0.7, rng.random() < 0.3, rng.random() < 0.8, rng.randint(0, 1))
                elif step == "advance":
                    m.advance(rng.choice([15, 70, 700]))
                elif step == "claim":
                    m.claim(rng.randint(0, 1), rng.random() < 0.5)
                elif step == "commit":
                    m.commit(rng.random() < 0.7)
                elif step == "verify":
                    m.verify(rng.random() < 0.3)
                elif step == "close":
                    m.close()
                elif step == "resolve":
                    m.resolve(rng.random() < 0.8)
                elif step == "finalize":
                    m.finalize()
                elif step == "cancel" and rng.random() < 0.3:
                    m.cancel()
                elif step == "timeout":
                    m.timeout()
                elif step == "credit":
                    m.claim_credit(rng.randint(1, 9))
                m.conserved()
                m.honest_solvers_are_never_jailed()
                n = proto.pool.functions.nextUnitId().call()
                reached |= {proto.unit(u)["status"] for u in range(1, n)}
        finally:
            m.teardown()
    assert {OPEN, FINAL} <= reached  # the walk really went through the lifecycle
