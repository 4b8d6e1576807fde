"""Python mirrors of the contracts' structs, enums and constants.

Each struct is a frozen dataclass whose fields are the Solidity fields (in
`contracts/types/*.sol`, or a view's named outputs in `contracts/interfaces/*.sol`)
in snake_case and in the same order, so one generic `from_abi` decodes what a
view returns and `to_abi` builds what a function takes. A struct read by its
id carries that id as a leading field that is not part of the Solidity struct
(`Unit.unit_id`, `Dispute.dispute_id`). `tests/unit/test_types_mirror.py`
checks every mirror against the shipped ABIs, field by field.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Self

ROLE_SOLVER = 1
ROLE_VALIDATOR = 2
ROLE_CHALLENGER = 4

# NodeRegistry permission bits (`PERM_*` in contracts/NodeRegistry.sol), granted per contract by `wire`.
PERM_STAKE_ANY = 1  # lock, unlock and slash any node's stake
PERM_STAKE_OWN = 2  # lock free stake; unlock and slash only what this caller locked itself
PERM_COMPLETED = 4  # recordCompleted / unlockCompleted
PERM_MISSED = 8  # recordMissed
PERM_FRAUD = 16  # recordFraud (jails for jailPeriod)

# Device classes as the registry stores them (uint8). Exact replay needs more: the same replay class.
DEVICE_CLASSES: dict[str, int] = {"cpu": 1, "cuda": 2}

# `JobParams.verification` (VERIFY_* in contracts/types/Types.sol): a repro unit is replayed by anyone, an exact
# unit only within its solver's replay class (`gensyn_py.node.replay_class`).
VERIFY_REPRO = 0
VERIFY_EXACT = 1
VERIFICATION_MODES: dict[str, int] = {"repro": VERIFY_REPRO, "exact": VERIFY_EXACT}
NO_CLASS = bytes(32)


def device_set_key(device_class: int) -> bytes:
    """The registry's key (`validatorCountIn`) of a device class's validator set; a replay class is its own key."""
    return device_class.to_bytes(32, "big")

# The shard number of a round's aggregation unit (type(uint32).max in TaskPool).
AGGREGATION_SHARD = 2**32 - 1

# Data availability (contracts/libraries/DataAvailability.sol, `Verdicts.UNAVAILABLE_MARK`): a validator that
# cannot fetch its data seals a reject whose transcriptHash is this marker; the requester's claim is answered
# as slot 255. Verdict slot states (`Verdicts.*`, read with `TaskPool.verdictState`).
UNAVAILABLE_MARK = bytes.fromhex("d4aafd10313cd05dfe33e46d9dcccf37a4beed1ddf9f82bb71681b014ec50bf2")
REQUESTER_SLOT = 255
VERDICT_NONE, VERDICT_COMMITTED, VERDICT_ACCEPT, VERDICT_REJECT, VERDICT_SKIPPED = 0, 1, 2, 3, 4
VERDICT_UNAVAILABLE, VERDICT_ANSWERED = 5, 6

# Upper bounds TaskPool puts on a job (`Units.MAX_*` in contracts/libraries/Units.sol): `submitJob` refuses a
# job past one with JobParamTooLarge(field, value, max). tests/unit/test_job_bounds.py holds them equal.
MAX_ROUNDS = 10_000
MAX_SHARDS = 128  # training units per round, all opened in one transaction
MAX_STEPS_PER_UNIT = 10_000_000
MAX_SEGMENTS = 4096  # stepsPerUnit / checkpointInterval: checkpoint segments of one unit
MAX_COMMIT_WINDOW = 30 * 24 * 3600  # seconds from claim to commit deadline (30 days)


class JobStatus(IntEnum):
    NONE = 0
    ACTIVE = 1
    COMPLETED = 2
    CANCELLED = 3


class UnitStatus(IntEnum):
    NONE = 0
    OPEN = 1
    ASSIGNED = 2
    COMMITTED = 3
    VERIFIED = 4
    DISPUTED = 5
    FINAL = 6
    CANCELLED = 7
    VOIDED = 8  # an earlier phase it was built on was overturned (`UnitVoided`)


class Outcome(IntEnum):
    NONE = 0
    SOLVER_HONEST = 1
    SOLVER_FRAUD = 2
    NO_QUORUM = 3


class Vote(IntEnum):
    """`DisputeCommittee.voteOf`: what a member voted (a uint8 on-chain)."""

    NONE = 0
    SOLVER_HONEST = 1
    SOLVER_FRAUD = 2


class Struct:
    """Decoding and encoding shared by the mirrors: the dataclass fields, in order, are the Solidity fields."""

    KEY_FIELDS: ClassVar[int] = 0  # leading fields that are not in the Solidity struct (the id it was read under)

    @classmethod
    def from_abi(cls, values: Sequence[Any], *key: Any) -> Self:
        """From what web3 returns for the struct (a tuple in field order), after the `key` fields."""
        layout = struct_fields(cls)
        if len(key) != cls.KEY_FIELDS or len(values) != len(layout):
            raise ValueError(f"{cls.__name__} takes {cls.KEY_FIELDS} key and {len(layout)} struct values, "
                             f"got {len(key)} and {len(values)}")
        return cls(*key, *(convert(v) for (_, convert), v in zip(layout, values, strict=True)))

    def to_abi(self) -> tuple[Any, ...]:
        """The struct as a function argument: its Solidity fields in order (nested structs as tuples)."""
        values = (getattr(self, name) for name, _ in struct_fields(type(self)))
        return tuple(v.to_abi() if isinstance(v, Struct) else v for v in values)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Self:
        """From a mapping keyed by the Solidity (camelCase) names, e.g. a deployment record's `params`."""
        return cls(*(convert(values[solidity_name(name)]) for name, convert in struct_fields(cls)))


