"""GensynToken: owner-only faucet mint and EIP-2612 permits signed with eth-account."""

from __future__ import annotations

from typing import Any

from eth_account import Account
from eth_account.messages import encode_typed_data

from tests.contracts.helpers import E18, Protocol
from tests.contracts.test_registry import expect


def _permit_sig(p: Protocol, signer: Any, owner: str, spender: str, value: int, nonce: int, deadline: int) -> Any:
    _, name, version, chain_id, verifying, _, _ = p.token.functions.eip712Domain().call()
    typed = {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "Permit": [
                {"name": "owner", "type": "address"},
                {"name": "spender", "type": "address"},
                {"name": "value", "type": "uint256"},
                {"name": "nonce", "type": "uint256"},
                {"name": "deadline", "type": "uint256"},
            ],
        },
        "primaryType": "Permit",
        "domain": {"name": name, "version": version, "chainId": chain_id, "verifyingContract": verifying},
        "message": {"owner": owner, "spender": spender, "value": value, "nonce": nonce, "deadline": deadline},
    }
    return Account.sign_message(encode_typed_data(full_message=typed), signer.key)


def _now(p: Protocol) -> int:
    return int(p.w3.eth.get_block("latest")["timestamp"])


def test_mint_is_owner_only(proto: Protocol) -> None:
    p, other = proto, proto.accounts[9]
    err = expect(p, "OwnableUnauthorizedAccount", other, p.token.functions.mint(other.address, E18))
    assert err.error_args["account"] == other.address
    supply = p.token.functions.totalSupply().call()
    p.tx(p.deployer, p.token.functions.mint(other.address, E18))
    assert p.token.functions.totalSupply().call() == supply + E18
    assert p.token.functions.owner().call() == p.deployer.address


def test_valid_permit_sets_allowance_and_bumps_nonce(proto: Protocol) -> None:
    p = proto
    owner = Account.create()
    spender, relayer = p.accounts[9], p.accounts[8]
    deadline = _now(p) + 3600
    sig = _permit_sig(p, owner, owner.address, spender.address, 123 * E18, 0, deadline)
    assert p.token.functions.nonces(owner.address).call() == 0
    p.tx(
        relayer,
        p.token.functions.permit(
            owner.address,
            spender.address,
            123 * E18,
            deadline,
            sig.v,
            sig.r.to_bytes(32, "big"),
            sig.s.to_bytes(32, "big"),
        ),
    )
    assert p.token.functions.allowance(owner.address, spender.address).call() == 123 * E18
    assert p.token.functions.nonces(owner.address).call() == 1
    # replaying the same signature: the nonce moved, so it recovers another signer
    err = expect(
        p,
        "ERC2612InvalidSigner",
        relayer,
        p.token.functions.permit(
            owner.address,
            spender.address,
            123 * E18,
            deadline,
            sig.v,
            sig.r.to_bytes(32, "big"),
            sig.s.to_bytes(32, "big"),
        ),
    )
    assert err.error_args["owner"] == owner.address


def test_expired_permit_reverts(proto: Protocol) -> None:
    p = proto
    owner, spender = Account.create(), p.accounts[9]
    deadline = _now(p) - 1
    sig = _permit_sig(p, owner, owner.address, spender.address, E18, 0, deadline)
    err = expect(
        p,
        "ERC2612ExpiredSignature",
        p.accounts[8],
        p.token.functions.permit(
            owner.address, spender.address, E18, deadline, sig.v, sig.r.to_bytes(32, "big"), sig.s.to_bytes(32, "big")
        ),
    )
    assert err.error_args["deadline"] == deadline
    assert p.token.functions.allowance(owner.address, spender.address).call() == 0


def test_permit_signed_by_someone_else_reverts(proto: Protocol) -> None:
    p = proto
    owner, intruder, spender = Account.create(), Account.create(), p.accounts[9]
    deadline = _now(p) + 3600
    sig = _permit_sig(p, intruder, owner.address, spender.address, E18, 0, deadline)
    err = expect(
        p,
        "ERC2612InvalidSigner",
        p.accounts[8],
        p.token.functions.permit(
            owner.address, spender.address, E18, deadline, sig.v, sig.r.to_bytes(32, "big"), sig.s.to_bytes(32, "big")
        ),
    )
    assert err.error_args["signer"] == intruder.address
    assert err.error_args["owner"] == owner.address
    # a tampered value with the owner's own signature also recovers a different signer
    good = _permit_sig(p, owner, owner.address, spender.address, E18, 0, deadline)
    expect(
        p,
        "ERC2612InvalidSigner",
        p.accounts[8],
        p.token.functions.permit(
            owner.address,
            spender.address,
            2 * E18,
            deadline,
            good.v,
            good.r.to_bytes(32, "big"),
            good.s.to_bytes(32, "big"),
        ),
    )
    assert p.token.functions.allowance(owner.address, spender.address).call() == 0
