"""Replay classes (issue 11, "honest nodes convict each other on mixed hardware").

`exact` mode is bit-exact only between machines of one replay class (device, driver, torch build, BLAS, CPU
features). An exact unit is bound at claim to its solver's class: only validators of that class are drawn,
and only they sit on its dispute committee; a repro unit is replayed by anyone. Each attack test checks that
nobody honest lost and no cheater gained.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak

from tests.contracts.flows import challenge, claim_and_commit, commit_verdicts, committee_votes, honest_unit, reveal
from tests.contracts.helpers import DISPUTED, E18, FINAL, SOLVER, VALIDATOR, Protocol, Work
from tests.contracts.test_registry import expect

EXACT, REPRO = 1, 0
# Two real-looking class descriptions (what `gensyn_py.node.replay_class` measures), e.g. an H100 and an A100.
A = '{"device":"cuda","gpu":"NVIDIA H100","capability":"9.0","driver":"550.54","torch":"2.4.0"}'
B = '{"device":"cuda","gpu":"NVIDIA A100","capability":"8.0","driver":"535.10","torch":"2.4.0"}'
ID_A, ID_B = keccak(text=A), keccak(text=B)


def set_class(p: Protocol, who: LocalAccount, description: str) -> None:
    rc = p.tx(who, p.registry.functions.setReplayClass(description))
    (ev,) = p.events(rc, p.registry, "ReplayClassSet")
    assert ev["args"]["replayClass"] == keccak(text=description) and ev["args"]["description"] == description


def set_count(p: Protocol, class_id: bytes) -> int:
    return int(p.registry.functions.validatorCountIn(class_id).call())


@contextmanager
def validators_of(p: Protocol, description: str, n: int, tag: bytes) -> Iterator[list[LocalAccount]]:
    """`n` more validators (device class 1) of the replay class `description`."""
    new = [Account.from_key(keccak(tag + bytes([i]))) for i in range(n)]
    for a in new:
        p.w3.provider.make_request("anvil_setBalance", [a.address, hex(10**21)])  # type: ignore[arg-type]
        p.accounts.append(a)
    try:
        for a in new:
            p.node(a, VALIDATOR)
            set_class(p, a, description)
        yield new
    finally:
        for a in new:
            p.accounts.remove(a)


def two_classes(p: Protocol) -> tuple[list[str], list[str]]:
    """Solver 2 and validators 3, 4 are class A; validators 5, 6, 7 are class B. Returns (A, B) validators."""
    a = p.accounts
    for who in (a[2], a[3], a[4]):
        set_class(p, who, A)
    for who in (a[5], a[6], a[7]):
        set_class(p, who, B)
    return [a[3].address, a[4].address], [a[5].address, a[6].address, a[7].address]


def holdings(p: Protocol, who: str) -> int:
    """Everything `who` owns in the protocol's token: wallet, stake and pool credit."""
    return (p.token.functions.balanceOf(who).call() + p.registry.functions.bondedOf(who).call()
            + p.registry.functions.unbondingOf(who).call()[0] + p.pool.functions.credit(who).call())


def test_the_registry_keeps_class_sets_in_step_with_the_validator_set(proto: Protocol) -> None:
    p = proto
    a = p.accounts
    assert p.registry.functions.replayClassOf(a[3].address).call() == bytes(32)
    set_class(p, a[3], A)
    assert p.registry.functions.replayClassOf(a[3].address).call() == ID_A and set_count(p, ID_A) == 1
    set_class(p, a[2], A)  # a solver: declared, but in no validator set
    assert set_count(p, ID_A) == 1
    assert p.registry.functions.classPeers(a[2].address).call() == [ID_A, 1]
    assert p.registry.functions.classPeers(a[3].address).call() == [ID_A, 0]  # itself does not count
    expect(p, "ReplayClassUnchanged", a[3], p.registry.functions.setReplayClass(A))
    expect(p, "NotRegistered", a[9], p.registry.functions.setReplayClass(A))
    rc = p.tx(a[3], p.registry.functions.setReplayClass(B))  # hardware changed: moves set
    assert [e["args"]["replayClass"] for e in p.events(rc, p.registry, "ClassSetLeft")] == [ID_A]
    assert [e["args"]["replayClass"] for e in p.events(rc, p.registry, "ClassSetJoined")] == [ID_B]
    assert (set_count(p, ID_A), set_count(p, ID_B)) == (0, 1)
    p.tx(a[3], p.registry.functions.leaveValidatorSet())  # leaving the validator set leaves the class set
    assert set_count(p, ID_B) == 0
    p.tx(a[3], p.registry.functions.joinValidatorSet())
    assert set_count(p, ID_B) == 1
    p.tx(a[3], p.registry.functions.setReplayClass(""))  # cleared
    assert set_count(p, ID_B) == 0 and p.registry.functions.replayClassOf(a[3].address).call() == bytes(32)
    # The device-class set is the same registry API under key 1.
    assert set_count(p, (1).to_bytes(32, "big")) == p.registry.functions.validatorCount(1).call() == 5


