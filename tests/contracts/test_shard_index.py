"""The contract's shard permutation (ShardIndex through its harness) equals the Python one, bit for bit, and so
does the example a batch position reads (ShardIndex after BatchIndex) equal the trainer's batch.

Random seeds over the uint63 range, dataset sizes from 1 to the largest a spec admits (10,000,000), shard counts
up to 128; static calls to pure functions, so no money moves and there is nothing to conserve.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from web3 import Web3

from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.train.batch_sampler import position
from gensyn_py.train.data import batch_indices, shard_indices
from gensyn_py.train.shard_permutation import member

CASES = 300


@pytest.fixture(scope="module")
def harness(w3: Web3, accounts: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    art = artifacts["ShardIndexHarness"]
    acct = accounts[0]
    factory = w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
    nonce = w3.eth.get_transaction_count(acct.address, "pending")
    tx = factory.constructor().build_transaction({"from": acct.address, "nonce": nonce})
    tx_hash = w3.eth.send_raw_transaction(acct.sign_transaction(tx).raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash)
    assert receipt.status == 1
    return w3.eth.contract(address=receipt.contractAddress, abi=art["abi"])


def test_contract_members_equal_python_for_random_parameters(harness: Any) -> None:
    rng = np.random.Generator(np.random.PCG64(21))
    rows = []
    for k in range(CASES):
        n = [1, 2, 3, 5, 1437, 10_000_000][k % 6] if k < 12 else int(rng.integers(1, 10_000_001))
        shards = int(rng.integers(1, min(n, 128) + 1))
        shard = int(rng.integers(0, shards))
        size = n // shards + (1 if shard < n % shards else 0)
        rows.append([int(rng.integers(0, 2**63)), n, shards, shard, int(rng.integers(0, size))])
    rows.append([2**63 - 1, 10_000_000, 128, 127, 78_124])
    expected = [member(n, shards, shard, seed, j) for seed, n, shards, shard, j in rows]
    got = harness.functions.members(*[list(col) for col in zip(*rows, strict=True)]).call()
    assert got == expected


def test_the_example_a_batch_position_reads_is_the_trainers(harness: Any) -> None:
    seed, n, shards, round_, shard, step, batch = 77, 1437, 3, 1, 2, 40, 32
    rows = shard_indices(n, shards, shard, seed)
    trainer = batch_indices(rows, batch, seed, round_, shard, step).tolist()
    onchain = [harness.functions.exampleAt(seed, n, shards, round_, shard, step, i).call() for i in range(batch)]
    assert onchain == trainer


def test_out_of_range_inputs_revert_with_named_errors(harness: Any, artifacts: dict[str, dict[str, Any]]) -> None:
    errors = ErrorDecoder([artifacts["ShardIndexHarness"]["abi"]])
    for args, name in (
        (([1], [10], [4], [4], [0]), "ShardOutOfRange"),
        (([1], [10], [4], [3], [2]), "MemberOutOfRange"),
        (([1], [2**62], [1], [0], [0]), "BadDatasetSize"),
    ):
        try:
            harness.functions.members(*args).call()
        except Exception as exc:  # web3 raises one of several types; the decoder digs the data out of any
            err = errors.from_exception(exc)
            assert err is not None and err.name == name, exc
        else:
            raise AssertionError(f"{args} was accepted")


def test_gas_of_the_example_a_position_reads(harness: Any) -> None:
    used, example = harness.functions.gasOfExampleAt(5, 10_000_000, 4, 0, 1, 9, 3).call()
    assert example == member(10_000_000, 4, 1, 5, position(5, 0, 1, 9, 3, 2_500_000))  # scalar forms: no 2.5M shard
    print(f"ShardIndex.member after BatchIndex.example: {used} gas")
    assert used < 60_000
