"""Shared helpers for contract tests: a protocol handle, time travel, committed work in the
on-chain format (built with gensyn_py.proof), and the money-conservation check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eth_abi import encode
from eth_account.signers.local import LocalAccount
from eth_utils import keccak
from web3 import Web3
from web3.logs import DISCARD

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.crypto.merkle import merkle_proof, merkle_root
from gensyn_py.devnet.deploy import deploy_protocol
from gensyn_py.errors import ContractRevert, TransactionError
from gensyn_py.proof.commitment import segment_leaf, transcript_commit
from gensyn_py.proof.sampler import segment_for

E18 = 10**18
SOLVER, VALIDATOR, CHALLENGER = 1, 2, 4
# UnitStatus
OPEN, ASSIGNED, COMMITTED, VERIFIED, DISPUTED, FINAL, CANCELLED = 1, 2, 3, 4, 5, 6, 7
GAS = 5_000_000
__all__ = ["transcript_commit"]  # re-exported: tests build reveals with it


def deploy_artifact(w3: Web3, account: LocalAccount, artifact: dict[str, Any], *args: Any) -> Any:
    """Deploy a compiled contract (a test harness, or a contract the protocol does not deploy yet) with its
    constructor arguments `args`; its bound web3 contract."""
    factory = w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
    tx = factory.constructor(*args).build_transaction(
        {"from": account.address, "nonce": w3.eth.get_transaction_count(account.address, "pending")})
    tx_hash = w3.eth.send_raw_transaction(account.sign_transaction(tx).raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash)
    assert receipt["status"] == 1
    return w3.eth.contract(address=receipt["contractAddress"], abi=artifact["abi"])


def protocol_errors(artifacts: dict[str, dict[str, Any]]) -> ErrorDecoder:
    """One decoder over every compiled ABI, as the chain layer uses."""
    return ErrorDecoder(a["abi"] for a in artifacts.values())


@dataclass
class Work:
    """A solver's committed work: per-segment (start, end, transcriptHash)."""

    segments: list[tuple[bytes, bytes, bytes]]

    @classmethod
    def honest(cls, n: int, tag: bytes = b"honest") -> Work:
        states = [keccak(tag + b"state" + bytes([i])) for i in range(n + 1)]
        return cls([(states[i], states[i + 1], keccak(tag + b"transcript" + bytes([i]))) for i in range(n)])

    def leaves(self) -> list[bytes]:
        return [segment_leaf(j, s, e, transcript_commit(t)) for j, (s, e, t) in enumerate(self.segments)]

    @property
    def root(self) -> bytes:
        return merkle_root(self.leaves())

    def proof(self, j: int) -> list[bytes]:
        return merkle_proof(self.leaves(), j)

    @property
    def final_hash(self) -> bytes:
        return self.segments[-1][1]