def test_an_exact_unit_is_validated_only_within_its_solvers_class(proto: Protocol) -> None:
    p = proto
    in_a, _ = two_classes(p)
    with validators_of(p, B, 6, b"class B extra"):  # class B outnumbers A 9 to 2
        p.submit(p.accounts[1], verification=EXACT)
        for _ in range(5):  # several seeds: never a B validator
            snap = p.w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
            claim_and_commit(p, 1, p.accounts[2], Work.honest(4))
            assert sorted(p.unit(1)["validators"]) == sorted(in_a)
            p.w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]
            p.mine(1)
        honest_unit(p, 1, p.accounts[2], Work.honest(4))
        assert p.unit(1)["status"] == FINAL


def test_a_repro_unit_is_validated_by_anyone(proto: Protocol) -> None:
    p = proto
    _, in_b = two_classes(p)
    with validators_of(p, B, 6, b"class B extra") as extra:
        b_side = set(in_b) | {x.address for x in extra}
        p.submit(p.accounts[1], verification=REPRO)
        seen: set[str] = set()
        for _ in range(5):
            snap = p.w3.provider.make_request("evm_snapshot", [])  # type: ignore[arg-type]
            claim_and_commit(p, 1, p.accounts[2], Work.honest(4))
            seen |= set(p.unit(1)["validators"])
            p.w3.provider.make_request("evm_revert", [snap["result"]])  # type: ignore[arg-type]
            p.mine(1)
        assert seen & b_side  # other classes are drawn too


def test_an_exact_claim_needs_a_class_and_another_validator_of_it(proto: Protocol) -> None:
    p = proto
    a = p.accounts
    p.submit(a[1], verification=EXACT)
    p.advance(p.params["claimWindow"])
    err = expect(p, "NoReplayClass", a[2], p.pool.functions.claim(1))
    assert err.error_args["node"] == a[2].address
    set_class(p, a[2], A)  # no validator of class A yet
    err = expect(p, "NoClassValidators", a[2], p.pool.functions.claim(1))
    assert err.error_args["replayClass"] == ID_A
    # A solver that is itself the class's only validator cannot validate its own unit either.
    p.node(a[9], SOLVER | VALIDATOR)
    set_class(p, a[9], B)
    expect(p, "NoClassValidators", a[9], p.pool.functions.claim(1))
    set_class(p, a[3], A)
    rc = p.tx(a[2], p.pool.functions.claim(1))
    (ev,) = p.events(rc, p.pool, "UnitClassBound")
    assert (ev["args"]["unitId"], ev["args"]["solver"], ev["args"]["replayClass"]) == (1, a[2].address, ID_A)
    p.check_conservation()
    expect(p, "InvalidJobParams", a[1], p.pool.functions.submitJob(p.job_params(verification=2)))


def test_a_class_change_after_the_claim_changes_nobody_drawn(proto: Protocol) -> None:
    p = proto
    a = p.accounts
    in_a, _ = two_classes(p)
    p.submit(a[1], verification=EXACT)
    p.advance(p.params["claimWindow"])
    p.tx(a[2], p.pool.functions.claim(1))
    set_class(p, a[2], B)  # the solver moves to class B after claiming
    set_class(p, a[5], A)  # and a B validator moves into A after the claim: not a candidate (frozen)
    w = Work.honest(4)
    p.tx(a[2], p.pool.functions.commit(1, w.root, w.final_hash, "bafymanifest"))
    p.mine(2)
    p.tx(a[9], p.pool.functions.drawValidators(1))
    assert sorted(p.unit(1)["validators"]) == sorted(in_a)
    p.check_conservation()


