"""Python mirrors of the contracts' enums and constants."""

from __future__ import annotations

from enum import IntEnum

ROLE_SOLVER = 1
ROLE_VALIDATOR = 2
ROLE_CHALLENGER = 4

# Device classes as the registry stores them (uint8); exact replay needs the same class.
DEVICE_CLASSES: dict[str, int] = {"cpu": 1, "cuda": 2}

# The shard number of a round's aggregation unit (type(uint32).max in TaskPool).
AGGREGATION_SHARD = 2**32 - 1


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


class Outcome(IntEnum):
    NONE = 0
    SOLVER_HONEST = 1
    SOLVER_FRAUD = 2
    NO_QUORUM = 3
