"""A hypothesis RuleBasedStateMachine over the whole protocol on anvil.

Several actors (2 requesters, 2 solvers, 5 validators, 1 challenger) register, stake, unbond, withdraw,
submit and cancel jobs, claim credit, and push units through their lifecycle. Sequences get past
Open because one rule, `progress(unit)`, performs whatever the next legal step of a chosen unit is
(claim; commit honest or cheating / let it time out; draw; verdicts truthful, lazy or lying;
finalize or challenge; committee votes truthful, lying, partial or silent + resolve), the choice drawn
from `data`. Time-advance rules and a `sweep` rule take the timeout exits (timeoutClaim, closeVerdicts,
resolve after the voting deadline, finalize after the challenge window).

Jobs live in a Bundle; units are created on chain phase by phase (not by a rule), so `progress` draws
a unit id from the ones that exist. Each example starts from an evm_snapshot and reverts at teardown.

After every step: money conservation (helpers.check_conservation) and total-supply conservation over
all actors; no fraud is recorded against anybody while everyone was honest, and no stake is slashed
while everyone was honest and on time. At teardown everything is driven to a terminal state, every
actor claims its credit, unbonds and withdraws, and the protocol contracts must hold exactly zero tokens
with every total view zero."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from eth_utils import keccak
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from gensyn_py.chain.pool import challenge_hash
from gensyn_py.errors import ContractRevert, TransactionError
from tests.contracts.flows import commit_verdicts, committee_votes, reveal
from tests.contracts.helpers import (
    ASSIGNED,
    CANCELLED,
    COMMITTED,
    DISPUTED,
    E18,
    FINAL,
    OPEN,
    SOLVER,
    VERIFIED,
    Protocol,
    Work,
)

TRUTH = Work.honest(4)
FAKE = Work([(s, e, keccak(b"fake" + t)) for s, e, t in TRUTH.segments])
AGG_TRUTH = Work.honest(1, b"agg")
AGG_FAKE = Work([(s, e, keccak(b"fake" + t)) for s, e, t in AGG_TRUTH.segments])
AGG_SHARD = 2**32 - 1
VOIDED = 8
ENDED = (FINAL, CANCELLED, VOIDED)  # a voided unit was built on an overturned one; its phase opened anew
MAX_JOBS = 4
REACHED: set[int] = set()  # unit statuses reached over all examples (sanity: the machine goes deep)
REFUSED: dict[str, int] = {}  # revert names met by _try, for the summary


def make_machine(p: Protocol) -> type[RuleBasedStateMachine]:
    acc = p.accounts
    requesters = [acc[1], acc[0]]
    solvers = [acc[2], acc[9]]
    validators = acc[3:8]
    challenger = acc[8]
    nodes = [*solvers, *validators, challenger]
    actors = list(acc)
    keeper = acc[9]  # anyone may call the timeout exits

    class Machine(RuleBasedStateMachine):
        jobs = Bundle("jobs")

        def __init__(self) -> None:
            super().__init__()
            self.snap = p.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
            self.honest: dict[int, bool] = {}
            self.cheaters: set[str] = set()
            self.dishonest = False  # a cheating commit, a lying verdict or a lying committee vote happened
            self.late = False  # a missed commit or a verdict no-show happened (liveness penalties are due)
            self.njobs = 0
            self.deposit = {n.address: self._stake_of(n.address) for n in nodes}  # stake in - stake out
            self.supply = p.token.functions.totalSupply().call()

        # ---------------------------------------------------------------- helpers
        def _stake_of(self, addr: str) -> int:
            return p.registry.functions.bondedOf(addr).call() + p.registry.functions.unbondingOf(addr).call()[0]

        def _try(self, acct: Any, fn: Any) -> Any:
            try:
                return p.tx(acct, fn)
            except ContractRevert as e:
                key = f"{fn.fn_name}:{e.name}"
                REFUSED[key] = REFUSED.get(key, 0) + 1
                return None
            except TransactionError:
                return None

        def _draw(self, u: int) -> None:
            """Draw unit u's validators. A seed left unused for 256 blocks (long examples mine that many) is the
            solver's liveness fault: the unit reopens and the solver pays the penalty (`SeedExpired`)."""
            rc = self._try(keeper, p.pool.functions.drawValidators(u))
            if rc is not None and p.events(rc, p.pool, "SeedExpired"):
                self.late = True

        def _now(self) -> int:
            return int(p.w3.eth.get_block("latest")["timestamp"])

        def _units(self) -> list[int]:
            return list(range(1, p.pool.functions.nextUnitId().call()))

        def _work(self, u: int, honest: bool | None = None) -> Work:
            agg = p.unit(u)["shard"] == AGG_SHARD
            honest = self.honest.get(u, True) if honest is None else honest
            if honest:
                return AGG_TRUTH if agg else TRUTH
            return AGG_FAKE if agg else FAKE

        def _truth(self, u: int) -> Work:
            return self._work(u, True)

        # ---------------------------------------------------------------- actors' rules
        @initialize(target=jobs, who=st.integers(0, 1), rounds=st.integers(1, 2), shards=st.integers(1, 2))
        def first_job(self, who: int, rounds: int, shards: int) -> int:
            """Every example starts with a job. Hypothesis turns a random subset of rules off in each example
            (swarm testing) but never an initialize rule: with `submit` off in all 8 examples (about 1 run in
            250), nothing was ever submitted and the run played only stake moves (seen in CI)."""
            return self._submit(who, rounds, shards)

        @precondition(lambda self: self.njobs < MAX_JOBS)
        @rule(target=jobs, who=st.integers(0, 1), rounds=st.integers(1, 2), shards=st.integers(1, 2))
        def submit(self, who: int, rounds: int, shards: int) -> int:
            return self._submit(who, rounds, shards)

        def _submit(self, who: int, rounds: int, shards: int) -> int:
            self.njobs += 1
            job = p.submit(requesters[who], rounds=rounds, shards=shards)
            REACHED.update(p.unit(u)["status"] for u in self._units())  # a new job's units start Open
            return job

        @rule(job=jobs, who=st.integers(0, 1))
        def cancel(self, job: int, who: int) -> None:
            self._try(requesters[who], p.pool.functions.cancelJob(job))

        @rule(who=st.integers(0, len(actors) - 1))
        def claim_credit(self, who: int) -> None:
            self._try(actors[who], p.pool.functions.claimCredit())

        @rule(
            who=st.integers(0, len(nodes) - 1),
            op=st.sampled_from(["stake", "unbond", "withdraw"]),
            amount=st.sampled_from([1, 100, 700]),
        )
        def stake_op(self, who: int, op: str, amount: int) -> None:
            n = nodes[who]
            if op == "stake":
                if self._try(n, p.registry.functions.stake(amount * E18)):
                    self.deposit[n.address] += amount * E18
            elif op == "unbond":
                self._try(n, p.registry.functions.unbond(amount * E18))
            else:
                out = p.registry.functions.unbondingOf(n.address).call()[0]
                if self._try(n, p.registry.functions.withdraw()):
                    self.deposit[n.address] -= out

        @rule(seconds=st.sampled_from([5, 31, 61, 125, 601]))
        def advance(self, seconds: int) -> None:
            p.advance(seconds)

        @rule()
        def sweep(self) -> None:
            """Every timeout exit that is due now."""
            now = self._now()
            for u in self._units():
                unit = p.unit(u)
                st_ = unit["status"]
                if st_ == ASSIGNED and now > unit["deadline"]:
                    if self._try(keeper, p.pool.functions.timeoutClaim(u)):
                        self.late = True
                elif st_ == COMMITTED and unit["drawn"] and now > unit["revealDeadline"]:
                    if self._try(keeper, p.pool.functions.closeVerdicts(u)) and unit["revealed"] < len(
                        unit["validators"]
                    ):
                        self.late = True
                elif st_ == VERIFIED and now > unit["deadline"]:
                    self._try(keeper, p.pool.functions.finalize(u))
                elif st_ == DISPUTED:
                    self._try(keeper, p.committee.functions.resolve(unit["disputeId"]))

        # ---------------------------------------------------------------- progress one unit
        # progress is the rule that moves the protocol; it is listed several times to weigh it up
        @precondition(lambda self: self.njobs > 0)
        @rule(data=st.data())
        def progress(self, data: st.DataObject) -> None:
            self._progress(data)

        @precondition(lambda self: self.njobs > 0)
        @rule(data=st.data())
        def progress_again(self, data: st.DataObject) -> None:
            self._progress(data)

        @precondition(lambda self: self.njobs > 0)
        @rule(data=st.data())
        def progress_more(self, data: st.DataObject) -> None:
            self._progress(data)

        @precondition(lambda self: self.njobs > 0)
        @rule(data=st.data())
        def progress_further(self, data: st.DataObject) -> None:
            self._progress(data)

        def _progress(self, data: st.DataObject) -> None:
            units = [u for u in self._units() if p.unit(u)["status"] not in ENDED]
            if not units:
                return
            u = data.draw(st.sampled_from(units), label="unit")
            unit = p.unit(u)
            status = unit["status"]
            if status == OPEN:
                self._claim(u, data.draw(st.integers(0, 1), label="solver"))
            elif status == ASSIGNED:
                how = data.draw(st.sampled_from(["honest", "honest", "cheat", "timeout"]), label="commit")
                self._commit(u, unit, how)
            elif status == COMMITTED and not unit["drawn"]:
                p.mine(2)
                self._draw(u)
            elif status == COMMITTED:
                how = data.draw(st.sampled_from(["truth", "truth", "lazy", "lie"]), label="verdicts")
                self._verdicts(u, unit, how)
            elif status == VERIFIED:
                how = data.draw(st.sampled_from(["finalize", "finalize", "challenge"]), label="verified")
                if how == "challenge" and self._now() < unit["deadline"]:
                    n = p.pool.functions.numSegments(u).call()
                    seg = data.draw(st.integers(0, n - 1), label="segment")
                    salt = u.to_bytes(32, "big")
                    sealed = challenge_hash(u, challenger.address, seg, salt)
                    if self._try(challenger, p.pool.functions.commitChallenge(u, sealed)) is not None:
                        self._try(challenger, p.pool.functions.challenge(u, seg, salt))
                else:
                    if self._now() <= unit["deadline"]:
                        p.advance(unit["deadline"] - self._now() + 1)
                    self._try(keeper, p.pool.functions.finalize(u))
            elif status == DISPUTED:
                how = data.draw(st.sampled_from(["truth", "truth", "lie", "partial", "silent"]), label="votes")
                self._dispute(u, unit, how)
            REACHED.add(p.unit(u)["status"])

        def _claim(self, u: int, who: int) -> None:
            for s in (solvers[who], solvers[1 - who]):
                score, required = p.pool.functions.claimScore(s.address, u).call()
                if score < required:
                    p.advance(p.params["claimWindow"])
                if self._try(s, p.pool.functions.claim(u)):
                    return

        def _commit(self, u: int, unit: dict[str, Any], how: str) -> None:
            solver = p.by_address(unit["solver"])
            if how == "timeout" or self._now() > unit["deadline"]:
                p.advance(max(0, unit["deadline"] - self._now()) + 1)
                if self._try(keeper, p.pool.functions.timeoutClaim(u)):
                    self.late = True
                return
            w = self._work(u, how == "honest")
            if self._try(solver, p.pool.functions.commit(u, w.root, w.final_hash, "bafymanifest")):
                self.honest[u] = how == "honest"
                if how == "cheat":
                    self.cheaters.add(solver.address)
                    self.dishonest = True

        def _verdicts(self, u: int, unit: dict[str, Any], how: str) -> None:
            vs = unit["validators"]
            honest = self.honest.get(u, True)
            work, truth = self._work(u), self._truth(u)
            if vs and self._now() <= unit["commitDeadline"] and unit["committed"] == 0:
                verdicts: dict[str, tuple[bool, bytes]] = {}
                for i, v in enumerate(vs):
                    seg = p.segment_of(u, i)
                    verdicts[v] = (honest, truth.segments[seg][2])  # truthful: accept iff the work is honest
                if how == "lie":  # validator 0 says the opposite (a lying accept copies the committed transcript)
                    seg0 = p.segment_of(u, 0)
                    verdicts[vs[0]] = (not honest, work.segments[seg0][2])
                    self.dishonest = True
                if how == "lazy" and len(vs) > 1:
                    verdicts = {vs[0]: verdicts[vs[0]]}
                try:
                    commit_verdicts(p, u, verdicts)
                    if len(verdicts) < len(vs):
                        p.advance(max(0, unit["commitDeadline"] - self._now()) + 1)
                    for v, (accept, th) in verdicts.items():
                        if p.unit(u)["status"] != COMMITTED:
                            break
                        reveal(p, u, v, accept, th, work)
                except (ContractRevert, TransactionError):
                    pass
            unit = p.unit(u)
            if unit["status"] == COMMITTED and unit["drawn"]:  # someone did not reveal: close after the deadline
                if self._now() <= unit["revealDeadline"]:
                    p.advance(unit["revealDeadline"] - self._now() + 1)
                if self._try(keeper, p.pool.functions.closeVerdicts(u)):
                    self.late = True

        def _dispute(self, u: int, unit: dict[str, Any], how: str) -> None:
            did = unit["disputeId"]
            p.mine(2)
            self._try(keeper, p.committee.functions.drawCommittee(did))
            members = p.committee.functions.membersOf(did).call()
            truth = self.honest.get(u, True)
            if how in ("truth", "lie"):
                if how == "lie" and members:
                    self.dishonest = True
                votes = dict.fromkeys(members, truth if how == "truth" else not truth)
                with contextlib.suppress(ContractRevert, TransactionError):
                    committee_votes(p, did, votes)
            elif how == "partial" and members:
                with contextlib.suppress(ContractRevert, TransactionError):
                    committee_votes(p, did, {members[0]: truth})
            if how not in ("truth", "lie") and members:
                self.late = True  # a silent member loses part of its locked stake: a fault, not fraud
            if self._try(keeper, p.committee.functions.resolve(did)) is None:
                p.advance(p.params["votingPeriod"] + p.params["voteRevealPeriod"] + 1)
                self._try(keeper, p.committee.functions.resolve(did))

        # ---------------------------------------------------------------- invariants
        @invariant()
        def conserved_and_nobody_honest_slashed(self) -> None:
            p.check_conservation()
            for s in solvers:  # a lying committee (self.dishonest) can convict an honest solver
                if p.registry.functions.reputationOf(s.address).call()[2] and not self.dishonest:
                    assert s.address in self.cheaters
            if not self.dishonest and not self.late:  # honest and on time: every node's stake is intact
                assert p.registry.functions.totalStaked().call() == sum(self.deposit.values())

        def _all_held(self) -> None:
            held = sum(p.token.functions.balanceOf(a.address).call() for a in actors)
            held += sum(p.token.functions.balanceOf(c.address).call() for c in (p.pool, p.registry, p.committee))
            assert held == self.supply == p.token.functions.totalSupply().call()

        def _nobody_convicted_if_honest(self) -> None:
            if not self.dishonest:
                for n in nodes:
                    assert p.registry.functions.reputationOf(n.address).call()[2] == 0
                    assert not p.registry.functions.isJailed(n.address).call()
                    if not self.late:
                        assert self._stake_of(n.address) == self.deposit[n.address], n.address

        # ---------------------------------------------------------------- teardown: drain everything
        def teardown(self) -> None:
            try:
                self._drain()
            finally:
                p.w3.provider.make_request("evm_revert", [self.snap])  # type: ignore[arg-type]

        def _drain(self) -> None:
            self._all_held()
            self._nobody_convicted_if_honest()
            for j in range(1, p.pool.functions.nextJobId().call()):
                requester = p.by_address(p.pool.functions.jobState(j).call()[0])
                self._try(requester, p.pool.functions.cancelJob(j))
            for _ in range(12):
                live = [u for u in self._units() if p.unit(u)["status"] not in ENDED]
                if not live:
                    break
                for u in live:
                    unit = p.unit(u)
                    if unit["status"] == COMMITTED and not unit["drawn"]:
                        p.mine(2)
                        self._draw(u)
                    elif unit["status"] == DISPUTED:
                        p.mine(2)
                        self._try(keeper, p.committee.functions.drawCommittee(unit["disputeId"]))
                REACHED.update(p.unit(u)["status"] for u in live)
                p.advance(p.params["votingPeriod"] + p.params["revealWindow"] + p.params["verdictCommitWindow"] + 61)
                self.sweep()
                p.check_conservation()
            for u in self._units():
                REACHED.add(p.unit(u)["status"])
                assert p.unit(u)["status"] in ENDED, (u, p.unit(u)["status"])
            for j in range(1, p.pool.functions.nextJobId().call()):
                assert p.pool.functions.jobState(j).call()[1] in (2, 3)  # Completed or Cancelled
            assert p.pool.functions.totalEscrow().call() == 0
            assert p.pool.functions.totalBonds().call() == 0
            for a in actors:
                if p.pool.functions.credit(a.address).call():
                    p.tx(a, p.pool.functions.claimCredit())
            assert p.pool.functions.totalCredit().call() == 0
            for n in nodes:
                assert p.registry.functions.lockedOf(n.address).call() == 0, n.address
                free = p.registry.functions.freeStakeOf(n.address).call()
                if free:
                    p.tx(n, p.registry.functions.unbond(free))
            p.advance(p.params["unbondingDelay"] + 1)
            for n in nodes:
                if p.registry.functions.unbondingOf(n.address).call()[0]:
                    p.tx(n, p.registry.functions.withdraw())
            # nothing left anywhere in the protocol: every token is back with an actor
            for c in (p.pool, p.registry, p.committee):
                assert p.token.functions.balanceOf(c.address).call() == 0
            assert p.registry.functions.totalStaked().call() == 0
            assert p.pool.functions.totalCredit().call() == 0
            self._all_held()

    return Machine


def test_protocol_state_machine(proto: Protocol) -> None:
    p = proto
    if p.registry.functions.rolesOf(p.accounts[9].address).call() == 0:
        p.node(p.accounts[9], SOLVER, price=150 * E18)
    p.fund(p.accounts[0], 100_000 * E18)  # the deployer is the second requester
    REACHED.clear()
    REFUSED.clear()
    machine = make_machine(p)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=int(os.environ.get("SM_EXAMPLES", "8")),
            stateful_step_count=int(os.environ.get("SM_STEPS", "40")),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    print("reached", sorted(REACHED), "refused", sorted(REFUSED.items()))
    assert {OPEN, ASSIGNED, FINAL} <= REACHED, REACHED  # the machine really went through the lifecycle