def test_an_exact_units_committee_is_drawn_within_its_class(proto: Protocol) -> None:
    p = proto
    in_a, _ = two_classes(p)
    with validators_of(p, A, 4, b"class A extra") as more_a, validators_of(p, B, 8, b"class B extra"):
        p.submit(p.accounts[1], verification=EXACT, collateralPerUnit=100 * E18, maxPricePerUnit=100 * E18)
        w = Work.honest(4)
        claim_and_commit(p, 1, p.accounts[2], w)
        va = p.unit(1)["validators"][0]
        commit_verdicts(p, 1, {va: (False, keccak(b"wrong"))})
        p.advance(p.params["verdictCommitWindow"] + 1)
        reveal(p, 1, va, False, keccak(b"wrong"), w)
        did = p.unit(1)["disputeId"]
        d = p.dispute(did)
        assert d["replayClass"] == ID_A and d["candidates"] == 6
        p.mine(2)
        p.tx(p.accounts[9], p.committee.functions.drawCommittee(did))
        members = p.committee.functions.membersOf(did).call()
        assert members and set(members) <= set(in_a) | {x.address for x in more_a}  # 11 of class B: none
        # Same-class members replay the honest bits and say so: the honest solver is never convicted.
        committee_votes(p, did, {m: True for m in members})
        p.tx(p.accounts[9], p.committee.functions.resolve(did))
        assert p.registry.functions.reputationOf(p.accounts[2].address).call()[2] == 0  # no fraud recorded
        assert not p.registry.functions.isJailed(p.accounts[2].address).call()
        p.check_conservation()


def test_honest_nodes_of_two_classes_are_never_paired_on_an_exact_unit(proto: Protocol) -> None:
    """The attack of the issue, played: an honest solver of class A, honest validators mostly of class B, an
    exact unit. A B validator's replay of A's stock kernels differs in the last bits, so before classes it
    rejected, its class-mates on the committee voted fraud and the honest solver was slashed. Now B never
    validates it: A's validators accept, the unit finalizes, nobody honest loses and nobody gains unpaid."""
    p = proto
    a = p.accounts
    in_a, in_b = two_classes(p)
    with validators_of(p, B, 6, b"class B extra") as extra:
        everyone_b = in_b + [x.address for x in extra]
        before = {x: holdings(p, x) for x in [a[1].address, a[2].address, *in_a, *everyone_b]}
        p.submit(a[1], verification=EXACT)
        honest_unit(p, 1, a[2], Work.honest(4))
        assert p.unit(1)["status"] == FINAL and p.unit(1)["status"] != DISPUTED
        price, fee = p.unit(1)["price"], p.params["validatorFee"]
        after = {x: holdings(p, x) for x in before}
        assert after[a[2].address] == before[a[2].address] + price  # the honest solver is paid, not slashed
        for v in in_a:
            assert after[v] == before[v] + fee
        for v in everyone_b:  # never paired, never touched
            assert after[v] == before[v]
        # The requester paid exactly the solver and the fees; its unspent budget is credited back.
        assert before[a[1].address] - after[a[1].address] == price + 2 * fee
        for v in everyone_b:
            assert p.registry.functions.reputationOf(v).call() == [0, 0, 0]
        p.check_conservation()


def test_an_exact_unit_is_challenged_only_from_its_class(proto: Protocol) -> None:
    """A class-B challenger's replay of class-A work differs honestly: its challenge is refused before it posts a
    bond (it would lose it to an honest solver); a class-A challenger may challenge."""
    p = proto
    a = p.accounts
    two_classes(p)
    p.submit(a[1], verification=EXACT)
    honest = Work.honest(4)
    claim_and_commit(p, 1, a[2], honest)
    validators = p.unit(1)["validators"]
    truth = {v: (True, honest.segments[p.segment_of(1, i)][2]) for i, v in enumerate(validators)}
    commit_verdicts(p, 1, truth)
    for v, (acc, th) in truth.items():
        reveal(p, 1, v, acc, th, honest)
    challenger = a[8]
    before = holdings(p, challenger.address)
    sealed = b"\x01" * 32  # refused at the seal already, before anything is revealed or bonded
    err = expect(p, "WrongReplayClass", challenger, p.pool.functions.commitChallenge(1, sealed))
    assert (err.error_args["have"], err.error_args["need"]) == (bytes(32), ID_A)
    set_class(p, challenger, B)
    err = expect(p, "WrongReplayClass", challenger, p.pool.functions.commitChallenge(1, sealed))
    assert err.error_args["have"] == ID_B
    assert holdings(p, challenger.address) == before  # refused before any bond moved
    set_class(p, challenger, A)
    challenge(p, challenger, 1, 0)
    assert p.unit(1)["status"] == DISPUTED
    p.check_conservation()
