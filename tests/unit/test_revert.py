"""ErrorDecoder: raw revert bytes (encoded here with eth_abi) back to named errors."""

from __future__ import annotations

from typing import Any

import pytest
from eth_abi import encode
from eth_utils import keccak, to_checksum_address
from hypothesis import given
from hypothesis import strategies as st
from web3.exceptions import ContractCustomError, ContractLogicError, ContractPanicError, Web3RPCError

from gensyn_py.chain.revert import PANIC_CODES, ErrorDecoder, revert_data
from gensyn_py.errors import ContractRevert

TOKEN_ABI: list[dict[str, Any]] = [
    {
        "type": "error",
        "name": "ERC20InsufficientBalance",
        "inputs": [
            {"name": "sender", "type": "address"},
            {"name": "balance", "type": "uint256"},
            {"name": "needed", "type": "uint256"},
        ],
    },
    {"type": "function", "name": "transfer", "inputs": [], "outputs": [], "stateMutability": "nonpayable"},
]
POOL_ABI: list[dict[str, Any]] = [
    {"type": "error", "name": "UnitNotOpen", "inputs": [{"name": "unitId", "type": "uint256"}]},
    {"type": "error", "name": "Paused", "inputs": []},
    {
        "type": "error",
        "name": "BadCommit",
        "inputs": [
            {
                "name": "commit",
                "type": "tuple",
                "components": [{"name": "root", "type": "bytes32"}, {"name": "step", "type": "uint64"}],
            },
            {"name": "voters", "type": "address[]"},
        ],
    },
]
ALICE = to_checksum_address("0x" + "ab" * 20)


def custom(signature: str, types: list[str], values: list[Any]) -> bytes:
    return keccak(text=signature)[:4] + encode(types, values)


@pytest.fixture
def decoder() -> ErrorDecoder:
    return ErrorDecoder([TOKEN_ABI, POOL_ABI])


def test_custom_error_is_named_with_its_args(decoder: ErrorDecoder) -> None:
    data = custom("ERC20InsufficientBalance(address,uint256,uint256)", ["address", "uint256", "uint256"],
                  [ALICE, 5, 7])
    revert = decoder.decode(data)
    assert revert.name == "ERC20InsufficientBalance"
    assert revert.error_args == {"sender": ALICE, "balance": 5, "needed": 7}
    assert "ERC20InsufficientBalance(sender=" in str(revert)


def test_hex_string_input_and_errors_without_args(decoder: ErrorDecoder) -> None:
    revert = decoder.decode("0x" + keccak(text="Paused()")[:4].hex())
    assert (revert.name, revert.error_args) == ("Paused", {})


def test_struct_and_array_args_decode(decoder: ErrorDecoder) -> None:
    root = b"\x11" * 32
    data = custom("BadCommit((bytes32,uint64),address[])", ["(bytes32,uint64)", "address[]"],
                  [(root, 9), [ALICE]])
    revert = decoder.decode(data)
    assert revert.name == "BadCommit"
    assert revert.error_args["commit"] == (root, 9)
    assert revert.error_args["voters"] == [ALICE]


def test_error_string_is_decoded(decoder: ErrorDecoder) -> None:
    revert = decoder.decode(bytes.fromhex("08c379a0") + encode(["string"], ["x must be positive"]))
    assert revert.name == "Error"
    assert revert.error_args == {"message": "x must be positive"}
    assert "x must be positive" in str(revert)


@pytest.mark.parametrize("code", sorted(PANIC_CODES))
def test_panic_names_the_code_meaning(decoder: ErrorDecoder, code: int) -> None:
    revert = decoder.decode(bytes.fromhex("4e487b71") + encode(["uint256"], [code]))
    assert revert.name == "Panic"
    assert revert.error_args == {"code": code, "meaning": PANIC_CODES[code]}
    assert PANIC_CODES[code] in str(revert)