def solidity_name(field: str) -> str:
    """`price_per_unit` -> `pricePerUnit`."""
    head, *rest = field.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


_FIELDS: dict[type, tuple[tuple[str, Callable[[Any], Any]], ...]] = {}


def struct_fields(cls: type[Struct]) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """(name, converter from the ABI value) of each Solidity field of a mirror, in order."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        fields = dataclasses.fields(typing.cast(Any, cls))[cls.KEY_FIELDS:]
        _FIELDS[cls] = tuple((f.name, _converter(hints[f.name])) for f in fields)
    return _FIELDS[cls]


def _converter(tp: Any) -> Callable[[Any], Any]:
    if typing.get_origin(tp) is tuple:
        inner = _converter(typing.get_args(tp)[0])
        return lambda v: tuple(inner(x) for x in v)
    if isinstance(tp, type) and issubclass(tp, Struct):
        return tp.from_abi
    if tp in (bool, int, str, bytes) or (isinstance(tp, type) and issubclass(tp, IntEnum)):
        return typing.cast(Callable[[Any], Any], tp)
    raise TypeError(f"no ABI conversion for {tp!r}")


@dataclass(frozen=True)
class Hardware(Struct):
    """A node's declared hardware (`NodeRegistry.register`, `hardwareOf`)."""

    device_class: int
    memory_mb: int
    throughput: int
    price_per_unit: int


@dataclass(frozen=True)
class JobParams(Struct):
    """What a requester submits (`TaskPool.submitJob`)."""

    spec_hash: bytes
    spec_cid: str
    rounds: int
    shards: int
    steps_per_unit: int
    checkpoint_interval: int
    device_class: int
    min_memory_mb: int
    min_throughput: int
    max_price_per_unit: int
    collateral_per_unit: int
    commit_window: int  # seconds a solver has between claim and commit
    verification: int = 0  # VERIFY_REPRO: anyone replays; VERIFY_EXACT: only the solver's replay class
    steps_root: bytes = bytes(32)  # repro only: the step table's root (`proof/step_table.py`); zero: none


@dataclass(frozen=True)
class PoolParams(Struct):
    """A TaskPool's protocol parameters, fixed at deployment (`TaskPool.params`)."""

    validators_per_unit: int
    liveness_penalty_bps: int
    committee_reward_bps: int
    claim_window: int
    verdict_commit_window: int
    reveal_window: int
    challenge_window: int
    min_commit_window: int
    validator_fee: int
    validator_bond: int
    challenge_bond: int


@dataclass(frozen=True)
class JobState(Struct):
    """A job's current state (`TaskPool.jobState`)."""

    requester: str
    status: JobStatus
    round: int
    agg_phase: bool
    pending: int  # units of the newest armed phase not yet verified (round, agg_phase name it)
    escrow: int


@dataclass(frozen=True)
class PhaseState(Struct):
    """Which phase of a job is being paid (`TaskPool.phaseState`; pipelined rounds, docs/contracts.md)."""

    settling: int  # the oldest phase with a unit not yet final: only its units can be finalized
    unsettled: int  # its units not yet final
    live: int  # units opened and not yet final, cancelled or voided


@dataclass(frozen=True)
class Unit(Struct):
    """A work unit (`TaskPool.getUnit`), with the id it was read under."""

    KEY_FIELDS: ClassVar[int] = 1

    unit_id: int
    job_id: int
    round: int
    shard: int  # AGGREGATION_SHARD for a round's aggregation unit
    status: UnitStatus
    solver: str
    price: int
    opened_at: int
    deadline: int  # Assigned: commit deadline; Verified: challenge end
    seed_block: int
    commit_deadline: int  # of the verdicts
    reveal_deadline: int
    drawn: bool
    committed: int  # verdicts committed
    revealed: int  # verdicts revealed
    checkpoint_root: bytes
    seed: bytes
    opener: str
    challenger: str
    dispute_id: int
    validators: tuple[str, ...]

    @property
    def is_aggregation(self) -> bool:
        return self.shard == AGGREGATION_SHARD


