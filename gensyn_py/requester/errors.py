"""What a requester can be refused, each a specific `GensynError` with the numbers that matter."""

from __future__ import annotations

from gensyn_py.errors import GensynError, SpecError, VerificationError


class DatasetError(SpecError):
    """The spec's dataset is not in the store, or its bytes do not match what the spec declares."""


class SubmitError(GensynError):
    """The job's terms (price, collateral, windows) are not acceptable to the deployed pool."""


class InsufficientFunds(SubmitError):
    """The account cannot pay the escrow (or has no ether for gas); nothing was sent."""

    def __init__(self, message: str, need: int = 0, have: int = 0) -> None:
        super().__init__(message)
        self.need = need
        self.have = have

    @property
    def shortfall(self) -> int:
        return max(0, self.need - self.have)


class JobNotReady(GensynError):
    """The job has no final model yet (not completed), or is not this account's to act on."""


class DownloadRefused(VerificationError):
    """The model's bytes could not be fetched intact or do not match the chain; nothing was written."""
