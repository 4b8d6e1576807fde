"""Turn raw revert data into a `ContractRevert` that names the Solidity error.

`ErrorDecoder` is built once from every ABI the protocol knows about, so an
error bubbling up from a callee (a token's `ERC20InsufficientBalance` raised
inside a pool call) is still decoded by name. `Error(string)` and
`Panic(uint256)` are always known.

web3 7 reports reverts in several shapes (`ContractCustomError`,
`ContractLogicError`, `ContractPanicError`, `Web3RPCError`, and the raw
`{"message", "data"}` dict some nodes send); `revert_data()` digs the raw
bytes out of any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eth_abi import decode as abi_decode
from eth_abi.exceptions import DecodingError
from eth_utils import keccak, to_checksum_address
from eth_utils.abi import collapse_if_tuple
from hexbytes import HexBytes

from gensyn_py.errors import ContractRevert

log = logging.getLogger(__name__)

ERROR_STRING_SELECTOR = bytes.fromhex("08c379a0")  # Error(string)
PANIC_SELECTOR = bytes.fromhex("4e487b71")  # Panic(uint256)

# https://docs.soliditylang.org/en/latest/control-structures.html#panic-via-assert-and-error-via-require
PANIC_CODES: dict[int, str] = {
    0x00: "generic compiler-inserted panic",
    0x01: "assert() failed",
    0x11: "arithmetic overflow or underflow",
    0x12: "division or modulo by zero",
    0x21: "conversion to an invalid enum value",
    0x22: "incorrectly encoded storage byte array",
    0x31: "pop() on an empty array",
    0x32: "array index out of bounds",
    0x41: "out of memory (allocation too large)",
    0x51: "call to a zero-initialized internal function",
}


@dataclass(frozen=True)
class ErrorSpec:
    """One custom error: its name, canonical signature and inputs."""

    name: str
    signature: str
    types: tuple[str, ...]
    names: tuple[str, ...]

    @property
    def selector(self) -> bytes:
        return keccak(text=self.signature)[:4]


def error_spec(entry: Mapping[str, Any]) -> ErrorSpec:
    """The `ErrorSpec` of one ABI entry of type "error"."""
    inputs = entry.get("inputs", [])
    types = tuple(collapse_if_tuple(dict(i)) for i in inputs)
    names = tuple(i.get("name") or f"arg{n}" for n, i in enumerate(inputs))
    return ErrorSpec(entry["name"], f"{entry['name']}({','.join(types)})", types, names)


def _normalize(abi_type: str, value: Any) -> Any:
    """Checksum addresses (eth_abi returns them lower-case), also inside fixed/dynamic arrays."""
    if abi_type == "address" and isinstance(value, str):
        return to_checksum_address(value)
    if abi_type.endswith("]") and isinstance(value, (list, tuple)):
        inner = abi_type[: abi_type.rindex("[")]
        return [_normalize(inner, v) for v in value]
    return value


def _as_bytes(data: bytes | str | None) -> bytes:
    if data is None:
        return b""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    text = data.strip()
    if text.startswith("Reverted "):  # ganache-style prefix
        text = text[len("Reverted ") :]
    try:
        return bytes(HexBytes(text))
    except ValueError:
        return b""


def revert_data(exc: BaseException) -> bytes | None:
    """The raw revert bytes carried by a web3 exception, or None when it carries none.

    Empty bytes mean the node said "reverted" without data (a bare `revert()`,
    or an invalid opcode); None means the exception is not a revert we can read.
    """
    candidates: list[Any] = []
    data = getattr(exc, "data", None)
    if data is not None:
        candidates.append(data)
    rpc_response = getattr(exc, "rpc_response", None)
    if isinstance(rpc_response, Mapping):
        error = rpc_response.get("error")
        if isinstance(error, Mapping):
            candidates.append(error.get("data"))
    for arg in getattr(exc, "args", ()):
        if isinstance(arg, Mapping):
            candidates.append(arg.get("data"))
    for candidate in candidates:
        found = _dig(candidate)
        if found is not None:
            return found
    message = str(exc).lower()
    if "revert" in message:
        return b""
    return None


def _dig(candidate: Any, depth: int = 0) -> bytes | None:
    """Find hex revert data in a string or (nested) dict the node sent."""
    if depth > 3 or candidate is None:
        return None
    if isinstance(candidate, (bytes, bytearray)):
        return bytes(candidate)
    if isinstance(candidate, str):
        text = candidate[len("Reverted ") :] if candidate.startswith("Reverted ") else candidate
        if text.startswith("0x"):
            return _as_bytes(text)
        return None
    if isinstance(candidate, Mapping):
        for key in ("data", "return", "result", "originalError"):
            if key in candidate:
                found = _dig(candidate[key], depth + 1)
                if found is not None:
                    return found
        for value in candidate.values():  # ganache: {"0x<txhash>": {"return": "0x..."}}
            if isinstance(value, Mapping):
                found = _dig(value, depth + 1)
                if found is not None:
                    return found
    return None


class ErrorDecoder:
    """Maps 4-byte selectors of every custom error in a set of ABIs to their specs."""

    def __init__(self, abis: Iterable[Sequence[Mapping[str, Any]]] = ()) -> None:
        self._specs: dict[bytes, ErrorSpec] = {}
        for abi in abis:
            self.add_abi(abi)

    def add_abi(self, abi: Sequence[Mapping[str, Any]]) -> None:
        for entry in abi:
            if entry.get("type") != "error":
                continue
            spec = error_spec(entry)
            known = self._specs.get(spec.selector)
            if known is not None and known.signature != spec.signature:
                log.warning("selector clash: %s and %s share 0x%s", known.signature, spec.signature,
                            spec.selector.hex())
                continue
            self._specs.setdefault(spec.selector, spec)

    @property
    def errors(self) -> dict[str, ErrorSpec]:
        """Known custom errors, keyed by signature."""
        return {s.signature: s for s in self._specs.values()}

    def spec(self, selector: bytes | str) -> ErrorSpec | None:
        return self._specs.get(_as_bytes(selector) if isinstance(selector, str) else selector)

    def decode(self, data: bytes | str | None) -> ContractRevert:
        """Decode revert data into a `ContractRevert` named after the error."""
        raw = _as_bytes(data)
        if not raw:
            return ContractRevert("Revert", {}, "reverted without data (bare revert or invalid opcode)")
        selector, body = raw[:4], raw[4:]
        try:
            if selector == ERROR_STRING_SELECTOR:
                (reason,) = abi_decode(["string"], body)
                return ContractRevert("Error", {"message": reason}, f"reverted: {reason}")
            if selector == PANIC_SELECTOR:
                (code,) = abi_decode(["uint256"], body)
                meaning = PANIC_CODES.get(code, "unknown panic code")
                message = f"reverted with Panic(0x{code:02x}): {meaning}"
                return ContractRevert("Panic", {"code": code, "meaning": meaning}, message)
            spec = self._specs.get(selector)
            if spec is not None:
                values = abi_decode(list(spec.types), body)
                args = {n: _normalize(t, v) for n, t, v in zip(spec.names, spec.types, values, strict=True)}
                return ContractRevert(spec.name, args)
        except DecodingError as exc:
            return ContractRevert(
                "MalformedRevert", {"selector": "0x" + selector.hex(), "data": "0x" + raw.hex()},
                f"revert data for selector 0x{selector.hex()} does not decode: {exc}",
            )
        return ContractRevert(
            "UnknownError", {"selector": "0x" + selector.hex(), "data": "0x" + raw.hex()},
            f"reverted with unknown error selector 0x{selector.hex()}",
        )

    def from_exception(self, exc: BaseException) -> ContractRevert | None:
        """A decoded `ContractRevert` if `exc` is a revert web3 raised, else None."""
        if isinstance(exc, ContractRevert):
            return exc
        data = revert_data(exc)
        if data is None:
            return None
        return self.decode(data)