@dataclass(frozen=True)
class UnitPartial(Struct):
    """A unit's latest partial commitment (`TaskPool.partialOf`): zero address and 0 segments if none."""

    solver: str
    root: bytes
    segments: int


@dataclass(frozen=True)
class PartialRef:
    """One on-chain partial commitment, as its `UnitPartialCommitted` event records it (issue 11)."""

    solver: str
    root: bytes
    segments: int
    manifest_cid: str = ""


@dataclass(frozen=True)
class Availability(Struct):
    """A unit's data-availability state (`TaskPool.availability`, contracts/types/Pool.sol)."""

    answer_by: int  # the solver answers pending reports (or the requester's claim) until then
    reveal_by: int  # answered reporters reveal their real verdicts until then
    resume: int  # requester claim: the challenge end it suspended
    pending: int  # validator reports not answered yet
    claimed: bool  # the requester raised its claim on this attempt
    claim_pending: bool  # ... not answered yet


@dataclass(frozen=True)
class SegmentLeaf(Struct):
    """One segment's leaf of a unit's commitment with its Merkle proof (contracts/types/Types.sol)."""

    index: int
    start_hash: bytes
    end_hash: bytes
    transcript_commit: bytes
    proof: tuple[bytes, ...]


@dataclass(frozen=True)
class ClaimScore(Struct):
    """A node's claim score for a unit and the score currently required (`TaskPool.claimScore`), in bps."""

    score: int
    required: int

    @property
    def eligible(self) -> bool:
        return self.score >= self.required


@dataclass(frozen=True)
class Reputation(Struct):
    """A node's counters (`NodeRegistry.reputationOf`)."""

    completed: int
    missed: int
    frauds: int


@dataclass(frozen=True)
class ClaimInfo:
    """`NodeRegistry.claimInfo`: what `TaskPool.claim` checks of a solver and scores it on (one call)."""

    roles: int
    jailed: bool  # jailed until it calls `unjail` (a jail term, over or not)
    hardware: Hardware
    reputation: Reputation


@dataclass(frozen=True)
class Standing:
    """Whether a node may serve: jail term and validator-set membership (`NodeRegistry.jailedUntil`,
    `isValidator`, `bondedOf` against `minValidatorStake`). Not one ABI struct: built by `registry.standing`."""

    jailed_until: int  # 0 = not jailed; otherwise jailed until `unjail()` after this time
    in_validator_set: bool
    bonded: int
    min_validator_stake: int

    @property
    def jailed(self) -> bool:
        return self.jailed_until != 0

    def may_unjail(self, now: int) -> bool:
        """Jailed and the term is over: `unjail()` would succeed at chain time `now`."""
        return self.jailed and now >= self.jailed_until


@dataclass(frozen=True)
class Unbonding(Struct):
    """Stake queued for withdrawal (`NodeRegistry.unbondingOf`)."""

    amount: int
    release: int


@dataclass(frozen=True)
class Dispute(Struct):
    """A dispute over a unit as the committee keeps it (`DisputeCommittee.getDispute`), with its id."""

    KEY_FIELDS: ClassVar[int] = 1

    dispute_id: int
    unit_id: int
    solver: str
    opener: str
    device_class: int
    round: int  # current round, 0-based; each escalation doubles the seats
    drawn: bool  # the current round's seats are drawn
    resolved: bool
    candidates: int
    open_block: int
    seed_block: int  # the current round draws from blockhash(seed_block)
    commit_deadline: int  # current round: draw and seal votes until then
    deadline: int  # current round: reveal until then; `resolve` always succeeds after it
    round_first: int  # index in `members` of the current round's first seat
    committed: int  # current round
    revealed: int  # current round
    yes_weight: int
    no_weight: int
    seated_weight: int
    replay_class: bytes  # an exact unit's solver's class, the committee's only set; zero bytes for repro
    members: tuple[str, ...]  # every seat of every round

    @property
    def round_members(self) -> tuple[str, ...]:
        """The current round's seats (the only ones that can still seal or reveal)."""
        return self.members[self.round_first:]


@dataclass(frozen=True)
class Seat(Struct):
    """A member's seat in a dispute (`DisputeCommittee.seatOf`)."""

    round: int  # round + 1 it was drawn in; 0 = not seated
    vote: int  # 0 = not revealed, 1 = solver honest, 2 = fraud
    committed: bool
    commitment: bytes