def test_unknown_selector_keeps_the_raw_data(decoder: ErrorDecoder) -> None:
    revert = decoder.decode(bytes.fromhex("deadbeef") + encode(["uint256"], [1]))
    assert revert.name == "UnknownError"
    assert revert.error_args["selector"] == "0xdeadbeef"


def test_empty_data_is_a_bare_revert(decoder: ErrorDecoder) -> None:
    assert decoder.decode(b"").name == "Revert"
    assert decoder.decode("0x").name == "Revert"
    assert decoder.decode(None).name == "Revert"


def test_truncated_args_are_reported_not_raised(decoder: ErrorDecoder) -> None:
    data = keccak(text="UnitNotOpen(uint256)")[:4] + b"\x01\x02"
    assert decoder.decode(data).name == "MalformedRevert"


def test_same_error_in_two_abis_is_one_entry() -> None:
    decoder = ErrorDecoder([POOL_ABI, POOL_ABI, TOKEN_ABI])
    assert sorted(decoder.errors) == sorted(
        ["UnitNotOpen(uint256)", "Paused()", "BadCommit((bytes32,uint64),address[])",
         "ERC20InsufficientBalance(address,uint256,uint256)"]
    )


@given(unit_id=st.integers(min_value=0, max_value=2**256 - 1))
def test_uint_args_round_trip(unit_id: int) -> None:
    decoder = ErrorDecoder([POOL_ABI])
    revert = decoder.decode(custom("UnitNotOpen(uint256)", ["uint256"], [unit_id]))
    assert revert.error_args == {"unitId": unit_id}


@given(reason=st.text(max_size=200))
def test_error_strings_round_trip(reason: str) -> None:
    revert = ErrorDecoder().decode(bytes.fromhex("08c379a0") + encode(["string"], [reason]))
    assert revert.error_args == {"message": reason}


# --- the exception shapes web3 7 raises ----------------------------------------------------------

UNIT_NOT_OPEN = "0x" + custom("UnitNotOpen(uint256)", ["uint256"], [42]).hex()
REASON = "0x08c379a0" + encode(["string"], ["nope"]).hex()
PANIC_DIV = "0x4e487b71" + encode(["uint256"], [0x12]).hex()
GANACHE_STYLE: Any = {"0xabc": {"error": "revert", "return": UNIT_NOT_OPEN}}


@pytest.mark.parametrize(
    ("exc", "name"),
    [
        (ContractCustomError(UNIT_NOT_OPEN, data=UNIT_NOT_OPEN), "UnitNotOpen"),
        (ContractLogicError("execution reverted: nope", data=REASON), "Error"),
        (ContractPanicError("Panic error 0x12", data=PANIC_DIV), "Panic"),
        (ContractLogicError("reverted", data={"message": "x", "data": UNIT_NOT_OPEN}), "UnitNotOpen"),
        (ContractLogicError("x", data=GANACHE_STYLE), "UnitNotOpen"),
        (ContractLogicError("x", data="Reverted " + UNIT_NOT_OPEN), "UnitNotOpen"),
        (
            Web3RPCError("execution reverted", rpc_response={
                "jsonrpc": "2.0", "id": 1, "error": {"code": 3, "message": "reverted", "data": REASON},
            }),
            "Error",
        ),
        (ContractLogicError("execution reverted", data=None), "Revert"),
    ],
)
def test_revert_data_is_dug_out_of_web3_exceptions(decoder: ErrorDecoder, exc: Exception, name: str) -> None:
    revert = decoder.from_exception(exc)
    assert revert is not None
    assert revert.name == name


def test_non_revert_errors_are_not_mistaken_for_reverts(decoder: ErrorDecoder) -> None:
    rejected = Web3RPCError("nonce too low", rpc_response={
        "jsonrpc": "2.0", "id": 1, "error": {"code": -32003, "message": "nonce too low"},
    })
    assert revert_data(rejected) is None
    assert decoder.from_exception(ConnectionError("refused")) is None


def test_an_already_decoded_revert_passes_through(decoder: ErrorDecoder) -> None:
    original = ContractRevert("Paused", {})
    assert decoder.from_exception(original) is original