class Protocol:
    """Deployed contracts plus helpers to transact, expect reverts and check conservation."""

    def __init__(
        self, w3: Web3, accounts: list[LocalAccount], artifacts: dict[str, dict[str, Any]], params: dict | None = None
    ):
        self.w3 = w3
        self.accounts = accounts
        self.artifacts = artifacts
        self.deployer = accounts[0]
        # The pool hands repro units of jobs with a step table to the game (the devnet's default keeps the committee).
        self.info = deploy_protocol(w3, self.deployer, artifacts, {"disputeGame": 1, **(params or {})})
        self.params = self.info["params"]
        self.errors = protocol_errors(artifacts)
        c = self.info["contracts"]
        self.token = self._c("GensynToken", c["GensynToken"])
        self.registry = self._c("NodeRegistry", c["NodeRegistry"])
        self.pool = self._c("TaskPool", c["TaskPool"])
        self.committee = self._c("DisputeCommittee", c["DisputeCommittee"])
        self.game = self._c("SegmentGame", c["SegmentGame"])
        self.step_game = self._c("StepGame", c["StepGame"])
        self.gas_used = 0

    def _c(self, name: str, address: str) -> Any:
        return self.w3.eth.contract(address=Web3.to_checksum_address(address), abi=self.artifacts[name]["abi"])

    # -- transactions
    def tx(self, acct: LocalAccount, fn: Any) -> Any:
        """Static call first (revert -> ContractRevert), then send and check the receipt."""
        tx = fn.build_transaction(
            {
                "from": acct.address,
                "gas": GAS,
                "nonce": self.w3.eth.get_transaction_count(acct.address),
                "maxFeePerGas": 10**11,
                "maxPriorityFeePerGas": 1,
            }
        )
        call = {"from": acct.address, "to": tx["to"], "data": tx["data"], "gas": hex(GAS)}
        res = self.w3.provider.make_request("eth_call", [call, "latest"])  # type: ignore[arg-type]
        if "error" in res:
            data = res["error"].get("data")
            if isinstance(data, dict):
                data = data.get("data")
            if not data:
                raise ContractRevert("Unknown", {"message": res["error"].get("message")})
            raise self.errors.decode(data)
        signed = acct.sign_transaction(tx)
        receipt = self.w3.eth.wait_for_transaction_receipt(self.w3.eth.send_raw_transaction(signed.raw_transaction))
        if receipt["status"] != 1:
            raise TransactionError("mined but failed")
        self.gas_used += receipt["gasUsed"]
        return receipt

    def events(self, receipt: Any, contract: Any, name: str) -> list[Any]:
        return list(getattr(contract.events, name)().process_receipt(receipt, errors=DISCARD))

    # -- chain control
    def advance(self, seconds: int) -> None:
        self.w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
        self.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    def mine(self, n: int = 1) -> None:
        for _ in range(n):
            self.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]

    # -- setup
    def standard_cast(self) -> None:
        """The usual actors: requester 1 funded; solver 2; validators 3-7; challenger 8 (9 stays a keeper)."""
        a = self.accounts
        self.node(a[2], SOLVER)
        for v in a[3:8]:
            self.node(v, VALIDATOR)
        self.node(a[8], CHALLENGER)
        self.fund(a[1], 100_000 * E18)

    def fund(self, acct: LocalAccount, amount: int) -> None:
        self.tx(self.deployer, self.token.functions.mint(acct.address, amount))
        for spender in (self.registry, self.pool):
            self.tx(acct, self.token.functions.approve(spender.address, 2**256 - 1))

    def node(
        self,
        acct: LocalAccount,
        roles: int,
        stake: int = 1000 * E18,
        device: int = 1,
        mem: int = 16000,
        throughput: int = 100,
        price: int = 100 * E18,
    ) -> None:
        self.fund(acct, stake + 1000 * E18)
        self.tx(acct, self.registry.functions.register(roles, (device, mem, throughput, price)))
        self.tx(acct, self.registry.functions.stake(stake))

    def job_params(self, **kw: Any) -> tuple:
        p = {
            "specHash": keccak(b"spec"),
            "specCid": "bafyspec",
            "rounds": 1,
            "shards": 1,
            "stepsPerUnit": 8,
            "checkpointInterval": 2,
            "deviceClass": 1,
            "minMemoryMb": 8000,
            "minThroughput": 50,
            "maxPricePerUnit": 200 * E18,
            "collateralPerUnit": 300 * E18,
            "commitWindow": 60,
            "verification": 0,
            "stepsRoot": bytes(32),
        }
        p.update(kw)
        return tuple(p.values())

    def submit(self, requester: LocalAccount, **kw: Any) -> int:
        rc = self.tx(requester, self.pool.functions.submitJob(self.job_params(**kw)))
        return int(self.events(rc, self.pool, "JobSubmitted")[0]["args"]["jobId"])

    def unit(self, unit_id: int) -> dict[str, Any]:
        u = self.pool.functions.getUnit(unit_id).call()
        keys = [
            "jobId",
            "round",
            "shard",
            "status",
            "solver",
            "price",
            "openedAt",
            "deadline",
            "seedBlock",
            "commitDeadline",
            "revealDeadline",
            "drawn",
            "committed",
            "revealed",
            "checkpointRoot",
            "seed",
            "opener",
            "challenger",
            "disputeId",
            "validators",
        ]
        return dict(zip(keys, u, strict=True))

    def segment_of(self, unit_id: int, slot: int) -> int:
        u = self.unit(unit_id)
        n = self.pool.functions.numSegments(unit_id).call()
        return segment_for(u["seed"], slot, n, len(u["validators"]))

    def verdict_hash(self, unit_id: int, validator: str, accept: bool, transcript: bytes, salt: bytes) -> bytes:
        return keccak(
            encode(["uint256", "address", "bool", "bytes32", "bytes32"], [unit_id, validator, accept, transcript, salt])
        )

    def vote_hash(self, dispute_id: int, member: str, solver_honest: bool, salt: bytes) -> bytes:
        return keccak(encode(["uint256", "address", "bool", "bytes32"], [dispute_id, member, solver_honest, salt]))

    def dispute(self, dispute_id: int) -> dict[str, Any]:
        d = self.committee.functions.getDispute(dispute_id).call()
        keys = [
            "unitId",
            "solver",
            "opener",
            "deviceClass",
            "round",
            "drawn",
            "resolved",
            "candidates",
            "openBlock",
            "seedBlock",
            "commitDeadline",
            "deadline",
            "roundFirst",
            "committed",
            "revealed",
            "yesWeight",
            "noWeight",
            "seatedWeight",
            "replayClass",
            "members",
        ]
        return dict(zip(keys, d, strict=True))

    def now(self) -> int:
        return int(self.w3.eth.get_block("latest")["timestamp"])

    def by_address(self, addr: str) -> LocalAccount:
        return next(a for a in self.accounts if a.address == addr)

    # -- invariant
    def check_conservation(self) -> None:
        bal = self.token.functions.balanceOf
        pool_bal = bal(self.pool.address).call()
        reg_bal = bal(self.registry.address).call()
        com_bal = bal(self.committee.address).call()
        escrow = self.pool.functions.totalEscrow().call()
        bonds = self.pool.functions.totalBonds().call()
        credit = self.pool.functions.totalCredit().call()
        staked = self.registry.functions.totalStaked().call()
        assert pool_bal + reg_bal + com_bal == escrow + bonds + credit + staked
        assert pool_bal == escrow + bonds + credit
        assert reg_bal == staked
