"""The package's exception tree: one root, specific subclasses.

The library never prints; the CLI turns a GensynError into one clear line.
"""


class GensynError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(GensynError):
    """A setting is missing or malformed."""


class ToolchainError(GensynError):
    """A required external tool (solc, anvil, node, an IPFS daemon) is missing or failed."""


class CompileError(ToolchainError):
    """The Solidity compiler reported errors."""


class ChainError(GensynError):
    """The RPC node is unreachable or answered something unusable."""


class TransactionError(ChainError):
    """A transaction could not be sent or was mined but failed."""


class ContractRevert(TransactionError):
    """A call reverted; `name` is the decoded custom error (or Error/Panic), `args` its values."""

    def __init__(self, name: str, args: dict[str, object] | None = None, message: str | None = None):
        self.name = name
        self.error_args = dict(args or {})
        rendered = ", ".join(f"{k}={v}" for k, v in self.error_args.items())
        super().__init__(message or f"reverted with {name}({rendered})")


class StorageError(GensynError):
    """The content store failed."""


class ContentNotFound(StorageError):
    """No bytes for a content id could be had (within the timeout)."""


class ContentMismatch(StorageError):
    """Bytes fetched for a content id do not hash to that id (or to the expected hash)."""


class SpecError(GensynError):
    """A job spec is malformed or asks for something the registry does not have."""


class TrainingError(GensynError):
    """Training could not run as specified."""


class VerificationError(GensynError):
    """A commitment, proof or replay did not check out."""
